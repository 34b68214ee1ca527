"""Benchmark suite of sitemapcrawl: parser micro-benchmark + end-to-end discovery.

    python bench/run.py [--quick] [--scaling] [--parsers-only | --e2e-only]

Uses the Python it is started with (run it with the project's virtualenv) and
installs nothing.  All traffic goes to loopback servers bound on 127.0.0.1.
Corpora are generated into bench/out/ (git-ignored) and cached by
(seed, base URL).  Results: Markdown tables on stdout, and
bench/out/results-<timestamp>.md / .json.  See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as dt
import json
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from importlib import metadata

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH)
OUT = os.path.join(BENCH, "out")

try:
    import psutil  # type: ignore
except ImportError:  # the runner installs nothing: fall back to ru_maxrss
    psutil = None

PY = sys.executable
PARSERS = ["ours", "ours-lxml", "scrapy", "usp", "defusedxml", "lxml", "pyexpat", "lines"]
# "ours": default settings, with the state file a first run writes (fresh every run, so no
# run replays another's 304s); "ours-nostate": the same crawl with the state file off;
# "ours-rerun" (not in the default list): a second run of "ours" on the file its first run
# wrote (the sitemaps answered 304 and read from the state); "ours-default" (not in the
# default list): the crawl a user gets with no argument (pages sampled, links followed from
# them, the state file on): the bench site has no pages, so each sampled or followed page is
# one 404, counted apart from the sitemap requests.
OURS = ("ours", "ours-nostate", "ours-rerun", "ours-default")
E2E_TOOLS = ["ours", "ours-nostate", "stock-scrapy", "scrapy-items", "usp", "advertools"]
DEFAULT_PORT = 18730  # files; +1: 1M site, +2: 100k site, +3: 10k site
SITE_PORT_OFFSET = {1_000_000: 1, 100_000: 2, 10_000: 3}
PACKAGES = [
    "Scrapy",
    "Twisted",
    "lxml",
    "defusedxml",
    "ultimate-sitemap-parser",
    "advertools",
    "pandas",
    "requests",
    "psutil",
    "matplotlib",
]

MD: list[str] = []  # the Markdown report, built as we go


def say(line: str = "") -> None:
    print(line, flush=True)
    MD.append(line)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def child_env() -> dict:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env["PYTHONUNBUFFERED"] = "1"
    return env


# --------------------------------------------------------------------------- machine


def loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine_info() -> dict:
    info: dict = {
        "nproc": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": sys.version.split()[0],
        "python_executable": PY,
        "platform": platform.platform(),
    }
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            info["mem_total_gib"] = round(int(f.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    info["packages"] = {}
    for p in PACKAGES:
        try:
            info["packages"][p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            info["packages"][p] = None
    head = _git("rev-parse", "--short", "HEAD")
    info["git_head"] = None if head is None else head or "(no commits)"
    # A run on uncommitted changes says so: its HEAD alone would not tell what ran.
    changed = _git("status", "--porcelain", "--untracked-files=no")
    info["git_dirty"] = None if changed is None else bool(changed)
    return info


def _git(*args: str) -> str | None:
    """``git ARGS`` in the repository: its output, or None when git is not there."""
    try:
        return subprocess.run(
            ["git", "-C", REPO_ROOT, *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    except Exception:
        return None


# --------------------------------------------------------------------------- servers


def port_free(port: int) -> bool:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def pick_port(preferred: int) -> int:
    if port_free(preferred):
        return preferred
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class StaticServer:
    """bench/server.py in its own process (so it never shares our GIL)."""

    def __init__(self, root: str, preferred_port: int):
        self.root = root
        os.makedirs(root, exist_ok=True)
        port = pick_port(preferred_port)
        self.proc = subprocess.Popen(
            [PY, os.path.join(BENCH, "server.py"), "--root", root, "--port", str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=child_env(),
        )
        line = self.proc.stdout.readline().strip()  # "READY <port>"
        if not line.startswith("READY"):
            self.stop()
            raise RuntimeError(f"server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.base = f"http://127.0.0.1:{self.port}"

    def stats(self, reset: bool = False) -> dict:
        import urllib.request

        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{self.base}/_stats" + ("?reset=1" if reset else ""), timeout=10) as r:
            return json.load(r)

    def cpu_s(self) -> float | None:
        """The server process's CPU seconds so far (None without psutil)."""
        if psutil is None:
            return None
        try:
            times = psutil.Process(self.proc.pid).cpu_times()
        except psutil.Error:
            return None
        return float(times.user + times.system)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def generate(args: list[str], manifest_path: str) -> dict:
    """Run bench/corpus.py in a subprocess (keeps this runner's RSS small) and
    return the manifest it wrote."""
    cp = subprocess.run(
        [PY, os.path.join(BENCH, "corpus.py"), *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=child_env(),
        check=False,
    )
    for line in (cp.stdout + cp.stderr).splitlines():
        log(line)
    if cp.returncode != 0:
        raise RuntimeError(f"corpus generation failed: {cp.stderr[-2000:]}")
    with open(manifest_path) as f:
        return json.load(f)


# --------------------------------------------------------------------------- process monitor


def run_monitored(cmd: list[str], cwd: str, timeout: float, stdout_path: str) -> dict:
    """Run ``cmd`` in its own session, poll the RSS of its process tree every
    50 ms, reap it with wait4 to get its exact rusage (CPU, ru_maxrss)."""
    with open(stdout_path, "wb") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=child_env(),
            start_new_session=True,
        )
        ps = None
        if psutil is not None:
            try:
                ps = psutil.Process(proc.pid)
            except psutil.Error:
                ps = None
        peak_tree = 0
        samples = 0
        timed_out = False
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if ps is not None:
                try:
                    rss = ps.memory_info().rss
                    for c in ps.children(recursive=True):
                        with contextlib.suppress(psutil.Error):
                            rss += c.memory_info().rss
                    peak_tree = max(peak_tree, rss)
                    samples += 1
                except psutil.Error:
                    pass
            if time.perf_counter() - t0 > timeout:
                timed_out = True
                try:
                    os.killpg(proc.pid, signal.SIGTERM)  # our own child's group
                    time.sleep(3)
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                pid, status, ru = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "returncode": proc.returncode,
        "timed_out": timed_out,
        "wall_s": wall,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "user_s": ru.ru_utime,
        "sys_s": ru.ru_stime,
        # ru_maxrss of a child also carries the RSS this runner had when it
        # spawned it (Linux keeps the pre-exec peak): only a fallback.
        "ru_maxrss": ru.ru_maxrss * 1024,
        "peak_tree_rss": peak_tree or None,
        "peak_rss": peak_tree or ru.ru_maxrss * 1024,
        "peak_rss_source": "psutil tree, 50 ms" if peak_tree else "ru_maxrss (upper bound)",
        "rss_samples": samples,
    }


