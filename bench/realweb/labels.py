"""Turn each site's hand-written lastmod class into per-segment labels, with evidence.

    python bench/realweb/labels.py [--sites a,b]      # rewrites sites.json's labels and LABELS.md

Each site in ``sites.json`` has a ``class``: the verdict its generator's lastmod deserves
(``verdict``, optional ``accept``) and why (``reason``: the generator's template, its
configuration in the repository, what the history shows). This script measures, per
segment of the spider (each child sitemap of an index; in a flat sitemap, the spider's
path groups, with the groups under 5 URLs in the root group: ``segments.py``; a page is
counted in the segment the spider gives it at each deploy), over the deploys used: URLs,
lastmod coverage, main-content changes, lastmod moves, moves that came with a change, and
for a build-stamped site how far the lastmods sit from the deploy time. The segment's
label follows from the class and that evidence (a segment that merges pages of several
old first-path-component segments is labelled from the merged evidence, by the same
rules; its note names the old segments and their labels when those differ):

* no URL ever has a lastmod: ABSENT; some have one and some not: PARTIAL (the dated
  part's acceptable verdicts are accepted too);
* a STALE site's segment where some change of a page with a lastmod came without a
  lastmod move (an undated page's change does not count: it has no lastmod to move):
  STALE (and, as bench/simweb's lenient set, GENERATION_TIME and UNVERIFIABLE); where none
  did (no change, or every change with a move), the history cannot tell: UNVERIFIABLE,
  accepting PROVISIONAL, STALE and GENERATION_TIME too;
* a TRUSTED (honest) site's segment, from its evidence: no main-content change in the
  window → PROVISIONAL (accepting TRUSTED and UNVERIFIABLE: nothing refutes the dates,
  nothing shows recall); over ``HONEST_MISS_MAX`` (10 %) of its changes came without a
  lastmod move (a template or list change no source file's date follows) → STALE (and the
  lenient set); else TRUSTED, also accepting OVER_REPORTING when at least ``OVER_SHARE``
  (30 %) of its lastmod moves came without a change (list pages dated by their newest
  member);
* otherwise the class's verdict and accepted list.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.realweb import corpus, segments, truth

STALE_OK = ["STALE", "GENERATION_TIME", "UNVERIFIABLE"]
#: An honest (TRUSTED) class's segment whose lastmod missed more than this share of its
#: main-content changes is labelled STALE (the spider's STALE bar, STALE_LB, is 0.10 too).
HONEST_MISS_MAX = 0.10
#: ... and one where at least this share of its lastmod moves came without a change also
#: accepts OVER_REPORTING (the spider's OVER_REPORTING_LB is 0.3).
OVER_SHARE = 0.30
AMBIGUOUS = ["UNVERIFIABLE", "PROVISIONAL", "STALE", "GENERATION_TIME"]


def _parse(raw: str | None) -> float | None:
    if not raw:
        return None
    text = raw.strip().replace("Z", "+00:00")
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.timestamp()


def evidence(
    spec: corpus.SiteSpec, tr: truth.Truth, segmaps: list[dict[str, str]] | None = None
) -> dict[str, dict[str, Any]]:
    """Per segment: the counts over the deploys. ``segmaps``: per deploy, page path -> the
    spider's segment (``segments.per_deploy``); None: the old first path components."""
    out: dict[str, dict[str, Any]] = defaultdict(
        lambda: {
            "urls": 0,
            "page_runs": 0,
            "dated_page_runs": 0,
            "changes": 0,
            "moves": 0,
            "moves_with_change": 0,
            "changes_without_move": 0,
            "offsets_s": [],
        }
    )

    def segment(k: int, p: str) -> str:
        if segmaps is not None and p in segmaps[k]:
            return segmaps[k][p]
        return tr.segments.get(p, truth.first_segment(p))

    members: dict[str, set[str]] = defaultdict(set)  # pages listed (served or not)
    for k in range(len(tr.fingerprints)):
        for p in tr.lastmods[k]:
            members[segment(k, p)].add(p)
    for k in range(len(tr.fingerprints)):
        changed, moved = tr.changed(k), tr.lastmod_moved(k)
        t = spec.deploys[k].time
        for p in tr.listed(k):
            ev = out[segment(k, p)]
            ev["page_runs"] += 1
            raw = tr.lastmods[k].get(p)
            if raw:
                ev["dated_page_runs"] += 1
                when = _parse(raw)
                if when is not None and len(raw) > 10:
                    ev["offsets_s"].append(t - when)
            ev["changes"] += p in changed
            ev["moves"] += p in moved
            ev["moves_with_change"] += p in changed and p in moved
            # a page without a lastmod has none to move: its change says nothing of the
            # dated pages' lastmods (fastpages' undated /categories/ joins the dated posts)
            ev["changes_without_move"] += bool(raw) and p in changed and p not in moved
    for name, ev in out.items():
        ev["urls"] = len(members[name])
        offs = ev.pop("offsets_s")
        if offs:
            ev["deploy_minus_lastmod_s"] = {
                "min": round(min(offs)),
                "median": round(statistics.median(offs)),
                "max": round(max(offs)),
            }
    return dict(out)


