"""The common-mode rule on the page pairs: the spider's fingerprint alone against the
fingerprint with ``sitemapcrawl.verify.commonmode`` (issue 36, point 1).

The spider compares the pages of one run; here a run is one deploy of one site: the pairs
sampled at deploy k (``k-1`` → ``k``). Every pair of the deploy is compared (``CommonEdits``
counts the unchanged ones too, as the spider counts every page it compared); a pair whose
fingerprint changed is called unchanged when every one of its edits is the template's.
Byte-identical pages are not in the corpus (``README.md``) but a spider's random sample
compares them too: each deploy's group counts as many of them as the sampling rate of its
byte-differing pages gives (from the mirror's trees). The spider applies the rule only to
pages whose lastmod did not move; here it is applied to every pair (the detector alone).

    .venv/bin/python bench/pagepairs/commonmode.py --half tuning [--sites a,b] [--show N]

Prints false-change and missed-change rates before and after, per site, per generator and
over the half, on all pairs and on the pairs whose truth is the site's source; writes
``bench/out/pagepairs-commonmode-<half>-<timestamp>.json``. ``--show N`` prints the edits of
N pairs the rule turned from changed to unchanged (the tuning half only: the held-out half is
run and reported, never read for ideas).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent.parent), str(HERE.parent)]

from pagepairs import build, methods  # noqa: E402
from sitemapcrawl.verify.commonmode import MIN_SHARE, CommonEdits, edit_signatures  # noqa: E402


def measure(path: Path, share: float = MIN_SHARE) -> dict[str, Any]:
    """One site's pairs: truth, the fingerprint's verdict, the rule's."""
    data = json.loads(path.read_text())
    blobs = path.parent / "blobs"
    memo: dict[str, Any] = {}

    def evidence(sha: str, url: str) -> Any:
        if sha not in memo:
            memo[sha] = methods.spider((blobs / sha).read_bytes(), url)
        return memo[sha]

    rows = []
    for p in data["pairs"]:
        a, b = (evidence(s, p["url"]) for s in p["blobs"])
        moved = a.fingerprint != b.fingerprint
        edits = edit_signatures(a.content, b.content) if moved else frozenset()
        rows.append({"k": p["k"], "url": p["url"], "changed": p["changed"],
                     "truth": p["truth"], "fingerprint": moved,
                     "edits": sorted(edits) if edits is not None else None,
                     "blobs": p["blobs"]})  # fmt: skip
    by_deploy: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_deploy[row["k"]].append(row)
    pages = deploy_pages(data["site"])
    for k, group in by_deploy.items():
        common = CommonEdits(share=share)
        for row in group:
            common.add("site", row["url"], row["edits"])
        # the byte-identical pages a spider's sample would have compared with them
        differing, identical = pages.get(k, (len(group), 0))
        for i in range(round(len(group) * identical / max(differing, 1))):
            common.add("site", f"identical-{i}", ())
        for row in group:
            edits = frozenset(row["edits"]) if row["edits"] is not None else None
            row["common_mode"] = row["fingerprint"] and not common.template_only("site", edits)
    return {"site": data["site"], "generator": data["generator"], "half": data["half"],
            "rows": rows}  # fmt: skip


def deploy_pages(site: str) -> dict[int, tuple[int, int]]:
    """Per deploy k, the pages in both trees (k-1, k) whose bytes differ and those whose
    bytes are identical, from the mirror (``build.Git``): the corpus samples the first
    only, a spider's run compares both."""
    spec = next((s for s, _ in build.all_sites() if s.name == site), None)
    git_dir = build.MIRRORS / spec.repo.replace("/", "+") / "repo" if spec else None
    if spec is None or git_dir is None or not git_dir.is_dir():
        return {}
    git = build.Git(git_dir)
    try:
        trees = [git.html_files(d.commit, spec.root, spec.exclude) for d in spec.deploys]
    finally:
        git.close()
    out = {}
    for k in range(1, len(trees)):
        shared = [rel for rel in trees[k] if rel in trees[k - 1]]
        same = sum(trees[k][rel] == trees[k - 1][rel] for rel in shared)
        out[k] = (len(shared) - same, same)
    return out