# --------------------------------------------------------------------------- formatting


def mb(b) -> str:
    return "-" if b is None else f"{b / 2**20:,.1f}"


def fnum(x, nd=3) -> str:
    return "-" if x is None else f"{x:,.{nd}f}"


def ratio(a, b) -> str:
    """a ÷ b, e.g. peer time ÷ ours time (> 1: ours is faster)."""
    if not a or not b:
        return "-"
    return f"{a / b:.2f}x"


def table(header: list[str], rows: list[list]) -> None:
    say("| " + " | ".join(header) + " |")
    say("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        say("| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in r) + " |")
    say()


# --------------------------------------------------------------------------- part 1


def parser_bench(
    files_dir: str,
    manifest: dict,
    base: str,
    *,
    quick: bool,
    runs: int,
    parsers: list[str],
    results: dict,
    files: list[str] | None = None,
) -> None:
    names = ["urlset-50k.xml", "urlset-50k.xml.gz", "text-50k.txt"]
    if not quick:
        names += ["urlset-50mb.xml", "urlset-heavy.xml"]
    if files:
        names = files
    say(f"## Parser micro-benchmark (median of {runs} runs, each in a fresh process)")
    say()
    say(
        "Times are for gunzip (`.gz`) + full iteration of a document already in memory; "
        "imports excluded. *peak Δ* = peak RSS during the parse minus RSS before it; "
        "*RSS Δ* = RSS retained after it. Ratios are *this ÷ ours* (> 1: ours is faster / smaller)."
    )
    say()
    out: dict = {}
    for name in names:
        path = os.path.join(files_dir, name)
        meta = manifest["files"][name]
        url = f"{base}/{name}"
        per: dict[str, list[dict]] = {p: [] for p in parsers}
        status: dict[str, dict] = {}
        # first pass also probes availability; then interleave the repetitions
        for r in range(runs):
            for p in parsers:
                if p in status and status[p]["status"] != "ok":
                    continue
                log(f"parsers: {name} {p} run {r + 1}/{runs}")
                try:
                    cp = subprocess.run(
                        [
                            PY,
                            os.path.join(BENCH, "parsers.py"),
                            "--parser",
                            p,
                            "--file",
                            path,
                            "--url",
                            url,
                        ],
                        capture_output=True,
                        text=True,
                        timeout=600,
                        env=child_env(),
                        cwd=BENCH,
                        check=False,
                    )
                    lines = [ln for ln in cp.stdout.splitlines() if ln.startswith("{")]
                    d = (
                        json.loads(lines[-1])
                        if lines
                        else {
                            "status": "error",
                            "reason": (cp.stderr.strip().splitlines() or ["no output"])[-1],
                        }
                    )
                except subprocess.TimeoutExpired:
                    d = {"status": "error", "reason": "timeout (600 s)"}
                status.setdefault(p, d)
                if d["status"] != "ok":
                    status[p] = d
                    continue
                per[p].append(d)
        expected = meta["urls"]
        agg: dict[str, dict] = {}
        for p in parsers:
            runs_ok = per[p]
            if not runs_ok:
                agg[p] = {
                    "status": status.get(p, {}).get("status", "error"),
                    "reason": status.get(p, {}).get("reason"),
                }
                continue

            def med(k: str, runs_ok: list[dict] = runs_ok) -> float:
                return statistics.median(x[k] for x in runs_ok)

            counts = sorted({x["urls"] for x in runs_ok})
            agg[p] = {
                "status": "ok",
                "runs": len(runs_ok),
                "urls": counts[0] if len(counts) == 1 else counts,
                "mode": runs_ok[0].get("mode"),
                "wall_s": med("wall_s"),
                "cpu_s": med("cpu_s"),
                "wall_min_s": min(x["wall_s"] for x in runs_ok),
                "peak_rss": med("peak_rss"),
                "peak_growth": med("peak_growth"),
                "rss_growth": med("rss_growth"),
                "import_s": med("import_s"),
                "peak_reset": all(x.get("peak_reset") for x in runs_ok),
                "agrees": counts == [expected],
            }
        size = meta["uncompressed_bytes"]
        say(
            f"### `{name}` — {meta['bytes'] / 2**20:.1f} MB on disk, "
            f"{size / 2**20:.1f} MB uncompressed, {expected:,} URLs generated"
        )
        say()
        o = agg.get("ours", {})
        rows = []
        for p in parsers:
            a = agg[p]
            if a["status"] != "ok":
                rows.append(
                    [
                        p,
                        a["status"],
                        "",
                        "",
                        "",
                        "",
                        "",
                        "",
                        "",
                        "",
                        "",
                        (a.get("reason") or "")[:80],
                    ]
                )
                continue
            flag = "" if a["agrees"] else " ⚠ DISAGREES"
            note = "gunzipped by the harness" if a.get("mode") == "pre-gunzipped" else ""
            ok = o.get("status") == "ok"
            rows.append(
                [
                    p,
                    f"{a['urls']:,}{flag}" if isinstance(a["urls"], int) else f"{a['urls']}{flag}",
                    fnum(a["wall_s"]),
                    fnum(a["cpu_s"]),
                    f"{a['urls'] / a['wall_s']:,.0f}" if isinstance(a["urls"], int) else "-",
                    f"{size / 2**20 / a['wall_s']:,.1f}",
                    mb(a["peak_rss"]),
                    mb(a["peak_growth"]),
                    mb(a["rss_growth"]),
                    ratio(a["wall_s"], o.get("wall_s")) if ok else "-",
                    ratio(a["cpu_s"], o.get("cpu_s")) if ok else "-",
                    note,
                ]
            )
        table(
            [
                "parser",
                "URLs",
                "wall s",
                "CPU s",
                "URLs/s",
                "MB/s",
                "peak RSS MB",
                "peak Δ MB",
                "RSS Δ MB",
                "wall ÷ ours",
                "CPU ÷ ours",
                "note",
            ],
            rows,
        )
        okp = [p for p in parsers if agg[p]["status"] == "ok"]
        if len(okp) > 1:
            say(f"CPU-time ratio matrix for `{name}` (row ÷ column; < 1: row is faster):")
            say()
            table(
                ["row ÷ col", *okp],
                [[p] + [ratio(agg[p]["cpu_s"], agg[q]["cpu_s"]) for q in okp] for p in okp],
            )
        bad = [p for p in okp if not agg[p]["agrees"]]
        if bad:
            say(
                f"**⚠ URL-count disagreement on `{name}`:** "
                + ", ".join(f"{p}={agg[p]['urls']}" for p in bad)
                + f" (expected {expected:,})"
            )
            say()
        out[name] = {
            "expected_urls": expected,
            "bytes": meta["bytes"],
            "uncompressed_bytes": size,
            "parsers": agg,
            "raw": per,
        }
    results["parsers"] = out


