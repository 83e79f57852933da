"""`make soak SERVER=x DURATION=10m`: a long constant-rate run, looking for drift.

1. Build and start the stack natively, pinned to the server cores (as in a
   benchmark); the load tools run on the client cores.
2. Peak: after an unrecorded warm-up until steady (measure/steady.py, at
   most 30 s) and, for a JIT stack, until its compiler is quiet (measure/jit.py,
   as a bench waits for it), a short closed-loop wrk run
   (64 connections, 5 s) measures the stack's peak rate on GET /.
3. Soak: oha at a constant 70% of that peak, latency corrected for
   coordinated omission, run as back-to-back windows of one minute (a tenth
   of the duration when it is shorter than ten minutes), so every window has
   its own error count and p99. RSS of the server's process tree is read
   after each window.
4. Report: errors (any window), p99 of the first window vs the last, and RSS
   growth over the second half of the run (the first half is where runtimes
   size their heaps: the JVM's adaptive sizing grows for tens of seconds,
   then stays flat; a leak keeps growing), with the growth since the first
   window shown beside it. It fails on any error or on RSS growth above 10%
   over the second half.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from pathlib import Path

from loadtest.core.errors import StepError
from loadtest.core.knobs import KnobError, default_cpus, parse_cpus
from loadtest.core.manifest import REPO_ROOT, Manifest, load_all, stack_list
from loadtest.core.outcomes import skipped_banner, tally
from loadtest.core.runner import Limits
from loadtest.core.verdict import WARMUP_WINDOW_S
from loadtest.host.ports import port_or_free
from loadtest.measure import jit, steady
from loadtest.measure.metrics import tree_rss
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.base import LoadResult, LoadSpec, ToolError
from loadtest.measure.tools.oha import install_oha
from loadtest.runners.lifecycle import running
from loadtest.runners.native import NativeRunner

OUTPUT_DIR = REPO_ROOT / ".build" / "soak"
RATE_SHARE = 0.70
RSS_GROWTH_LIMIT = 0.10
CONNECTIONS = 64
WARMUP_BOUND_S = 30.0
PEAK_S = 5.0
WINDOWS = 10  # at least; a window is at most WINDOW_MAX_S long
WINDOW_MAX_S = 60.0
PATH = "/"


def parse_duration(text: str) -> float:
    """'30s', '10m', '1h', '1m30s' or plain seconds -> seconds."""
    text = str(text).strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)([hms])", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"bad duration {text!r}: use e.g. 30s, 10m, 1h or seconds")
    return sum(float(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)


def windows(duration: float) -> list[float]:
    """Back-to-back window lengths: WINDOW_MAX_S each, or duration/10 when shorter."""
    length = min(WINDOW_MAX_S, duration / WINDOWS)
    count = max(WINDOWS, round(duration / length))
    return [duration / count] * count


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "soak",
        help="constant rate at 70%% of the peak for a long time; fails on errors or RSS growth",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--servers", required=True, help="stack name(s), comma-separated")
    parser.add_argument("--duration", default="10m", help="e.g. 30s, 10m (default 10m)")
    parser.add_argument("--output", type=Path, default=OUTPUT_DIR, help="folder for the JSON")
    parser.add_argument("--server-cpus", help="server cores, e.g. 0 (default: the first half)")
    parser.add_argument("--client-cpus", help="load tool cores, e.g. 1 (default: the rest)")
    parser.set_defaults(func=cmd_soak)


def cmd_soak(args: argparse.Namespace) -> int:
    server_default, client_default = default_cpus()
    try:
        duration = parse_duration(args.duration)
        cores = (
            parse_cpus(args.server_cpus) if args.server_cpus else server_default,
            parse_cpus(args.client_cpus) if args.client_cpus else client_default,
        )
    except (ValueError, KnobError) as exc:
        print(f"soak: {exc}", file=sys.stderr)
        return 2
    if duration < 10:
        print("soak: DURATION must be at least 10 s", file=sys.stderr)
        return 2
    wrk, oha = get_tool("wrk"), get_tool("oha")
    if not oha.available():
        install_oha()
    for tool, hint in ((wrk, "make bootstrap"), (oha, "scripts/install-oha.sh")):
        if not tool.available():
            print(f"soak: load tool {tool.name} not found; install it with {hint}", file=sys.stderr)
            return 2
    args.output.mkdir(parents=True, exist_ok=True)
    runner = NativeRunner()
    results = []
    interrupted = False
    try:
        for manifest in load_all(stack_list(args.servers)):
            results.append(soak_stack(runner, manifest, duration, args.output, cores))
    except KeyboardInterrupt:  # the running stack was stopped; report the finished ones
        interrupted = True
        print(f"soak: interrupted; reporting the {len(results)} stack(s) already done")
    print()
    print(summary(results))
    failed = [r for r in results if r["status"] == "failed"]
    skipped = [r for r in results if r["status"] == "skipped"]
    for line in skipped_banner([(r["stack"], r["reason"]) for r in skipped]):
        print(line)
    print(tally("soak", len(results), len(failed), len(skipped)))
    if interrupted:
        return 130
    return 1 if failed else 0


def soak_stack(runner, manifest: Manifest, duration: float, out_dir: Path, cores) -> dict:
    """One stack soaked on `cores` = (server cores, client cores); its result record."""
    say = lambda text: print(f"[{manifest.name}] {text}", flush=True)  # noqa: E731
    result = {"stack": manifest.name, "status": "failed", "reason": "", "duration_s": duration}
    reason = runner.unavailable_reason(manifest)
    if reason:
        say(f"SKIPPED: {reason}")
        result.update(status="skipped", reason=reason)
        return result
    server_cpus, client_cpus = cores
    result.update(server_cpus=list(server_cpus), client_cpus=list(client_cpus))
    raw = out_dir / manifest.name
    try:
        port = port_or_free(manifest.port)
        with running(runner, manifest, Limits(cpus=server_cpus), port, say) as up:
            result.update(soak_server(up.server, manifest, duration, raw, client_cpus, say))
    except (StepError, ToolError) as exc:
        result["reason"] = exc.explain() if isinstance(exc, StepError) else str(exc)
        say(result["reason"])
    if not result["reason"]:
        result["status"] = "passed" if not result["failures"] else "failed"
        result["reason"] = "; ".join(result["failures"])
    say(f"{result['status'].upper()} {result['reason']}".rstrip())
    result["finished"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    try:
        (out_dir / f"{manifest.name}.json").write_text(json.dumps(result, indent=1))
    except OSError as exc:  # a full or read-only disk must not hide the figures
        say(f"writing the results failed: {exc}")
    return result


def soak_server(server, manifest, duration, raw: Path, client_cpus, say) -> dict:
    """Warm up, find the peak, then hold 70% of it window by window; the figures and verdict."""
    url = server.base_url + PATH
    wrk = get_tool("wrk")
    window = LoadSpec(url, CONNECTIONS, duration=WARMUP_WINDOW_S, client_cpus=client_cpus)
    compiler = jit.watch(manifest.jit, server.pids(), client_cpus) if manifest.jit else None
    try:
        warmed = warm_up(lambda: wrk.run(window, raw / "warmup").rps or None, compiler)
    finally:
        if isinstance(compiler, jit.JitWatch):
            compiler.close()
    say(warmed_text(warmed))
    peak = wrk.run(
        LoadSpec(url, CONNECTIONS, duration=PEAK_S, client_cpus=client_cpus), raw / "peak"
    )
    if not peak.ok or peak.rps <= 0:
        raise StepError(manifest.name, "peak", peak.problem or "wrk measured no requests")
    rate = round(peak.rps * RATE_SHARE)
    result = {"peak_rps": round(peak.rps), "rate": rate, "peak_errors": peak.errors_total,
              "warmup": warmed.to_dict()}  # fmt: skip
    plan = windows(duration)
    say(f"peak {peak.rps:,.0f} req/s (wrk, {CONNECTIONS} connections, {PEAK_S:g} s); "
        f"soak at {rate:,} req/s for {duration:g} s in {len(plan)} windows of {plan[0]:g} s")  # fmt: skip
    records = []
    for i, length in enumerate(plan):
        spec = LoadSpec(url, CONNECTIONS, duration=length, rate=rate, client_cpus=client_cpus)
        load = get_tool("oha").run(spec, raw / f"window-{i + 1:03d}")
        if not server.is_alive():
            raise StepError(manifest.name, "soak", "the server died", server.output_tail())
        records.append(window_record(i, load, tree_rss(server.pids())))
        w = records[-1]
        say(f"window {i + 1}/{len(plan)}: {w['rps']:,.0f} req/s, p99 {_ms(w['p99_ms'])}, "
            f"errors {w['errors']}, RSS {w['rss'] / 1e6:.1f} MB")  # fmt: skip
    result["windows"] = records
    result.update(verdict(records, rate))
    return result


def warm_up(run_window, compiler: jit.JitWatch | str | None) -> steady.WarmUp:
    """Unrecorded load until the rate is steady and, for a JIT stack, its compiler
    quiet, as a bench's warm-up (measure/steady.py). A JIT measured cold sets the
    peak, so the soak's rate, far below what the stack sustains: spring-webflux's
    windows agreed after 5 s at 4,213 req/s, a tenth of its warm rate."""
    return steady.warm_up_watched(run_window, WARMUP_BOUND_S, compiler)


def warmed_text(warmed: steady.WarmUp) -> str:
    text = f"warm-up {warmed.seconds:g} s" + ("" if warmed.steady else " (not steady)")
    if warmed.cold:
        last_ms = warmed.jit_compile_ms[-1]
        return f"{text}; COLD: its JIT still spent {last_ms:g} ms of the last second compiling"
    if warmed.jit_quiet:
        return f"{text}; its JIT quiet ({warmed.jit_signal})"
    if warmed.jit_signal:
        return f"{text}; JIT not read: {warmed.jit_signal}"
    return text


def window_record(index: int, load: LoadResult, rss: int) -> dict:
    return {
        "window": index + 1,
        "requests": load.requests,
        "seconds": load.duration_s,
        "rps": load.rps,
        "p50_ms": load.latency_ms.get("p50"),
        "p99_ms": load.latency_ms.get("p99"),
        "max_ms": load.latency_ms.get("max"),
        "errors": load.errors_total if load.ok else None,
        "error_kinds": {k: v for k, v in load.errors.items() if v},
        "status_counts": load.status_counts,
        "problem": load.problem,
        "notes": load.notes[2:],  # beyond the two fixed oha notes
        "rss": rss,
    }


def verdict(records: list[dict], rate: float) -> dict:
    """The three figures and the failures: errors, p99 drift, RSS growth."""
    errors = sum(r["errors"] or 0 for r in records)
    broken = [r["window"] for r in records if r["errors"] is None]
    first, last = records[0], records[-1]
    middle = records[max(0, len(records) // 2 - 1)]  # the end of the first half
    growth = _growth(middle["rss"], last["rss"])
    growth_total = _growth(first["rss"], last["rss"])
    drift = (
        last["p99_ms"] / first["p99_ms"] if first["p99_ms"] and last["p99_ms"] is not None else None
    )
    seconds = sum(r["seconds"] for r in records)
    achieved = sum(r["requests"] for r in records) / seconds if seconds else 0.0
    failures = []
    if errors:
        failures.append(f"{errors} error(s)")
    if broken:
        failures.append(f"no oha report for window(s) {broken}")
    if growth is None or growth > RSS_GROWTH_LIMIT:
        failures.append(
            f"RSS growth {_pct(growth)} over the second half (limit {RSS_GROWTH_LIMIT:.0%})"
        )
    return {
        "errors": errors,
        "p99_first_ms": first["p99_ms"],
        "p99_last_ms": last["p99_ms"],
        "p99_drift": drift,
        "rss_first": first["rss"],
        "rss_middle": middle["rss"],
        "rss_last": last["rss"],
        "rss_growth": growth,  # second half: judged
        "rss_growth_total": growth_total,  # from the end of the first window: reported
        "achieved_rps": achieved,
        "rate_kept": achieved >= 0.95 * rate,
        "failures": failures,
    }


def summary(results: list[dict]) -> str:
    rows = [("stack", "result", "peak", "rate", "errors", "p99 first", "p99 last", "RSS growth")]
    for r in results:
        if "windows" not in r:
            rows.append((r["stack"], r["status"].upper(), "-", "-", "-", "-", "-", "-"))
            continue
        rows.append(
            (
                r["stack"],
                r["status"].upper(),
                f"{r['peak_rps']:,}/s",
                f"{r['rate']:,}/s" + ("" if r["rate_kept"] else " (not kept)"),
                str(r["errors"]),
                _ms(r["p99_first_ms"]),
                _ms(r["p99_last_ms"]),
                f"{_pct(r['rss_growth'])} ({r['rss_middle'] / 1e6:.0f} -> "
                f"{r['rss_last'] / 1e6:.0f} MB; {_pct(r['rss_growth_total'])} since window 1)",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("")
    lines.append("p99 first/last: first and last window (a minute, or a tenth of a shorter run);")
    lines.append("RSS growth: over the second half (judged; the first half is where runtimes")
    lines.append("size their heaps), and from the end of the first window (reported).")
    return "\n".join(lines)


def _growth(before: int | None, after: int | None) -> float | None:
    return (after - before) / before if before and after is not None else None


def _ms(value) -> str:
    return "-" if value is None else f"{value:.2f} ms"


def _pct(value) -> str:
    return "-" if value is None else f"{value:+.1%}"