def rates(rows: list[dict[str, Any]], method: str) -> tuple[int, int, int, int]:
    """(false changes, unchanged pairs, missed changes, changed pairs)."""
    unchanged = [r for r in rows if not r["changed"]]
    changed = [r for r in rows if r["changed"]]
    return (
        sum(r[method] for r in unchanged),
        len(unchanged),
        sum(not r[method] for r in changed),
        len(changed),
    )


def line(name: str, rows: list[dict[str, Any]]) -> str:
    def pct(x: int, n: int) -> str:
        return f"{100 * x / n:.1f} %" if n else "—"

    f0, u, m0, c = rates(rows, "fingerprint")
    f1, _, m1, _ = rates(rows, "common_mode")
    return (
        f"| {name} | {u} / {c} | {f0} ({pct(f0, u)}) → {f1} ({pct(f1, u)}) "
        f"| {m0} ({pct(m0, c)}) → {m1} ({pct(m1, c)}) |"
    )


def show(site: dict[str, Any], cache: Path, count: int) -> None:
    """The edits of ``count`` pairs the rule turned to unchanged (tuning half only)."""
    for row in [r for r in site["rows"] if r["fingerprint"] and not r["common_mode"]][:count]:
        texts = [
            methods.spider((cache / "blobs" / s).read_bytes(), row["url"]).content
            for s in row["blobs"]
        ]
        print(f"== {site['site']} k={row['k']} {row['url']} truth={row['truth']}:"
              f"{'changed' if row['changed'] else 'unchanged'}")  # fmt: skip
        for old, new in zip(*([*t.split("\n", 1), ""] for t in texts), strict=False):
            a, b = old.lower().split(), new.lower().split()
            for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b).get_opcodes():
                if tag != "equal":
                    print(f"   {tag} {' '.join(a[i1:i2])[:120]!r} -> {' '.join(b[j1:j2])[:120]!r}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--half", choices=("tuning", "held-out"), required=True)
    ap.add_argument("--cache", type=Path, default=build.CACHE)
    ap.add_argument("--sites")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--show", type=int, default=0)
    ap.add_argument("--share", type=float, default=MIN_SHARE, help="CommonEdits' share")
    args = ap.parse_args(argv)
    if args.show and args.half != "tuning":
        ap.error("--show reads pairs: the tuning half only")
    paths = [
        p
        for p in sorted(args.cache.glob("pairs-*.json"))
        if json.loads(p.read_text())["half"] == args.half
        and (not args.sites or p.stem.removeprefix("pairs-") in args.sites.split(","))
    ]
    with ProcessPoolExecutor(args.jobs) as pool:
        sites = list(pool.map(measure, paths, [args.share] * len(paths)))
    head = ["| | unchanged / changed pairs | false changes | missed changes |", "|---|---|---|---|"]
    out = [f"## {args.half}: fingerprint → fingerprint + common-mode", "", *head]
    out += [line(f"{site['site']} ({site['generator']})", site["rows"]) for site in sites]
    by_gen: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for site in sites:
        by_gen[site["generator"]] += site["rows"]
    out += ["", *head]
    out += [line(gen, rows) for gen, rows in sorted(by_gen.items())]
    every = [r for s in sites for r in s["rows"]]
    out += ["", *head, line("all pairs", every)]
    out.append(line("source-truth pairs", [r for r in every if r["truth"] == "source"]))
    out.append(line("HTML-judge pairs", [r for r in every if r["truth"] != "source"]))
    turned = Counter(
        (r["truth"], r["changed"]) for r in every if r["fingerprint"] and not r["common_mode"]
    )
    out += ["", f"pairs the rule turned to unchanged, by (truth, truly changed): {dict(turned)}"]
    print("\n".join(out))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    dest = build.REPO_ROOT / "bench" / "out" / f"pagepairs-commonmode-{args.half}-{stamp}.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps({"half": args.half, "sites": sites}))
    print(dest)
    for site in sites if args.show else ():
        show(site, args.cache, args.show)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
