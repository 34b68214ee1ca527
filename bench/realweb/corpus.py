"""The corpus of real sites: their repositories, deploy commits and the extracted cache.

``sites.json`` (beside this file) lists each site: ``repo`` (owner/name on GitHub),
``branch``, ``root`` (the folder of the commit that is the site root, "" for the top),
``base_url`` (the public URL of that root as the site's sitemaps write it),
``aliases`` (other public origins the history used), ``sitemaps`` (paths under the root
declared in the generated robots.txt), ``generator``, ``deploys`` (the ordered deploy
commits used, with their committer times) and ``labels`` (the expected verdict per
segment). Nothing from the repositories is committed: ``prepare`` extracts each deploy's
text files (HTML, XML, TXT) into the cache at bench time.

    python bench/realweb/corpus.py pick NAME [--n 24] [--until YYYY-MM-DD] [--per day]
    python bench/realweb/corpus.py prepare [--sites a,b] [--mirror-root DIR] [--cache DIR]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SITES_FILE = HERE / "sites.json"
DEFAULT_CACHE = REPO / "bench" / "out" / "realweb-cache"
DEFAULT_MIRRORS = Path("/work/.mirror")
#: Files the replay serves; images, fonts, scripts and styles are never extracted.
SERVED_SUFFIXES = (".html", ".htm", ".xml", ".txt", ".xml.gz", ".xsl")


@dataclass
class Deploy:
    commit: str
    time: int  # committer time, epoch seconds (the replay's clock)

    @property
    def iso(self) -> str:
        return dt.datetime.fromtimestamp(self.time, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class SiteSpec:
    name: str
    repo: str
    branch: str
    root: str
    base_url: str
    sitemaps: list[str]
    generator: str
    generator_version: str = ""
    aliases: list[str] = field(default_factory=list)
    deploys: list[Deploy] = field(default_factory=list)
    labels: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: str = ""
    #: Folders under the root never extracted (old versioned docs the sitemaps do not list).
    exclude: list[str] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def mount(self) -> str:
        """The URL path the site root is served at (the base URL's path), ending in /."""
        path = "/" + self.base_url.split("://", 1)[1].partition("/")[2]
        return path if path.endswith("/") else path + "/"

    @property
    def public_origins(self) -> list[str]:
        """Every public scheme://host the site's files may use, to rewrite to the replay."""
        origins = []
        for url in [self.base_url, *self.aliases]:
            host = url.split("://", 1)[1].partition("/")[0]
            origins.append(host)
        return list(dict.fromkeys(origins))

    def label(self, segment: str) -> dict[str, Any] | None:
        """The segment's label (``labels.py``); a percent-encoding difference is forgiven."""
        found = self.labels.get(segment)
        if found is None:
            found = self.labels.get(quote(unquote(segment), safe="/%:@!$&'()*+,;=-._~"))
        return found or self.labels.get("*")


def load_sites(path: Path = SITES_FILE) -> list[SiteSpec]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [
        SiteSpec(
            name=raw["name"],
            repo=raw["repo"],
            branch=raw["branch"],
            root=raw.get("root", ""),
            base_url=raw["base_url"],
            sitemaps=raw["sitemaps"],
            generator=raw["generator"],
            generator_version=raw.get("generator_version", ""),
            aliases=raw.get("aliases", []),
            deploys=[Deploy(d["commit"], int(d["time"])) for d in raw.get("deploys", [])],
            labels=raw.get("labels", {}),
            notes=raw.get("notes", ""),
            exclude=raw.get("exclude", []),
            raw=raw,
        )
        for raw in data["sites"]
    ]


def select(sites: list[SiteSpec], names: str | None) -> list[SiteSpec]:
    if not names:
        return sites
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    known = {s.name: s for s in sites}
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise SystemExit(f"unknown sites {unknown}; known: {', '.join(known)}")
    return [known[n] for n in wanted]


# --------------------------------------------------------------------------------------
# Git
# --------------------------------------------------------------------------------------


def git_dir(spec: SiteSpec, mirror_root: Path, cache: Path, *, clone: bool = True) -> Path:
    """The bare repository of ``spec``: the fetched mirror, else a bare clone in the cache.

    The mirror layout is ``<mirror_root>/<owner>+<name>/repo``. Without it, the repository
    is cloned bare from GitHub into ``<cache>/git/<owner>+<name>.git`` (needs the network).
    """
    key = spec.repo.replace("/", "+")
    for candidate in (mirror_root / key / "repo", mirror_root / key, cache / "git" / f"{key}.git"):
        if (candidate / "HEAD").is_file() or (candidate / "objects").is_dir():
            return candidate
    target = cache / "git" / f"{key}.git"
    if not clone:
        raise SystemExit(f"{spec.name}: no repository at {mirror_root / key} nor {target}")
    target.parent.mkdir(parents=True, exist_ok=True)
    url = f"https://github.com/{spec.repo}.git"
    print(f"[realweb] cloning {url} (bare, branch {spec.branch}) into {target}", file=sys.stderr)
    subprocess.run(
        ["git", "clone", "--bare", "--single-branch", "--branch", spec.branch, url, str(target)],
        check=True,
    )
    return target


def git(gd: Path, *args: str, binary: bool = False) -> Any:
    out = subprocess.run(
        ["git", f"--git-dir={gd}", *args], check=True, capture_output=True, text=not binary
    )
    return out.stdout


# --------------------------------------------------------------------------------------
# pick: choose the deploy commits
# --------------------------------------------------------------------------------------


def candidates(gd: Path, spec: SiteSpec) -> list[Deploy]:
    """Commits of the branch (first parent, oldest first) whose tree has the first sitemap."""
    sitemap = f"{spec.root}{spec.sitemaps[0]}"
    log = git(gd, "log", "--first-parent", "--format=%H %ct", spec.branch)
    out = []
    for line in reversed(log.split("\n")):
        if not line.strip():
            continue
        commit, t = line.split()
        probe = subprocess.run(
            ["git", f"--git-dir={gd}", "cat-file", "-e", f"{commit}:{sitemap}"],
            capture_output=True,
            check=False,
        )
        if probe.returncode == 0:
            out.append(Deploy(commit, int(t)))
    return out


def pick(
    deploys: list[Deploy], n: int, *, per: str = "day", until: str | None = None
) -> list[Deploy]:
    """The last ``n`` deploys up to ``until``, one per UTC day (the day's last) when
    ``per`` is "day", with strictly increasing times."""
    if until:
        limit = dt.datetime.fromisoformat(until).replace(tzinfo=dt.UTC).timestamp() + 86400
        deploys = [d for d in deploys if d.time < limit]
    if per == "day":
        by_day: dict[str, Deploy] = {}
        for d in deploys:
            by_day[d.iso[:10]] = d
        deploys = sorted(by_day.values(), key=lambda d: d.time)
    chosen: list[Deploy] = []
    for d in deploys:
        if chosen and d.time <= chosen[-1].time:
            continue
        chosen.append(d)
    return chosen[-n:]


def cmd_pick(args: argparse.Namespace) -> int:
    data = json.loads(SITES_FILE.read_text(encoding="utf-8"))
    raw = next((s for s in data["sites"] if s["name"] == args.name), None)
    if raw is None:
        raise SystemExit(f"no site {args.name!r} in {SITES_FILE}")
    spec = load_sites()[[s["name"] for s in data["sites"]].index(args.name)]
    gd = git_dir(spec, args.mirror_root, args.cache, clone=False)
    chosen = pick(candidates(gd, spec), args.n, per=args.per, until=args.until)
    raw["deploys"] = [{"commit": d.commit, "time": d.time, "date": d.iso} for d in chosen]
    SITES_FILE.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{args.name}: {len(chosen)} deploys, {chosen[0].iso} .. {chosen[-1].iso}")
    return 0


# --------------------------------------------------------------------------------------
# prepare: extract the deploys
# --------------------------------------------------------------------------------------


def deploy_dir(cache: Path, spec: SiteSpec, k: int) -> Path:
    return cache / spec.name / f"{k:02d}-{spec.deploys[k].commit[:12]}"


def extract(gd: Path, spec: SiteSpec, commit: str, dest: Path) -> int:
    """Write the served files of ``commit`` (under the site root) into ``dest``.

    Reads the tree with ``git ls-tree`` and only the served blobs with ``git cat-file
    --batch`` (a snapshot may lack large blobs, which ``git archive`` would fail on)."""
    tmp = dest.with_name(dest.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    args = ["ls-tree", "-r", "-z", commit]
    if spec.root:
        args.append(spec.root)
    wanted: list[tuple[str, str]] = []
    for entry in git(gd, *args).split("\0"):
        if not entry:
            continue
        meta, _, name = entry.partition("\t")
        _mode, kind, sha = meta.split()
        if kind != "blob" or not name.lower().endswith(SERVED_SUFFIXES):
            continue
        rel = name[len(spec.root) :] if spec.root else name
        if rel.startswith("/") or ".." in Path(rel).parts:
            continue
        if any(rel.startswith(prefix) for prefix in spec.exclude):
            continue
        wanted.append((sha, rel))
    batch = subprocess.run(
        ["git", f"--git-dir={gd}", "cat-file", "--batch"],
        input="".join(f"{sha}\n" for sha, _ in wanted).encode(),
        capture_output=True,
        check=True,
    ).stdout
    pos = n = 0
    for sha, rel in wanted:
        end = batch.index(b"\n", pos)
        header = batch[pos:end].split()
        pos = end + 1
        if len(header) < 3 or header[1] != b"blob":  # "<sha> missing": absent from snapshot
            continue
        size = int(header[2])
        body = batch[pos : pos + size]
        pos += size + 1
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
        n += 1
        del sha
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return n


def prepare(
    specs: list[SiteSpec], mirror_root: Path, cache: Path, limit: int | None = None
) -> None:
    for spec in specs:
        gd = None
        deploys = (
            range(len(spec.deploys)) if limit is None else range(min(limit, len(spec.deploys)))
        )
        for k in deploys:
            dest = deploy_dir(cache, spec, k)
            if (dest / ".complete").is_file():
                continue
            gd = gd or git_dir(spec, mirror_root, cache)
            n = extract(gd, spec, spec.deploys[k].commit, dest)
            (dest / ".complete").write_text(f"{n}\n")
        print(
            f"[realweb] {spec.name}: {len(deploys)} deploys in {cache / spec.name}", file=sys.stderr
        )


def cmd_prepare(args: argparse.Namespace) -> int:
    prepare(select(load_sites(), args.sites), args.mirror_root, args.cache)
    return 0


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mirror-root", type=Path, default=DEFAULT_MIRRORS)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pick", help="choose a site's deploy commits into sites.json")
    p.add_argument("name")
    p.add_argument("--n", type=int, default=24)
    p.add_argument("--per", choices=("day", "commit"), default="day")
    p.add_argument("--until", help="last day (YYYY-MM-DD) of the window")
    add_common(p)
    p.set_defaults(func=cmd_pick)
    p = sub.add_parser("prepare", help="extract the deploys into the cache")
    p.add_argument("--sites")
    add_common(p)
    p.set_defaults(func=cmd_prepare)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