# --------------------------------------------------------------------------- part 2


LOG_STAT = re.compile(
    r"'(finish_reason|item_scraped_count|downloader/request_count|"
    r"log_count/ERROR|elapsed_time_seconds)': '?([^',}]+)'?"
)


def count_lines(path: str) -> int:
    """URL rows of a JSON Lines feed: every line but sitemapcrawl's closing site report
    (460 KB at 10,000,000 URLs in 200 children: the last 16 MiB are kept to find it)."""
    n = 0
    last = b""
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            n += chunk.count(b"\n")
            last = (last + chunk)[-(1 << 24) :]
    lines = last.rstrip(b"\n").rsplit(b"\n", 1)
    if (
        lines
        and lines[-1].startswith(b"{")
        and b'"segments":' in lines[-1]
        and b'"url":' not in lines[-1][:20]
    ):
        n -= 1
    return n


def failure_reason(log_path: str) -> str:
    try:
        with open(log_path, errors="replace") as f:
            lines = [ln.rstrip() for ln in f if ln.strip()]
    except OSError:
        return "no log"
    for ln in lines:  # first logged error
        if re.search(r"\] (ERROR|CRITICAL): ", ln):
            return ln.split("] ", 1)[1].strip()[:200]
    for ln in reversed(lines):  # last line of a traceback
        if re.match(r"^[\w.]+(Error|Exception|Exit)\b", ln):
            return ln.strip()[:200]
    return lines[-1][:200] if lines else "no output"


