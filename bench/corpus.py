"""Seeded generator of the sitemap benchmark corpus.

Everything is generated at bench time (never committed) into an output
directory, with the real base URL substituted for the ``{base}`` placeholder,
because the loopback server's port is only known at run time.

Two kinds of output, each cached by a ``manifest.json`` keyed on its
parameters (seed, base, size):

* ``files``: the standalone documents of the parser micro-benchmark

  - ``urlset-50k.xml``      50,000 realistic URLs (~15 MB)
  - ``urlset-50k.xml.gz``   the same, gzipped
  - ``urlset-50mb.xml``     a worst-case urlset of exactly 52,428,800 bytes
  - ``urlset-heavy.xml``    a shop's and a publisher's shape: 49,500 entries with long
                            URLs, several ``image:image`` each (titles, captions), news,
                            alternates and a few videos, padded to exactly 52,428,800 bytes
  - ``text-50k.txt``        a 50,000-line text sitemap

* ``site``: a whole website for the end-to-end discovery benchmark

  - ``robots.txt``          declaring ``Sitemap: {base}/sitemap_index.xml``
  - ``sitemap_index.xml``   listing the gzipped children, distinct lastmods
  - ``sitemaps/part-NN.xml.gz``  50,000-URL urlsets (the last may be smaller)

Usage (standalone)::

    python bench/corpus.py --out bench/out/corpus --base http://127.0.0.1:8000 \
        [--seed 42] [--site-urls 1000000] [--no-files] [--no-site]

URLs are unique across the whole corpus (each carries a distinct numeric id),
so URL counts are exact whatever deduplication a parser does.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor

GENERATOR_VERSION = 4  # bump to invalidate caches when the output changes

URLS_PER_CHILD = 50_000
WORST_CASE_SIZE = 52_428_800  # 50 MiB, the sitemaps.org limit (uncompressed)

NS_HEADER = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"\n'
    '        xmlns:xhtml="http://www.w3.org/1999/xhtml"\n'
    '        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"\n'
    '        xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">\n'
)
HEAVY_HEADER = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"\n'
    '        xmlns:xhtml="http://www.w3.org/1999/xhtml"\n'
    '        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"\n'
    '        xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"\n'
    '        xmlns:video="http://www.google.com/schemas/sitemap-video/1.1">\n'
)
URLSET_FOOTER = "</urlset>\n"

SECTIONS = [
    "blog",
    "news",
    "products",
    "category/shoes",
    "category/electronics",
    "category/home-garden",
    "docs",
    "help/articles",
    "events",
    "recipes",
    "travel/guides",
    "jobs",
    "stories",
    "reviews",
    "shop/sale",
    "magazine/2023",
    "magazine/2024",
    "support/kb",
    "learn",
    "community/threads",
]
WORDS = (  # noqa: SIM905 - a paragraph reads better than a list of 100 strings
    "best guide how to make easy quick review top new cheap free online home "
    "garden kitchen summer winter spring autumn travel city beach mountain "
    "running shoes laptop phone camera coffee tea recipe chicken pasta salad "
    "vegan healthy budget family kids dog cat car bike electric solar energy "
    "green tips tricks ideas ultimate complete beginner advanced python data "
    "music movie book series history science space ocean forest river lake "
    "wedding party birthday gift holiday sale deal black friday cyber monday "
    "review unboxing comparison versus alternative setup install update fix"
).split()
CHANGEFREQS = ["always", "hourly", "daily", "weekly", "monthly", "yearly", "never"]
PRIORITIES = ["0.1", "0.3", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0"]
LANGS = ["en", "de", "fr", "es", "it", "ja", "pt-br", "x-default"]
OFFSETS = ["+00:00", "+01:00", "+02:00", "-05:00", "-08:00", "+05:30", "+09:00"]


def _rng(seed: int, name: str) -> random.Random:
    # str seeds are hashed with sha512 by random.Random: deterministic across
    # processes and runs (unlike hash()).
    return random.Random(f"{seed}:{name}")


def _lastmod(r: random.Random) -> str:
    y = r.randint(2015, 2025)
    mo = r.randint(1, 12)
    d = r.randint(1, 28)
    kind = r.random()
    if kind < 0.40:
        return f"{y:04d}-{mo:02d}-{d:02d}"
    hh, mm, ss = r.randint(0, 23), r.randint(0, 59), r.randint(0, 59)
    if kind < 0.70:
        return f"{y:04d}-{mo:02d}-{d:02d}T{hh:02d}:{mm:02d}:{ss:02d}{r.choice(OFFSETS)}"
    if kind < 0.85:
        return f"{y:04d}-{mo:02d}-{d:02d}T{hh:02d}:{mm:02d}:{ss:02d}Z"
    frac = str(r.randint(0, 999999)).zfill(6)[: r.choice((1, 3, 6))]
    return f"{y:04d}-{mo:02d}-{d:02d}T{hh:02d}:{mm:02d}:{ss:02d}.{frac}{r.choice(OFFSETS)}"


def _slug(r: random.Random, lo: int = 4, hi: int = 13) -> str:
    return "-".join(r.choices(WORDS, k=r.randint(lo, hi)))


def _entry(r: random.Random, base: str, uid: int) -> tuple[str, str]:
    """One realistic <url> entry; returns (xml, plain loc)."""
    section = r.choice(SECTIONS)
    slug = _slug(r)
    path = f"/{section}/{slug}-{uid}.html"
    if r.random() < 0.03:
        raw_loc = f"{base}{path}?ref=sitemap&page={r.randint(2, 9)}"
        loc = raw_loc.replace("&", "&amp;")
    else:
        raw_loc = loc = base + path
    parts = ["  <url>\n    <loc>", loc, "</loc>\n"]
    if r.random() < 0.90:
        parts += ["    <lastmod>", _lastmod(r), "</lastmod>\n"]
    if r.random() < 0.45:
        parts += ["    <changefreq>", r.choice(CHANGEFREQS), "</changefreq>\n"]
    if r.random() < 0.45:
        parts += ["    <priority>", r.choice(PRIORITIES), "</priority>\n"]
    x = r.random()
    if x < 0.10:  # hreflang alternates
        for lang in r.sample(LANGS, r.randint(2, 3)):
            parts.append(
                f'    <xhtml:link rel="alternate" hreflang="{lang}" href="{base}/{lang}{path}"/>\n'
            )
    elif x < 0.20:  # images
        for k in range(r.randint(1, 3)):
            year, month = r.randint(2015, 2025), r.randint(1, 12)
            img = f"{base}/media/uploads/{year}/{month:02d}/{slug}-{uid}-{k}.jpg"
            parts.append(f"    <image:image>\n      <image:loc>{img}</image:loc>\n")
            if r.random() < 0.7:
                parts.append(
                    f"      <image:title>{_slug(r, 2, 4).replace('-', ' ')}</image:title>\n"
                )
            parts.append("    </image:image>\n")
    elif x < 0.205:  # a few Google News entries
        parts.append(
            "    <news:news>\n      <news:publication>\n"
            "        <news:name>Example Times</news:name>\n"
            f"        <news:language>{r.choice(('en', 'de', 'fr'))}</news:language>\n"
            "      </news:publication>\n"
            f"      <news:publication_date>{_lastmod(r)}</news:publication_date>\n"
            f"      <news:title>{_slug(r, 3, 8).replace('-', ' ').title()}</news:title>\n"
            "    </news:news>\n"
        )
    parts.append("  </url>\n")
    return "".join(parts), raw_loc


def urlset_xml(seed: int, name: str, base: str, first_id: int, n: int) -> str:
    r = _rng(seed, name)
    out = [NS_HEADER]
    out.extend(_entry(r, base, uid)[0] for uid in range(first_id, first_id + n))
    out.append(URLSET_FOOTER)
    return "".join(out)


def text_sitemap(seed: int, name: str, base: str, first_id: int, n: int) -> str:
    r = _rng(seed, name)
    return "".join(_entry(r, base, uid)[1] + "\n" for uid in range(first_id, first_id + n))


def worst_case_urlset(
    seed: int, base: str, first_id: int, size: int = WORST_CASE_SIZE
) -> tuple[bytes, int]:
    """Exactly ``size`` bytes: long locs (up to ~2,000 chars, the protocol's
    2,048 limit), every optional field, lots of indentation; padded with
    whitespace at the end to the exact byte count."""
    r = _rng(seed, "worst-case")
    head = NS_HEADER.encode()
    foot = URLSET_FOOTER.encode()
    budget = size - len(head) - len(foot)
    chunks: list[bytes] = []
    used = 0
    uid = first_id
    n = 0
    while True:
        section = r.choice(SECTIONS)
        target = r.randint(200, 1990)
        slug = _slug(r, 3, 6)
        while len(slug) < target - len(base) - 40:
            slug += "-" + _slug(r, 6, 12)
        loc = f"{base}/{section}/{slug[: max(8, target - len(base) - 40)]}-{uid}.html"
        e = (
            f"        <url>\n            <loc>\n                {loc}\n            </loc>\n"
            f"            <lastmod>{_lastmod(r)}</lastmod>\n"
            f"            <changefreq>{r.choice(CHANGEFREQS)}</changefreq>\n"
            f"            <priority>{r.choice(PRIORITIES)}</priority>\n"
            f"        </url>\n"
        ).encode()
        if used + len(e) > budget:
            break
        chunks.append(e)
        used += len(e)
        uid += 1
        n += 1
    pad_len = budget - used
    pad = (b" " * 79 + b"\n") * (pad_len // 80) + b" " * (pad_len % 80)
    data = head + b"".join(chunks) + pad + foot
    assert len(data) == size, len(data)
    return data, n


HEAVY_URLS = 49_500
#: Words of captions and titles that are not ASCII, as real shops and publishers write them.
ACCENTED = ["café", "crème", "brûlée", "Müller", "naïve", "São", "Zürich", "déjà", "—", "½"]
PUBLICATIONS = [("The Example Times", "en"), ("Le Quotidien", "fr"), ("Die Zeitung", "de")]


def _words(r: random.Random, lo: int, hi: int, accented: float = 0.0, case: str = "") -> str:
    """Words of a title (``case="title"``) or a sentence (``"sentence"``), some accented,
    one in ten with an escaped "&"."""
    words = r.choices(WORDS, k=r.randint(lo, hi))
    if accented and r.random() < accented:
        words[r.randrange(len(words))] = r.choice(ACCENTED)
    if case == "title":
        words = [w.capitalize() for w in words]
    elif case == "sentence":
        words[0] = words[0].capitalize()
    if r.random() < 0.1:
        words.insert(r.randrange(1, len(words) + 1), "&amp;")
    return " ".join(words)


def _image(r: random.Random, slug: str, uid: int, k: int, caption_first: bool) -> str:
    shop = r.randint(1000, 9999)
    loc = (
        f"https://cdn.example-shop.com/s/files/1/{shop:04d}/{r.randint(1000, 9999):04d}/"
        f"products/{slug[:60]}-{uid}-{k}.jpg?v={r.randint(1_600_000_000, 1_740_000_000)}"
    )
    title = f"      <image:title>{_words(r, 3, 8, 0.2, 'title')}</image:title>\n"
    caption = f"      <image:caption>{_words(r, 6, 16, 0.4, 'sentence')}.</image:caption>\n"
    fields = caption + title if caption_first else title + caption
    return f"    <image:image>\n      <image:loc>{loc}</image:loc>\n{fields}    </image:image>\n"


def _heavy_entry(r: random.Random, base: str, uid: int, lean: bool) -> str:
    """One entry of a shop (images with titles and captions, some alternates), a
    publisher (news, images) or a video page, with long URLs."""
    kind = r.random()
    slug = _slug(r, 6, 14)
    lastmod = f"    <lastmod>{_lastmod(r)}</lastmod>\n"
    if kind < 0.65:  # a shop's product
        query = f"?variant={r.randint(10**11, 10**12 - 1)}"
        if r.random() < 0.2:
            query += "&amp;utm_source=sitemap&amp;utm_medium=feed"
        path = f"/products/{slug}-{uid}"
        parts = [f"  <url>\n    <loc>{base}{path}{query}</loc>\n", lastmod]
        parts.append("    <changefreq>daily</changefreq>\n")
        if r.random() < 0.3:
            link = '    <xhtml:link rel="alternate" hreflang="{0}" href="{1}/{0}{2}"/>\n'
            parts += [link.format(lang, base, path) for lang in r.sample(LANGS, r.randint(3, 5))]
        n_images = 1 if lean else r.randint(1, 3)
        parts += [_image(r, slug, uid, k, False) for k in range(n_images)]
    elif kind < 0.95:  # a publisher's article
        y, mo, d = r.randint(2015, 2025), r.randint(1, 12), r.randint(1, 28)
        section = r.choice(SECTIONS)
        name, lang = r.choice(PUBLICATIONS)
        parts = [
            f"  <url>\n    <loc>{base}/{y}/{mo:02d}/{d:02d}/{section}/{slug}-{uid}.html</loc>\n",
            lastmod,
            "    <news:news>\n      <news:publication>\n"
            f"        <news:name>{name}</news:name>\n"
            f"        <news:language>{lang}</news:language>\n"
            "      </news:publication>\n"
            f"      <news:publication_date>{_lastmod(r)}</news:publication_date>\n"
            f"      <news:title>{_words(r, 6, 14, 0.3, 'sentence')}</news:title>\n",
        ]
        if r.random() < 0.5:
            keywords = ", ".join(r.sample(WORDS, r.randint(2, 6)))
            parts.append(f"      <news:keywords>{keywords}</news:keywords>\n")
        parts.append("    </news:news>\n")
        n_images = 1 if lean else r.randint(1, 2)
        parts += [_image(r, slug, uid, k, True) for k in range(n_images)]
    else:  # a video page
        video = f"https://videos.example-media.com/{uid}/{slug[:60]}"
        parts = [
            f"  <url>\n    <loc>{base}/videos/{slug}-{uid}</loc>\n",
            lastmod,
            "    <video:video>\n"
            f"      <video:thumbnail_loc>{video}/thumb.jpg</video:thumbnail_loc>\n"
            f"      <video:title>{_words(r, 4, 10, 0.2, 'title')}</video:title>\n"
            "      <video:description>"
            f"{_words(r, 15, 40, 0.4, 'sentence')}.</video:description>\n"
            f"      <video:content_loc>{video}/video.mp4</video:content_loc>\n"
            f"      <video:player_loc>{video}/player</video:player_loc>\n"
            f"      <video:duration>{r.randint(30, 3600)}</video:duration>\n"
            f"      <video:publication_date>{_lastmod(r)}</video:publication_date>\n"
            "      <video:family_friendly>yes</video:family_friendly>\n",
        ]
        parts += [f"      <video:tag>{t}</video:tag>\n" for t in r.sample(WORDS, 2)]
        parts.append("    </video:video>\n")
    parts.append("  </url>\n")
    return "".join(parts)


def heavy_urlset(
    seed: int, base: str, first_id: int, n: int = HEAVY_URLS, size: int = WORST_CASE_SIZE
) -> bytes:
    """``n`` entries of ``_heavy_entry``, padded with white space at the end to exactly
    ``size`` bytes: an entry is lean (fewer images) whenever the file runs ahead of its
    share of ``size``."""
    r = _rng(seed, "heavy")
    head = HEAVY_HEADER.encode()
    foot = URLSET_FOOTER.encode()
    budget = size - len(head) - len(foot)
    share = (budget - 32 * 1024) / n
    chunks: list[bytes] = []
    used = 0
    for i in range(n):
        e = _heavy_entry(r, base, first_id + i, lean=used > i * share).encode()
        chunks.append(e)
        used += len(e)
    if used > budget:
        raise ValueError(f"{n} heavy entries take {used} bytes, more than {budget}")
    pad_len = budget - used
    pad = (b" " * 79 + b"\n") * (pad_len // 80) + b" " * (pad_len % 80)
    data = head + b"".join(chunks) + pad + foot
    assert len(data) == size, len(data)
    return data


def _write(path: str, data: bytes | str) -> None:
    if isinstance(data, str):
        data = data.encode()
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)


def _manifest_ok(d: str, key: dict) -> dict | None:
    try:
        with open(os.path.join(d, "manifest.json")) as f:
            m = json.load(f)
    except (OSError, ValueError):
        return None
    if m.get("key") != key:
        return None
    for rel in m.get("files", {}):
        if not os.path.exists(os.path.join(d, rel)):
            return None
    return m


def ensure_files(out: str, seed: int, base: str, log=print) -> dict:
    """Generate (or reuse) the micro-benchmark documents in ``out``."""
    key = {"kind": "files", "seed": seed, "base": base, "v": GENERATOR_VERSION}
    if m := _manifest_ok(out, key):
        log(f"corpus: reusing cached files in {out}")
        return m
    t0 = time.perf_counter()
    os.makedirs(out, exist_ok=True)
    files: dict[str, dict] = {}
    xml = urlset_xml(seed, "urlset-50k", base, 1, 50_000).encode()
    _write(os.path.join(out, "urlset-50k.xml"), xml)
    files["urlset-50k.xml"] = {"urls": 50_000, "bytes": len(xml), "uncompressed_bytes": len(xml)}
    gz = _gz(xml)
    _write(os.path.join(out, "urlset-50k.xml.gz"), gz)
    files["urlset-50k.xml.gz"] = {"urls": 50_000, "bytes": len(gz), "uncompressed_bytes": len(xml)}
    worst, n = worst_case_urlset(seed, base, 100_001)
    _write(os.path.join(out, "urlset-50mb.xml"), worst)
    files["urlset-50mb.xml"] = {"urls": n, "bytes": len(worst), "uncompressed_bytes": len(worst)}
    heavy = heavy_urlset(seed, base, 300_001)
    _write(os.path.join(out, "urlset-heavy.xml"), heavy)
    files["urlset-heavy.xml"] = {
        "urls": HEAVY_URLS,
        "bytes": len(heavy),
        "uncompressed_bytes": len(heavy),
    }
    txt = text_sitemap(seed, "text-50k", base, 200_001, 50_000).encode()
    _write(os.path.join(out, "text-50k.txt"), txt)
    files["text-50k.txt"] = {"urls": 50_000, "bytes": len(txt), "uncompressed_bytes": len(txt)}
    m = {"key": key, "files": files, "generation_s": round(time.perf_counter() - t0, 2)}
    _write(os.path.join(out, "manifest.json"), json.dumps(m, indent=1))
    log(f"corpus: generated files in {out} in {m['generation_s']} s")
    return m


def _child(args: tuple[int, str, int, int, int, str]) -> tuple[str, int, int]:
    seed, base, idx, first_id, n, path = args
    xml = urlset_xml(seed, f"site-part-{idx}", base, first_id, n).encode()
    gz = _gz(xml)
    _write(path, gz)
    return path, len(gz), len(xml)


def ensure_site(out: str, seed: int, base: str, n_urls: int, *, jobs: int = 2, log=print) -> dict:
    """Generate (or reuse) a site of ``n_urls`` URLs in ``out`` (its docroot)."""
    key = {"kind": "site", "seed": seed, "base": base, "urls": n_urls, "v": GENERATOR_VERSION}
    if m := _manifest_ok(out, key):
        log(f"corpus: reusing cached site ({n_urls:,} URLs) in {out}")
        return m
    t0 = time.perf_counter()
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(os.path.join(out, "sitemaps"))
    n_children = -(-n_urls // URLS_PER_CHILD)
    tasks = []
    first = 10_000_001
    for i in range(n_children):
        n = min(URLS_PER_CHILD, n_urls - i * URLS_PER_CHILD)
        path = os.path.join(out, "sitemaps", f"part-{i + 1:02d}.xml.gz")
        tasks.append((seed, base, i + 1, first, n, path))
        first += n
    files: dict[str, dict] = {}
    if jobs > 1 and n_children > 1:
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            results = list(ex.map(_child, tasks))
    else:
        results = [_child(t) for t in tasks]
    r = _rng(seed, "site-index")
    index = [
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
    ]
    day0 = 20_000  # days since epoch, ~2024-10; children get distinct lastmods
    for (path, gz_len, xml_len), t in zip(results, tasks, strict=True):
        rel = os.path.relpath(path, out)
        files[rel] = {"urls": t[4], "bytes": gz_len, "uncompressed_bytes": xml_len}
        ts = (day0 - 3 * t[2]) * 86400 + r.randint(0, 86399)
        lm = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(ts))
        index.append(
            f"  <sitemap>\n    <loc>{base}/{rel}</loc>\n    <lastmod>{lm}</lastmod>\n  </sitemap>\n"
        )
    index.append("</sitemapindex>\n")
    _write(os.path.join(out, "sitemap_index.xml"), "".join(index))
    files["sitemap_index.xml"] = {"urls": 0}
    robots = (
        "# benchmark site\nUser-agent: *\nDisallow: /private/\nAllow: /\n\n"
        f"Sitemap: {base}/sitemap_index.xml\n"
    )
    _write(os.path.join(out, "robots.txt"), robots)
    files["robots.txt"] = {"urls": 0}
    m = {
        "key": key,
        "files": files,
        "urls": n_urls,
        "children": n_children,
        "expected_requests": {
            "/robots.txt": 1,
            "/sitemap_index.xml": 1,
            **{f"/{os.path.relpath(t[5], out)}": 1 for t in tasks},
        },
        "generation_s": round(time.perf_counter() - t0, 2),
    }
    _write(os.path.join(out, "manifest.json"), json.dumps(m, indent=1))
    log(
        f"corpus: generated site ({n_urls:,} URLs, {n_children} children) in {out}"
        f" in {m['generation_s']} s"
    )
    return m


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--out", required=True, help="output directory (of the files)")
    p.add_argument("--site-out", default=None, help="docroot of the site (default: OUT/site)")
    p.add_argument(
        "--base", required=True, help="base URL substituted for {base}, e.g. http://127.0.0.1:8000"
    )
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--site-urls", type=int, default=1_000_000)
    p.add_argument("--no-files", action="store_true")
    p.add_argument("--no-site", action="store_true")
    a = p.parse_args(argv)
    base = a.base.rstrip("/")
    if not a.no_files:
        ensure_files(a.out, a.seed, base)
    if not a.no_site:
        ensure_site(a.site_out or os.path.join(a.out, "site"), a.seed, base, a.site_urls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
