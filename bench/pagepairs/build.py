"""Build the page-pair corpus from the mirrored deploy histories (read-only git).

Per site of bench/realweb/sites.json (main's, and wt-realweb's when it is on the machine):
the HTML files of every deploy (``git ls-tree`` under the site's root, minus its
``exclude`` folders and ``404.html``), the candidate pairs (a file at deploys k-1 and k whose
bytes differ), the seeded sampler (rules.Sampler), and for each kept pair its truth: the
source's where the deploy commit names a source commit the mirror holds and the page maps
to one source file that it visibly shows (rules.map_sources, rules.shows), else
bench/realweb/truth.py's fingerprint. Writes ``<cache>/pairs-<site>.json`` and the blobs.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.pagepairs import rules
from bench.realweb import truth as judge
from bench.realweb.corpus import SiteSpec, load_sites

REPO_ROOT = Path(__file__).resolve().parents[2]
MAIN_SITES = REPO_ROOT / "bench" / "realweb" / "sites.json"
EXTRA_SITES = Path("/work/wt-realweb/bench/realweb/sites.json")
#: Sites only this benchmark uses (histories too short or too small for bench/realweb).
OWN_SITES = Path(__file__).with_name("extra_sites.json")
MIRRORS = Path("/work/.mirror")
CACHE = REPO_ROOT / "bench" / "out" / "pagepairs-cache"
#: Pages per deploy the site-level template detector reads (seeded).
TEMPLATE_SAMPLE = 30
_SHA = re.compile(r"\b[0-9a-f]{7,40}\b")


def all_sites() -> list[tuple[SiteSpec, str]]:
    """(spec, the sites.json it came from); wt-realweb's entries win over main's."""
    found: dict[str, tuple[SiteSpec, str]] = {}
    for path in (MAIN_SITES, EXTRA_SITES, OWN_SITES):
        if path.is_file():
            for spec in load_sites(path):
                found[spec.name] = (spec, str(path))
    return list(found.values())


class Git:
    def __init__(self, git_dir: Path) -> None:
        self.dir = git_dir
        self._batch = subprocess.Popen(
            ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def run(self, *args: str) -> str:
        out = subprocess.run(
            ["git", "--git-dir", str(self.dir), *args], capture_output=True, check=False
        )
        return out.stdout.decode("utf-8", "surrogateescape")

    def read(self, name: str) -> bytes | None:
        assert self._batch.stdin
        assert self._batch.stdout
        self._batch.stdin.write(name.encode("utf-8", "surrogateescape") + b"\n")
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            if len(header) >= 3:
                self._batch.stdout.read(int(header[2]) + 1)
            return None
        data = self._batch.stdout.read(int(header[2]))
        self._batch.stdout.read(1)
        return data

    def close(self) -> None:
        if self._batch.stdin:
            self._batch.stdin.close()
        self._batch.wait()

    def html_files(self, commit: str, root: str, exclude: list[str]) -> dict[str, str]:
        out = self.run("ls-tree", "-r", "-z", commit, "--", root or ".")
        files = {}
        for entry in out.split("\0"):
            if not entry:
                continue
            meta, _, path = entry.partition("\t")
            parts = meta.split()
            if len(parts) < 3 or parts[1] != "blob":
                continue
            rel = path[len(root) :] if root and path.startswith(root) else path
            if not rel.endswith((".html", ".htm")) or rel in ("404.html", "404/index.html"):
                continue
            if any(rel.startswith(x) for x in exclude):
                continue
            files[rel] = parts[2]
        return files

    def source_commit(self, deploy: str) -> str | None:
        msg = self.run("log", "-1", "--format=%B", deploy)
        for sha in _SHA.findall(msg):
            full = self.run("rev-parse", "--verify", "-q", f"{sha}^{{commit}}").strip()
            if full and full != deploy:
                return full
        return None


def page_url(spec: SiteSpec, rel: str) -> str:
    if rel.endswith("index.html"):
        rel = rel[: -len("index.html")]
    return spec.base_url.rstrip("/") + "/" + rel


@dataclass
class SiteBuild:
    spec: SiteSpec
    source: str
    git: Git
    blobs: Path
    trees: list[dict[str, str]] = field(default_factory=list)
    sources: list[str | None] = field(default_factory=list)
    _fp: dict[str, str] = field(default_factory=dict)
    _maps: dict[str, dict[tuple[str, ...], str]] = field(default_factory=dict)

    def blob(self, sha: str) -> bytes:
        f = self.blobs / sha
        if f.is_file():
            return f.read_bytes()
        data = self.git.read(sha) or b""
        f.write_bytes(data)
        return data

    def html_judge(self, sha: str) -> str:
        if sha not in self._fp:
            self._fp[sha] = judge.fingerprint(self.blob(sha), self.spec.public_origins)
        return self._fp[sha]

    def mapping(self, src: str) -> dict[tuple[str, ...], str]:
        if src not in self._maps:
            names = self.git.run("ls-tree", "-r", "--name-only", "-z", src).split("\0")
            keys = sorted({rules.url_key(p) for t in self.trees for p in t})
            self._maps[src] = rules.map_sources(keys, [n for n in names if n])
        return self._maps[src]

    def source_truth(self, k: int, rel: str, sha_b: str) -> dict[str, Any] | None:
        s_a, s_b = self.sources[k - 1], self.sources[k]
        if s_a is None or s_b is None:
            return None
        file = self.mapping(s_b).get(rules.url_key(rel))
        if file is None:
            return None
        new = self.git.read(f"{s_b}:{file}")
        if new is None:
            return None
        text_b = new.decode("utf-8", "replace")
        page_words = rules.words(judge.main_content(self.blob(sha_b), [])[0])
        if not rules.shows(page_words, text_b):
            return None
        old = self.git.read(f"{s_a}:{file}") if s_a != s_b else new
        if old is None:
            return None  # the page came from another file before: no single source
        changed = s_a != s_b and rules.source_changed(old.decode("utf-8", "replace"), text_b)
        dates = self.git.run("log", "-1", "--format=%at %ct", s_b, "--", file).split()
        return {
            "changed": changed,
            "file": file,
            "source_commits": [s_a, s_b],
            "file_times": [int(x) for x in dates] if len(dates) == 2 else None,
        }


def build_site(spec: SiteSpec, source: str, cache: Path) -> dict[str, Any]:
    git_dir = MIRRORS / spec.repo.replace("/", "+") / "repo"
    if not git_dir.is_dir():
        return {"site": spec.name, "error": f"no mirror {git_dir}"}
    blobs = cache / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    sb = SiteBuild(spec, source, Git(git_dir), blobs)
    try:
        for d in spec.deploys:
            sb.trees.append(sb.git.html_files(d.commit, spec.root, spec.exclude))
            sb.sources.append(sb.git.source_commit(d.commit))
        cands, identical = [], 0
        for k in range(1, len(sb.trees)):
            a, b = sb.trees[k - 1], sb.trees[k]
            for rel, sha in b.items():
                if rel in a:
                    if a[rel] == sha:
                        identical += 1
                    else:
                        cands.append(rules.Candidate(k, rel))
        sampler = rules.Sampler()
        pairs = []
        for c in rules.shuffled(spec.name, cands):
            if sampler.full():
                break
            if not sampler.wants(c):
                continue
            sha_a, sha_b = sb.trees[c.k - 1][c.path], sb.trees[c.k][c.path]
            html_changed = sb.html_judge(sha_a) != sb.html_judge(sha_b)
            src = sb.source_truth(c.k, c.path, sha_b)
            changed = src["changed"] if src is not None else html_changed
            if sampler.offer(c, changed):
                pairs.append(
                    {
                        "k": c.k,
                        "path": c.path,
                        "url": page_url(spec, c.path),
                        "blobs": [sha_a, sha_b],
                        "changed": changed,
                        "truth": "source" if src is not None else "html",
                        "html_judge_changed": html_changed,
                        "source": src,
                        "deploy_times": [spec.deploys[c.k - 1].time, spec.deploys[c.k].time],
                    }
                )
        # The template detector's sample: TEMPLATE_SAMPLE pages of each deploy a pair uses.
        template = {}
        for k in sorted({p["k"] for p in pairs} | {p["k"] - 1 for p in pairs}):
            names = sorted(sb.trees[k])
            rng = random.Random(f"pagepairs-template:{spec.name}:{k}")
            pick = rng.sample(names, min(TEMPLATE_SAMPLE, len(names)))
            template[str(k)] = [sb.trees[k][n] for n in pick]
            for sha in template[str(k)]:
                sb.blob(sha)
        out = {
            "site": spec.name,
            "repo": spec.repo,
            "generator": spec.generator,
            "sites_json": source,
            "half": rules.half(spec.repo),
            "deploys": len(spec.deploys),
            "source_commits": sum(s is not None for s in sb.sources),
            "candidates": len(cands),
            "identical": identical,
            "examined": sampler.examined,
            "pairs": pairs,
            "template_sample": template,
        }
    finally:
        sb.git.close()
    (cache / f"pairs-{spec.name}.json").write_text(json.dumps(out))
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse
    from concurrent.futures import ProcessPoolExecutor

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sites", help="comma-separated names (default: all)")
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--force", action="store_true", help="rebuild sites already built")
    args = ap.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    todo = [
        (spec, src)
        for spec, src in all_sites()
        if (not args.sites or spec.name in args.sites.split(","))
        and (args.force or not (args.cache / f"pairs-{spec.name}.json").is_file())
    ]
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(build_site, spec, src, args.cache) for spec, src in todo]
        for f in futures:
            r = f.result()
            if "error" in r:
                print(f"[pagepairs] {r['site']}: {r['error']}", file=sys.stderr)
                continue
            n = len(r["pairs"])
            ch = sum(p["changed"] for p in r["pairs"])
            src = sum(p["truth"] == "source" for p in r["pairs"])
            print(
                f"[pagepairs] {r['site']}: {n} pairs ({ch} changed, {src} source truth), "
                f"{r['candidates']} candidates, {r['identical']} identical, "
                f"{r['source_commits']}/{r['deploys']} source commits",
                file=sys.stderr,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