def label(cls: dict[str, Any], ev: dict[str, Any]) -> dict[str, Any]:
    verdict = cls["verdict"]
    accept = list(cls.get("accept") or [verdict])
    if verdict == "STALE":
        accept = list(cls.get("accept") or STALE_OK)
    note = ""
    if ev["dated_page_runs"] == 0:
        return {"verdict": "ABSENT", "accept": ["ABSENT"], "note": "no URL has a lastmod"}
    if verdict == "TRUSTED":
        verdict, accept, note = _honest(ev, accept)
    if verdict == "STALE" and ev["changes_without_move"] == 0:
        verdict, accept = "UNVERIFIABLE", AMBIGUOUS
        note = (
            "ambiguous: no change of a dated page without a lastmod move in the window"
            if ev["changes"]
            else "ambiguous: no main-content change in the window"
        )
        note += ", so the history cannot refute agreeing dates (the generator is the class's)"
    if ev["dated_page_runs"] < ev["page_runs"]:
        note = (note + "; " if note else "") + "some URLs without lastmod"
        return {"verdict": "PARTIAL", "accept": ["PARTIAL", *accept], "note": note}
    return {"verdict": verdict, "accept": accept, "note": note}


def _honest(ev: dict[str, Any], accept: list[str]) -> tuple[str, list[str], str]:
    """A TRUSTED (honest) class's segment, from its measured evidence: no change to catch
    → PROVISIONAL (as hugo-iris: nothing refutes the dates, nothing shows recall); its
    lastmod missed over ``HONEST_MISS_MAX`` of its changes (a template or list change that
    no content file's date follows) → STALE; else TRUSTED, also accepting OVER_REPORTING
    when at least ``OVER_SHARE`` of its moves came without a change."""
    changes, missed = ev["changes"], ev["changes_without_move"]
    moves, over = ev["moves"], ev["moves"] - ev["moves_with_change"]
    if changes == 0:
        return (
            "PROVISIONAL",
            ["PROVISIONAL", "TRUSTED", "UNVERIFIABLE"],
            "no main-content change in the window: the dates cannot be refuted nor recall shown",
        )
    if missed > HONEST_MISS_MAX * changes:
        return (
            "STALE",
            STALE_OK,
            f"the honest class's lastmod missed {missed} of the segment's {changes} changes "
            "(pages whose content changed without their own source file changing)",
        )
    if moves and over >= OVER_SHARE * moves:
        return (
            "TRUSTED",
            [*accept, "OVER_REPORTING"] if "OVER_REPORTING" not in accept else accept,
            f"{over} of {moves} lastmod moves came without a main-content change "
            "(list pages dated by their newest member)",
        )
    return "TRUSTED", accept, ""