def e2e_one(tool: str, srv: StaticServer, n_urls: int, manifest: dict, timeout: float) -> dict:
    e2e_dir = os.path.join(OUT, "e2e")
    os.makedirs(e2e_dir, exist_ok=True)
    origin = srv.base
    robots = f"{origin}/robots.txt"
    tag = f"{tool}-{n_urls}"
    log_path = os.path.join(e2e_dir, f"{tag}.log")
    res: dict = {"tool": tool, "expected_urls": n_urls}
    rerun = tool == "ours-rerun"
    if tool in OURS:
        jsonl = os.path.join(e2e_dir, f"{tag}.jsonl")
        if os.path.exists(jsonl):
            os.remove(jsonl)
        state = ""
        if tool in ("ours", "ours-rerun", "ours-default"):
            state = os.path.join(e2e_dir, f"{tag}.sqlite")
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(state + suffix):
                    os.remove(state + suffix)
        cmd = [
            PY,
            "-m",
            "scrapy",
            "crawl",
            "sitemap",
            "-a",
            f"origin={origin}",
            *(
                () if tool == "ours-default" else ("-a", "sample=off")
            ),  # discovery only, as the peers do
            "-O",
            jsonl,
            "-s",
            "LOG_LEVEL=INFO",
            "-s",
            "TELNETCONSOLE_ENABLED=False",
            "-s",
            "REMOTE_CONTROL_ENABLED=False",
            "-s",
            f"SITEMAPCRAWL_STATE_PATH={state}",
        ]
        cwd = REPO_ROOT
    elif tool == "stock-scrapy":
        cmd = [PY, os.path.join(BENCH, "peers", "stock_sitemapspider.py"), robots]
        cwd = e2e_dir  # outside the project: plain settings
    elif tool == "scrapy-items":
        jsonl = os.path.join(e2e_dir, f"{tag}.jsonl")
        cmd = [PY, os.path.join(BENCH, "peers", "scrapy_items_spider.py"), robots, jsonl]
        cwd = e2e_dir
    elif tool == "usp":
        cmd = [PY, os.path.join(BENCH, "peers", "usp_tree.py"), origin + "/"]
        cwd = e2e_dir
    elif tool == "advertools":
        cmd = [PY, os.path.join(BENCH, "peers", "advertools_df.py"), robots]
        cwd = e2e_dir
    else:
        raise ValueError(tool)
    res["command"] = cmd
    if rerun:
        # The first run, not measured: the measured one finds its state file (conditional
        # requests answered 304, bodies replayed from the state).
        log(f"e2e: {tag}: first run (not measured) ...")
        subprocess.run(
            cmd,
            cwd=cwd,
            env=child_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
        os.remove(jsonl)
    srv.stats(reset=True)
    res["load_before"] = loadavg()
    server_cpu = srv.cpu_s()
    log(f"e2e: {tag} ...")
    m = run_monitored(cmd, cwd, timeout, log_path)
    res.update(m)
    res["load_after"] = loadavg()
    # The server's own CPU time over the run: evidence that it was never the bottleneck.
    after = srv.cpu_s()
    res["server_cpu_s"] = (
        round(after - server_cpu, 3) if after is not None and server_cpu is not None else None
    )
    st = srv.stats(reset=True)
    res["server"] = st
    res["requests"] = st["total"]
    res["requests_404"] = st["status"].get("404", 0)
    expected_req = manifest["expected_requests"]
    paths = st["paths"]
    if tool == "ours-default":  # the sitemap requests exactly, and the pages apart
        res["page_requests"] = sum(v for k, v in paths.items() if k not in expected_req)
        paths = {k: v for k, v in paths.items() if k in expected_req}
    res["requests_exact"] = paths == expected_req
    if not res["requests_exact"]:
        extra = {k: v for k, v in paths.items() if expected_req.get(k) != v}
        missing = [k for k in expected_req if k not in paths]
        res["requests_diff"] = {"unexpected_or_repeated": extra, "missing": missing}
    # URLs found
    urls = None
    try:
        with open(log_path, errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    if tool in OURS:
        stats = dict(LOG_STAT.findall(text))
        res["finish_reason"] = stats.get("finish_reason")
        res["item_scraped_count"] = (
            int(stats["item_scraped_count"]) if "item_scraped_count" in stats else None
        )
        if os.path.exists(jsonl):
            urls = count_lines(jsonl)
            res["jsonl_bytes"] = os.path.getsize(jsonl)
        if state and os.path.exists(state):
            res["state_bytes"] = sum(
                os.path.getsize(state + suffix)
                for suffix in ("", "-wal")
                if os.path.exists(state + suffix)
            )
    else:
        mres = re.findall(r"^RESULT (\{.*\})$", text, flags=re.M)
        if mres:
            r = json.loads(mres[-1])
            res["peer_result"] = r
            urls = r.get("urls")
        if tool == "scrapy-items" and os.path.exists(jsonl):
            urls = count_lines(jsonl)
            res["jsonl_bytes"] = os.path.getsize(jsonl)
            os.remove(jsonl)
    res["urls"] = urls
    if m["timed_out"]:
        res["status"] = f"failed (timeout {timeout:.0f} s)"
    elif m["returncode"] != 0 or not urls or res.get("finish_reason") not in (None, "finished"):
        why = failure_reason(log_path)
        if res.get("finish_reason") not in (None, "finished"):
            why = f"finish_reason={res['finish_reason']}: {why}"
        res["status"] = f"failed ({why})"
    else:
        res["status"] = "ok"
    log(
        f"e2e: {tag}: {res['status']}, urls={urls}, wall={m['wall_s']:.1f}s cpu={m['cpu_s']:.1f}s "
        f"peak={mb(m['peak_rss'])}MB requests={res['requests']}"
    )
    return res


def e2e_bench(
    srv: StaticServer,
    n_urls: int,
    manifest: dict,
    *,
    tools: list[str],
    timeout: float,
    results: dict,
    repeat: int = 1,
) -> None:
    say(
        f"## End-to-end discovery from robots.txt: {n_urls:,} URLs "
        f"(robots.txt → index → {manifest['children']} gzipped children)"
    )
    say()
    every: dict[str, list[dict]] = {t: [] for t in tools}
    for _ in range(max(1, repeat)):  # rounds over all tools, so drift hits each alike
        for t in tools:
            every[t].append(e2e_one(t, srv, n_urls, manifest, timeout))
    runs = {}
    for t, done in every.items():
        ok_runs = sorted((r for r in done if r["status"] == "ok"), key=lambda r: r["cpu_s"])
        # the run with the median CPU time stands for the tool (all its figures are one run's)
        runs[t] = dict(ok_runs[len(ok_runs) // 2]) if ok_runs else done[-1]
        runs[t]["cpu_s_all"] = [round(r["cpu_s"], 2) for r in done]
    if repeat > 1:
        say(
            f"{repeat} rounds over every tool; each row is the run with the median CPU time "
            "(all its figures from that run), and `CPU s, every run` lists them all."
        )
        say()
    exp_req = len(manifest["expected_requests"])
    rows = []
    for t, r in runs.items():
        ok = r["status"] == "ok"
        req = f"{r['requests']}" + (f" ({r['requests_404']}x404)" if r["requests_404"] else "")
        extra = ""
        if t in OURS:
            extra = (
                f"finish_reason={r.get('finish_reason')}, "
                f"item_scraped_count={r.get('item_scraped_count')}"
            )
            if r.get("state_bytes"):
                extra += f", state file {r['state_bytes'] / n_urls:,.0f} B/URL"
            if r.get("page_requests") is not None:
                extra += f", {r['page_requests']} page requests"
        elif r.get("peer_result"):
            extra = ", ".join(f"{k}={v}" for k, v in r["peer_result"].items() if k != "urls")
        flag = "" if (r["urls"] == n_urls) else (" ⚠" if r["urls"] is not None else "")
        rows.append(
            [
                t,
                r["status"] if not ok else "ok",
                (f"{r['urls']:,}{flag}" if r["urls"] is not None else "-"),
                fnum(r["wall_s"], 2),
                fnum(r["cpu_s"], 2),
                f"{r['urls'] / r['wall_s']:,.0f}" if ok else "-",
                mb(r["peak_rss"]),
                req,
                "yes" if r["requests_exact"] else "no",
                f"{(r['load_before'] or ['-'])[0]}→{(r['load_after'] or ['-'])[0]}",
                fnum(r["server_cpu_s"], 2) if r.get("server_cpu_s") is not None else "-",
                " / ".join(f"{c:.1f}" for c in r["cpu_s_all"]),
                extra,
            ]
        )
    table(
        [
            "tool",
            "status",
            "URLs",
            "wall s",
            "CPU s",
            "URLs/s",
            "peak RSS MB",
            f"requests (expected {exp_req})",
            "exactly robots+index+children once",
            "load 1-min",
            "server CPU s",
            "CPU s, every run",
            "details",
        ],
        rows,
    )
    o = runs.get("ours")
    if o and o["status"] == "ok":
        say("Ratios *peer ÷ ours* (> 1: ours is faster / smaller):")
        say()
        table(
            ["peer", "wall", "CPU", "peak RSS"],
            [
                [
                    t,
                    ratio(r["wall_s"], o["wall_s"]),
                    ratio(r["cpu_s"], o["cpu_s"]),
                    ratio(r["peak_rss"], o["peak_rss"]),
                ]
                for t, r in runs.items()
                if t != "ours" and r["status"] == "ok"
            ],
        )
    elif o:
        say(f"ours: {o['status']}")
        say()
    results.setdefault("e2e", {})[str(n_urls)] = runs


def scaling_bench(
    sizes: list[int], servers: dict, manifests: dict, *, timeout: float, results: dict, stamp: str
) -> None:
    say("## Scaling of ours (end-to-end)")
    say()
    rows, data = [], []
    for n in sizes:
        r = e2e_one("ours", servers[n], n, manifests[n], timeout)
        ok = r["status"] == "ok"
        d = {
            "urls_expected": n,
            "urls": r["urls"],
            "status": r["status"],
            "wall_s": round(r["wall_s"], 3),
            "cpu_s": round(r["cpu_s"], 3),
            "urls_per_s": round(r["urls"] / r["wall_s"]) if ok else None,
            "urls_per_cpu_s": round(r["urls"] / r["cpu_s"]) if ok and r["cpu_s"] else None,
            "peak_rss_mb": round(r["peak_rss"] / 2**20, 1),
            "requests": r["requests"],
            "requests_exact": r["requests_exact"],
        }
        data.append(d)
        rows.append(
            [
                f"{n:,}",
                d["status"],
                f"{r['urls']:,}" if r["urls"] is not None else "-",
                fnum(r["wall_s"], 2),
                fnum(r["cpu_s"], 2),
                f"{d['urls_per_s']:,}" if ok else "-",
                f"{d['urls_per_cpu_s']:,}" if ok else "-",
                mb(r["peak_rss"]),
                r["requests"],
                "yes" if r["requests_exact"] else "no",
            ]
        )
    table(
        [
            "site URLs",
            "status",
            "URLs found",
            "wall s",
            "CPU s",
            "URLs/s",
            "URLs/CPU-s",
            "peak RSS MB",
            "requests",
            "exact",
        ],
        rows,
    )
    csv_path = os.path.join(OUT, f"scaling-{stamp}.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(data[0]))
        w.writeheader()
        w.writerows(data)
    say(f"CSV: `{os.path.relpath(csv_path, REPO_ROOT)}`")
    try:
        import matplotlib  # optional

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        ok = [d for d in data if d["status"] == "ok"]
        if ok:
            fig, ax1 = plt.subplots(figsize=(6, 4))
            xs = [d["urls_expected"] for d in ok]
            ax1.plot(xs, [d["urls_per_s"] for d in ok], "o-", label="URLs per wall second")
            ax1.plot(xs, [d["urls_per_cpu_s"] for d in ok], "^-", label="URLs per CPU second")
            ax1.legend(loc="lower left", fontsize="small")
            ax1.set_xscale("log")
            ax1.set_xlabel("site URLs")
            ax1.set_ylabel("throughput (URLs/s)")
            ax1.set_ylim(bottom=0)
            ax2 = ax1.twinx()
            ax2.plot(
                xs, [d["peak_rss_mb"] for d in ok], "s--", color="tab:red", label="peak RSS MB"
            )
            ax2.set_ylabel("peak RSS MB (dashed)")
            ax2.set_ylim(bottom=0)
            fig.tight_layout()
            png = csv_path[:-4] + ".png"
            fig.savefig(png, dpi=100)
            say(f"Plot: `{os.path.relpath(png, REPO_ROOT)}`")
    except ImportError:
        say("(matplotlib not installed: no plot)")
    say()
    results["scaling"] = data


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="3 runs, 50k files only, 100,000-URL site for end-to-end",
    )
    ap.add_argument(
        "--scaling",
        action="store_true",
        help="only the scaling mode: ours end-to-end at 10k / 100k / 1M URLs",
    )
    ap.add_argument("--parsers-only", action="store_true")
    ap.add_argument("--e2e-only", action="store_true")
    ap.add_argument(
        "--e2e-runs",
        type=int,
        default=1,
        help="rounds over every end-to-end tool; the median-CPU run of each is reported",
    )
    ap.add_argument(
        "--no-scaling",
        action="store_true",
        help="the full run without its scaling part (ours at 10k / 100k / 1M URLs)",
    )
    ap.add_argument(
        "--runs", type=int, default=None, help="parser repetitions (default 5, --quick 3)"
    )
    ap.add_argument("--parsers", default=",".join(PARSERS), help="comma-separated subset")
    ap.add_argument(
        "--files",
        default=None,
        help="parser benchmark files, comma-separated (default: all; --quick: the small ones)",
    )
    ap.add_argument(
        "--tools", default=",".join(E2E_TOOLS), help="end-to-end tools, comma-separated subset"
    )
    ap.add_argument("--site-urls", type=int, default=None, help="override the end-to-end site size")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--port", type=int, default=DEFAULT_PORT, help="first preferred loopback port")
    ap.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="per end-to-end run timeout, s (default 900, --quick 300)",
    )
    a = ap.parse_args(argv)

    runs = a.runs or (3 if a.quick else 5)
    e2e_urls = a.site_urls or (100_000 if a.quick else 1_000_000)
    timeout = a.timeout or (300.0 if a.quick else 900.0)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    os.makedirs(OUT, exist_ok=True)
    corpus_root = os.path.join(OUT, "corpus", f"seed{a.seed}")

    results: dict = {"started": stamp, "args": vars(a)}
    info = machine_info()
    info["load_start"] = loadavg()
    results["machine"] = info
    mode = "scaling" if a.scaling else ("quick" if a.quick else "full")
    if a.e2e_runs < 1:
        ap.error("--e2e-runs must be 1 or more")
    say(f"# sitemapcrawl benchmark — {stamp} ({mode})")
    say()

    do_parsers = not a.scaling and not a.e2e_only
    do_e2e = not a.scaling and not a.parsers_only
    # The full run (no mode option) is the whole suite: parsers, end to end, scaling.
    do_scaling = a.scaling or not (
        a.quick or a.no_scaling or a.parsers_only or a.e2e_only or a.site_urls
    )
    servers: dict = {}
    manifests: dict = {}
    try:
        t0 = time.perf_counter()
        if do_parsers:
            # server first (its port is in the generated URLs), then generate
            srv = StaticServer(os.path.join(corpus_root, "files"), a.port)
            servers["files"] = srv
            mf = generate(
                ["--out", srv.root, "--base", srv.base, "--seed", str(a.seed), "--no-site"],
                os.path.join(srv.root, "manifest.json"),
            )
        sizes = []
        if do_e2e:
            sizes = [e2e_urls]
        if do_scaling:
            sizes = sorted({*sizes, 10_000, 100_000, 1_000_000})
        for n in sizes:
            root = os.path.join(corpus_root, f"site-{n}")
            s = StaticServer(root, a.port + SITE_PORT_OFFSET.get(n, 4))
            servers[n] = s
            manifests[n] = generate(
                [
                    "--out",
                    root,
                    "--site-out",
                    root,
                    "--base",
                    s.base,
                    "--seed",
                    str(a.seed),
                    "--site-urls",
                    str(n),
                    "--no-files",
                ],
                os.path.join(root, "manifest.json"),
            )
        results["corpus_s"] = round(time.perf_counter() - t0, 2)

        rows = [
            ["nproc (affinity)", f"{info['nproc']} ({info['affinity']})"],
            ["CPU", info.get("cpu", "?")],
            ["memory GiB", info.get("mem_total_gib", "?")],
            ["python", f"{info['python']} ({PY})"],
            ["platform", info["platform"]],
            [
                "git HEAD",
                f"{info.get('git_head')}"
                + (" + uncommitted changes" if info.get("git_dirty") else ""),
            ],
            ["load average at start (1/5/15 min)", " / ".join(map(str, info["load_start"]))],
            ["psutil tree sampling", "yes (50 ms)" if psutil else "no (ru_maxrss only)"],
            ["corpus ready in", f"{results['corpus_s']} s (cached per seed+base)"],
        ]
        rows += [[p, v or "not installed"] for p, v in info["packages"].items()]
        say("## Machine")
        say()
        table(["", ""], rows)

        if do_parsers:
            parser_bench(
                servers["files"].root,
                mf,
                servers["files"].base,
                quick=a.quick,
                runs=runs,
                parsers=[p for p in a.parsers.split(",") if p],
                results=results,
                files=[f for f in (a.files or "").split(",") if f],
            )
        if do_e2e:
            e2e_bench(
                servers[e2e_urls],
                e2e_urls,
                manifests[e2e_urls],
                tools=[t for t in a.tools.split(",") if t],
                timeout=timeout,
                results=results,
                repeat=a.e2e_runs,
            )
        if do_scaling:
            scaling_bench(
                [10_000, 100_000, 1_000_000],
                servers,
                manifests,
                timeout=timeout,
                results=results,
                stamp=stamp,
            )
    finally:
        for s in servers.values():
            s.stop()
        info["load_end"] = loadavg()
        say(
            f"Load average at start: {' / '.join(map(str, info['load_start']))}; "
            f"at end: {' / '.join(map(str, info['load_end']))} (nproc {info['nproc']}). "
            "If another heavy job ran meanwhile, compare CPU times rather than wall times."
        )
        md_path = os.path.join(OUT, f"results-{stamp}.md")
        with open(md_path, "w") as f:
            f.write("\n".join(MD) + "\n")
        with open(os.path.join(OUT, f"results-{stamp}.json"), "w") as f:
            json.dump(results, f, indent=1, default=str)
        print(f"\nwritten: {os.path.relpath(md_path, REPO_ROOT)} and .json", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