def merged_note(
    tr: truth.Truth,
    segmaps: list[dict[str, str]],
    seg: str,
    old_labels: dict[str, dict[str, Any]],
) -> str:
    """When ``seg`` holds pages that the old rule (each first path component a segment)
    labelled differently: which old segments, with their labels (else "")."""
    olds: set[str] = set()
    for k, segmap in enumerate(segmaps):
        for p in tr.listed(k):
            if segmap.get(p) == seg:
                olds.add(tr.segments.get(p, truth.first_segment(p)))
    verdicts = {old_labels[o]["verdict"] for o in olds if o in old_labels}
    if len(verdicts) < 2:
        return ""
    parts = ", ".join(f"`{o}` {old_labels[o]['verdict']}" for o in sorted(olds))
    return f"merges old segments of different labels ({parts}): labelled from the merged evidence"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sites")
    parser.add_argument("--cache", type=Path, default=corpus.DEFAULT_CACHE)
    parser.add_argument("--mirror-root", type=Path, default=corpus.DEFAULT_MIRRORS)
    args = parser.parse_args(argv)
    data = json.loads(corpus.SITES_FILE.read_text(encoding="utf-8"))
    by_name = {s["name"]: s for s in data["sites"]}
    for spec in corpus.select(corpus.load_sites(), args.sites):
        corpus.prepare([spec], args.mirror_root, args.cache)
        roots = [corpus.deploy_dir(args.cache, spec, k) for k in range(len(spec.deploys))]
        tr = truth.compute(spec, roots, args.cache / spec.name / "truth.json")
        raw = by_name[spec.name]
        cls = raw["class"]
        segmaps = segments.per_deploy(spec, roots)
        old_labels = {seg: label(cls, ev) for seg, ev in evidence(spec, tr).items()}
        labels = {}
        for seg, ev in sorted(evidence(spec, tr, segmaps).items()):
            labels[seg] = {**label(cls, ev), "evidence": ev}
            merged = merged_note(tr, segmaps, seg, old_labels)
            if merged:
                note = labels[seg]["note"]
                labels[seg]["note"] = f"{note}; {merged}" if note else merged
        raw["labels"] = labels
        raw["evidence"] = {
            "deploys": len(roots),
            "pages": len(tr.pages),
            "page_changes": sum(len(tr.changed(k)) for k in range(len(roots))),
            "lastmod_moves": sum(len(tr.lastmod_moved(k)) for k in range(len(roots))),
            "moves_with_change": sum(
                len(tr.lastmod_moved(k) & tr.changed(k)) for k in range(len(roots))
            ),
        }
        print(f"{spec.name}: {len(labels)} segments", file=sys.stderr)
    corpus.SITES_FILE.write_text(
        json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (corpus.HERE / "LABELS.md").write_text(render(data), encoding="utf-8")
    return 0


def render(data: dict[str, Any]) -> str:
    head = (corpus.HERE / "LABELS.head.md").read_text(encoding="utf-8")
    out = [head.rstrip(), ""]
    for s in data["sites"]:
        ev = s.get("evidence", {})
        out += [
            f"## {s['name']}",
            "",
            f"`{s['repo']}` branch `{s['branch']}`"
            + (f", folder `{s['root']}`" if s.get("root") else "")
            + f"; {s['generator']} ({s.get('generator_version') or 'version not shown'}); "
            f"base URL {s['base_url']}; {ev.get('deploys')} deploys "
            f"{s['deploys'][0]['date'][:10]} .. {s['deploys'][-1]['date'][:10]}; "
            f"{ev.get('pages')} URLs; {ev.get('page_changes')} main-content changes, "
            f"{ev.get('lastmod_moves')} lastmod moves, {ev.get('moves_with_change')} of them "
            "with a change.",
            "",
            f"**Class: {s['class']['verdict']}.** {s['class']['reason']}",
            "",
            "| segment | urls | label | accepted | changes | lastmod moves | moves with change "
            "| dated page-runs | deploy - lastmod (s) | note |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for seg, lab in s.get("labels", {}).items():
            e = lab["evidence"]
            off = e.get("deploy_minus_lastmod_s")
            offs = f"{off['min']} / {off['median']} / {off['max']}" if off else ""
            out.append(
                f"| `{seg}` | {e['urls']} | {lab['verdict']} | {', '.join(lab['accept'])} | "
                f"{e['changes']} | {e['moves']} | {e['moves_with_change']} | "
                f"{e['dated_page_runs']}/{e['page_runs']} | {offs} | {lab['note']} |"
            )
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
