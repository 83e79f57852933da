"""`make lab LAB=<n>`: run a teaching lab's measurements (docs/labs/).

Labs 1 to 4 are bench runs with their own profile (`lab1-body-size`, ...
in profiles.toml): the same verification, pinning, interleaved rounds,
statistics and report as `make bench`. Lab 5 pauses a running stack with
SIGSTOP/SIGCONT for `stall_for` seconds, `stall_at` seconds into runs of the
same length under oha (open loop, with and without latency correction) and
wrk (closed loop), and writes its own short report.

Environment knobs (SERVERS, DURATION, CONNECTIONS, ...) override a lab's
profile as they override a bench profile. PROFILE=smoke (or --smoke)
shrinks a lab to a quick check of the whole path: the docs test runs every
lab that way.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import math
import os
import re
import signal
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from loadtest.bench.results import RESULTS_ROOT, git_info, host_info, new_run_id, write_json_atomic
from loadtest.bench.run import Bench
from loadtest.core.errors import StepError
from loadtest.core.knobs import KnobError, Knobs, load_profiles, resolve
from loadtest.core.manifest import REPO_ROOT, ManifestError, load, stack_names
from loadtest.core.runner import Limits
from loadtest.core.verdict import WARMUP_WINDOW_S
from loadtest.host.ports import port_or_free
from loadtest.measure import steady
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.base import LoadSpec
from loadtest.measure.tools.oha import Oha, install_oha
from loadtest.report.png import plt
from loadtest.report.run_report import run_and_report
from loadtest.runners.conformance import run_conformance
from loadtest.runners.native import NativeRunner

SMOKE_DURATION_S = 1.0
SMOKE_AB_REQUESTS = 300
# Lab 5 under PROFILE=smoke: short runs that still show a 1 s stall clearly.
SMOKE_LAB5 = {"duration": 4.0, "stall_at": 1.5, "rate": 1000.0}
LAB5_REPORT = "lab5.md"


@dataclass(frozen=True)
class Lab:
    number: int
    profile: str
    page: str
    title: str


LABS = {
    lab.number: lab
    for lab in (
        Lab(1, "lab1-body-size", "docs/labs/1-body-size.md", "Body size vs throughput"),
        Lab(2, "lab2-headers", "docs/labs/2-headers.md", "Headers matter"),
        Lab(3, "lab3-workers", "docs/labs/3-workers.md", "Sync vs async workers"),
        Lab(4, "lab4-cpu-cap", "docs/labs/4-cpu-cap.md", "Saturation under a CPU cap"),
        Lab(
            5,
            "lab5-coordinated-omission",
            "docs/labs/5-coordinated-omission.md",
            "Coordinated omission",
        ),
    )
}


def register(sub: argparse._SubParsersAction) -> None:
    lab = sub.add_parser(
        "lab",
        help="run a teaching lab's measurements (docs/labs/)",
        description="Knobs in the environment (SERVERS=..., DURATION=...) override the lab's "
        "profile; PROFILE=smoke shrinks the lab to a quick check.",
    )
    lab.add_argument("lab", nargs="?", help="lab number, 1 to 5")
    lab.add_argument("--list", action="store_true", help="list the labs")
    lab.add_argument("--smoke", action="store_true", help="a quick check (as PROFILE=smoke)")
    lab.add_argument("--results-dir", type=Path, default=RESULTS_ROOT, help=argparse.SUPPRESS)
    lab.set_defaults(func=cmd_lab)


def list_labs() -> str:
    lines = ["Labs (make lab LAB=<n>; each page has the goal, what to look for and the questions):"]
    for lab in LABS.values():
        lines.append(f"  {lab.number}  {lab.title:<28} {lab.page}  (profile {lab.profile})")
    return "\n".join(lines)


def cmd_lab(args: argparse.Namespace) -> int:
    if args.list or not args.lab:
        print(list_labs())
        return 0 if args.list else 2
    try:
        lab = LABS[int(args.lab)]
    except (ValueError, KeyError):
        print(f"lab: no lab {args.lab!r}\n{list_labs()}")
        return 2
    profile = os.environ.get("PROFILE", "")
    smoke = args.smoke or profile == "smoke"
    if profile and profile != "smoke":
        print(f"lab: PROFILE={profile} ignored; lab {lab.number} uses profile {lab.profile}")
    env = {k: v for k, v in os.environ.items() if k != "PROFILE"}
    try:
        knobs = resolve(lab.profile, env, {})
        if smoke:
            knobs = shrink_for_smoke(knobs)
    except (KnobError, ManifestError) as exc:
        print(f"lab {lab.number}: {exc}")
        return 2
    print(f"Lab {lab.number}: {lab.title} ({lab.page})" + (" [smoke]" if smoke else ""))
    if lab.number == 5:
        return run_lab5(knobs, args.results_dir, smoke)
    return run_bench_lab(lab, knobs, args.results_dir)


def runnable_stacks(names: list[str]) -> list[str]:
    """The stacks of a list that exist here and whose toolchain is present, in order."""
    runner = NativeRunner()
    known = set(stack_names())
    return [n for n in names if n in known and not runner.unavailable_reason(load(n))]


def shrink_for_smoke(knobs: Knobs) -> Knobs:
    """A lab's whole path in seconds: one stack, the extreme levels, 1 s runs, no ceiling."""
    changes = {
        "duration": min(knobs.duration, SMOKE_DURATION_S),
        "warmup": 0,
        "repeat": 1,
        "calibration": False,
        "requests": {k: min(v, SMOKE_AB_REQUESTS) for k, v in knobs.requests.items()},
    }
    if len(knobs.connections) > 2:
        changes["connections"] = [min(knobs.connections), max(knobs.connections)]
    if len(knobs.server_cpu_quota) > 2:
        changes["server_cpu_quota"] = [knobs.server_cpu_quota[0], knobs.server_cpu_quota[-1]]
    if knobs.sources.get("servers") == "profile":
        runnable = runnable_stacks(knobs.servers)
        changes["servers"] = runnable[:1] or knobs.servers[:1]
    return dataclasses.replace(knobs, **changes)


def run_bench_lab(lab: Lab, knobs: Knobs, results_dir: Path) -> int:
    folder = results_dir / new_run_id(lab.profile)
    code = run_and_report(Bench(knobs, folder, Console(highlight=False, soft_wrap=True)))
    print(f"\nLab {lab.number} report: {_shown(folder / 'report.html')}")
    print(f"  tables: {_shown(folder / 'summary.md')}; charts: {_shown(folder / 'charts')}/")
    print(f"  what to look for and the questions: {lab.page}")
    return code


# ------------------------------------------------------------------ lab 5


@dataclass
class Stall:
    """Pause a process group for `length` s, `at` s after start(); always resumes it."""

    pgid: int
    at: float
    length: float
    stopped_at: float | None = None  # monotonic times
    resumed_at: float | None = None
    _cancel: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Stall:
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="stall", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        if self._cancel.wait(self.at):
            return
        os.killpg(self.pgid, signal.SIGSTOP)
        self.stopped_at = time.monotonic()
        try:
            self._cancel.wait(self.length)
        finally:
            os.killpg(self.pgid, signal.SIGCONT)
            self.resumed_at = time.monotonic()

    def finish(self) -> None:
        """Wait for the stall to end (resume at once if it is still waiting to start)."""
        if self._thread is None:
            return
        if self.stopped_at is None:
            self._cancel.set()
        self._thread.join()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGCONT)

    def measured(self) -> dict | None:
        if self.stopped_at is None or self.resumed_at is None:
            return None
        return {
            "started_s": round(self.stopped_at - self._started, 3),
            "length_s": round(self.resumed_at - self.stopped_at, 3),
        }


def oha_uncorrected():
    """oha at a constant rate, latency measured from when each request was actually sent."""
    class OhaUncorrected(Oha):
        def command(self, spec):
            return [arg for arg in super().command(spec) if arg != "--latency-correction"]

    return OhaUncorrected()


@dataclass(frozen=True)
class Lab5Run:
    key: str
    label: str
    tool: str  # "oha" | "oha-uncorrected" | "wrk"
    stall: bool


LAB5_RUNS = (
    Lab5Run("oha-baseline", "oha, open loop, corrected, no stall", "oha", False),
    Lab5Run("oha-corrected", "oha, open loop, corrected (--latency-correction)", "oha", True),
    Lab5Run("oha-uncorrected", "oha, open loop, not corrected", "oha-uncorrected", True),
    Lab5Run("wrk-baseline", "wrk 4, closed loop, no stall", "wrk", False),
    Lab5Run("wrk", "wrk 4, closed loop", "wrk", True),
)
# Run in every round; the others once. The summary takes the median over rounds.
REPEATED = ("oha-corrected", "oha-uncorrected")


ROUND_SUFFIX = re.compile(r"-r\d+$")


def ordered_runs(runs: dict) -> list[tuple[str, dict]]:
    """Records in the order of LAB5_RUNS, rounds in order (JSON files sort their keys)."""
    order = [run.key for run in LAB5_RUNS]

    def rank(key: str) -> tuple[int, str]:
        base = ROUND_SUFFIX.sub("", key)
        return (order.index(base) if base in order else len(order), key)

    return sorted(runs.items(), key=lambda item: rank(item[0]))


def lab5_schedule(rounds: int, baselines: bool) -> list[tuple[str, Lab5Run]]:
    """(record key, run) in order: baselines first, the stalled oha pair per round, wrk."""
    by_key = {run.key: run for run in LAB5_RUNS}
    schedule = [(k, by_key[k]) for k in ("oha-baseline",) if baselines]
    for r in range(1, rounds + 1):
        schedule += [(k if rounds == 1 else f"{k}-r{r}", by_key[k]) for k in REPEATED]
    schedule += [(k, by_key[k]) for k in ("wrk-baseline",) if baselines]
    schedule.append(("wrk", by_key["wrk"]))
    return schedule


def lab5_settings(knobs: Knobs, smoke: bool) -> dict:
    profile = load_profiles()["lab5-coordinated-omission"]
    rate = float(knobs.rate[0]) if knobs.rate and not knobs.rate[0].endswith("%") else 1000.0
    settings = {
        "stack": knobs.servers[0] if knobs.servers else "go-nethttp",
        "connections": knobs.connections[0],
        "rate": rate,
        "duration": knobs.duration,
        "warmup": knobs.warmup,
        "timeout": knobs.timeout,
        "stall_at": float(os.environ.get("STALL_AT") or profile.get("stall_at", 4.0)),
        "stall_for": float(os.environ.get("STALL_FOR") or profile.get("stall_for", 1.0)),
        "server_cpus": list(knobs.server_cpus),
        "client_cpus": list(knobs.client_cpus),
        "baselines": not smoke,
        "rounds": 1 if smoke else knobs.repeat,
    }
    if smoke:
        settings.update(SMOKE_LAB5, warmup=0.0)
        if knobs.sources.get("servers") == "profile":
            settings["stack"] = (runnable_stacks(knobs.servers) or knobs.servers)[0]
    if settings["stall_at"] + settings["stall_for"] >= settings["duration"]:
        raise KnobError("lab 5: the stall must end before the run does (STALL_AT, DURATION)")
    # Requests stuck in the stall must not time out: they are the point.
    settings["timeout"] = max(settings["timeout"], math.ceil(settings["stall_for"]) + 2)
    return settings


def coordinated_omission(settings: dict, folder: Path, say=print) -> dict:
    """Lab 5's measurements against one real stack; returns the report data.

    The stack is started pinned to the server cores and verified against the
    contract; each run loads it for `duration` s, and the stalled runs pause
    its whole process group for `stall_for` s from `stall_at` s.
    """
    manifest = load(settings["stack"])
    runner = NativeRunner()
    reason = runner.unavailable_reason(manifest)
    if reason:
        raise KnobError(f"lab 5: stack {manifest.name} cannot run here ({reason}); set SERVERS=")
    tools = {"oha": get_tool("oha"), "oha-uncorrected": oha_uncorrected(), "wrk": get_tool("wrk")}
    if not tools["oha"].available():
        install_oha()
    for name in ("oha", "wrk"):
        if not tools[name].available():
            raise KnobError(
                f"lab 5: {name} is not installed (scripts/install-oha.sh, make bootstrap)"
            )

    folder.mkdir(parents=True, exist_ok=True)
    say(f"[{manifest.name}] build")
    runner.build(manifest)
    affinity = os.sched_getaffinity(0)
    # The harness (and the stall thread) stays off the server cores while it measures.
    with contextlib.suppress(OSError):
        os.sched_setaffinity(0, settings["client_cpus"])
    try:
        return _measure_lab5(settings, folder, manifest, runner, tools, say)
    finally:
        os.sched_setaffinity(0, affinity)


def _measure_lab5(settings: dict, folder: Path, manifest, runner, tools: dict, say) -> dict:
    limits = Limits(cpus=tuple(settings["server_cpus"]))
    server = runner.start(manifest, limits, settings.get("port"))
    data = {
        "lab": 5,
        "settings": settings,
        "stack": manifest.provenance(),
        "tools": {n: tools[n].version() for n in ("oha", "wrk")},
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "git": git_info(),
        "host": host_info(),
        "runs": {},
    }
    try:
        ready = server.wait_ready()
        say(f"[{manifest.name}] ready in {ready:.1f} s on {server.base_url}; verifying")
        report = run_conformance(manifest, server.base_url)
        if report.get("failed"):
            raise KnobError(
                f"lab 5: {manifest.name} fails {report['failed']} conformance checks; "
                "it is not measured (make check SERVERS=" + manifest.name + ")"
            )
        url = server.base_url + "/"
        if settings["warmup"] > 0:
            warm = LoadSpec(
                url,
                settings["connections"],
                WARMUP_WINDOW_S,
                settings["timeout"],
                client_cpus=tuple(settings["client_cpus"]),
            )
            raw = folder / "raw" / "warmup"
            steady.warm_up(lambda: tools["wrk"].run(warm, raw).rps or None, settings["warmup"])
        for key, run in lab5_schedule(settings.get("rounds", 1), settings["baselines"]):
            spec = LoadSpec(
                url=url,
                connections=settings["connections"],
                duration=settings["duration"],
                timeout=settings["timeout"],
                threads=len(settings["client_cpus"]),
                rate=settings["rate"] if run.tool.startswith("oha") else None,
                client_cpus=tuple(settings["client_cpus"]),
            )
            stall = None
            if run.stall:
                stall = Stall(server.process.pid, settings["stall_at"], settings["stall_for"])
                stall.start()
            try:
                result = tools[run.tool].run(spec, folder / "raw" / key)
            finally:
                if stall:
                    stall.finish()
            record = result.to_dict()
            label = run.label if key == run.key else f"{run.label}, round {key.rsplit('-r', 1)[1]}"
            record.update(label=label, stall=stall.measured() if stall else None)
            data["runs"][key] = record
            say(f"  {label}: " + _latency_line(record))
            if not server.is_alive():
                raise KnobError(f"lab 5: {manifest.name} died during {run.key}")
            time.sleep(0.5)
        server.stop()
        server = None
    finally:
        if server is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.process.pid, signal.SIGCONT)
            server.kill()
    data["summary"] = lab5_summary(data["runs"])
    write_json_atomic(folder / "lab5.json", data)
    chart = lab5_chart(data, folder / "lab5-latency.png")
    (folder / LAB5_REPORT).write_text(lab5_markdown(data, chart))
    return data


def lab5_summary(runs: dict) -> dict:
    """Median p99 per measurement over its rounds, and what wrk did not send."""

    def p99s(key):
        values = [
            (run.get("latency_ms") or {}).get("p99")
            for name, run in runs.items()
            if ROUND_SUFFIX.sub("", name) == key
        ]
        return [round(v, 2) for v in values if v is not None]

    summary = {}
    for key, name in (
        ("oha-corrected", "corrected"),
        ("oha-uncorrected", "uncorrected"),
        ("wrk", "wrk"),
    ):
        values = p99s(key)
        summary[f"p99_{name}_ms"] = statistics.median(values) if values else None
        summary[f"p99_{name}_rounds_ms"] = values
    corrected, uncorrected = summary["p99_corrected_ms"], summary["p99_uncorrected_ms"]
    if corrected and uncorrected:
        summary["corrected_over_uncorrected"] = round(corrected / uncorrected, 1)
    base, stalled = runs.get("wrk-baseline"), runs.get("wrk")
    if base and stalled and base.get("rps"):
        # What the closed loop did not send while the server stood still.
        summary["wrk_requests_missing"] = (
            round(base["rps"] * stalled["duration_s"]) - stalled["requests"]
        )
        stall = stalled.get("stall") or {}
        summary["wrk_requests_missing_stall_only"] = round(base["rps"] * stall.get("length_s", 0))
        summary["wrk_baseline_rps"] = round(base["rps"])
    return summary


def _ms(value) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"


def _latency_line(record: dict) -> str:
    lat = record.get("latency_ms") or {}
    if not record.get("ok") or not lat:
        return f"failed: {record.get('problem') or 'no latency'}"
    return (
        f"{record['requests']:,} responses, p50 {_ms(lat.get('p50'))} ms, "
        f"p99 {_ms(lat.get('p99'))} ms, max {_ms(lat.get('max'))} ms"
    )


def lab5_chart(data: dict, path: Path) -> Path | None:
    """p50/p90/p99/p99.9 of each run as grouped bars on a log scale."""
    marks = ["p50", "p90", "p99", "p99.9"]
    # One bar group per measurement; a measurement repeated in rounds shows its medians.
    groups: dict[str, list[dict]] = {}
    for key, run in ordered_runs(data["runs"]):
        if run.get("latency_ms"):
            groups.setdefault(ROUND_SUFFIX.sub("", key), []).append(run)
    if not groups:
        return None
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(groups)
    for i, runs in enumerate(groups.values()):
        values = [
            max(statistics.median(r["latency_ms"].get(m) or 0 for r in runs), 0.01) for m in marks
        ]
        xs = [j + (i - (len(groups) - 1) / 2) * width for j in range(len(marks))]
        label = runs[0]["label"].split(", round")[0]
        ax.bar(
            xs, values, width, label=label + (f" (median of {len(runs)})" if len(runs) > 1 else "")
        )
    ax.set_yscale("log")
    ax.set_xticks(range(len(marks)), marks)
    ax.set_ylabel("latency (ms, log scale)")
    s = data["settings"]
    ax.set_title(
        f"{data['stack']['display_name']} paused {s['stall_for']:g} s during "
        f"{s['duration']:g} s runs ({s['rate']:g} req/s open loop, {s['connections']} connections)",
        fontsize=10,
    )
    ax.axhline(s["stall_for"] * 1000, color="black", linestyle=":", linewidth=1)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def lab5_markdown(data: dict, chart: Path | None) -> str:
    s, summary = data["settings"], data["summary"]
    lines = [
        "# Lab 5: coordinated omission",
        "",
        f"Stack **{data['stack']['display_name']}** (`{data['stack']['name']}`), server cores "
        f"{s['server_cpus']}, client cores {s['client_cpus']}. Each run lasts {s['duration']:g} s;"
        f" in the stalled runs the server's whole process group is stopped with SIGSTOP "
        f"{s['stall_at']:g} s in and resumed with SIGCONT {s['stall_for']:g} s later. oha "
        f"offers {s['rate']:g} requests/s over {s['connections']} connections; wrk keeps "
        f"{s['connections']} connections busy. Tools: {data['tools']['oha']}, "
        f"{data['tools']['wrk']}.",
        "",
        "| run | responses | req/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | stall |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for _, run in ordered_runs(data["runs"]):
        lat = run.get("latency_ms") or {}
        stall = run.get("stall")
        stall_text = f"{stall['length_s']:.2f} s at {stall['started_s']:.1f} s" if stall else "none"
        lines.append(
            f"| {run['label']} | {run['requests']:,} | {run['rps']:,.0f} | {_ms(lat.get('p50'))} | "
            f"{_ms(lat.get('p90'))} | {_ms(lat.get('p99'))} | {_ms(lat.get('p99.9'))} | "
            f"{_ms(lat.get('max'))} | {stall_text} |"
        )
    lines += ["", "## What the numbers say", ""]
    if summary.get("corrected_over_uncorrected"):
        rounds = len(summary["p99_corrected_rounds_ms"])
        lines.append(
            f"- With the stall, oha's corrected p99 is {_ms(summary['p99_corrected_ms'])} ms and "
            f"its uncorrected p99 {_ms(summary['p99_uncorrected_ms'])} ms"
            + (f" (medians of {rounds} rounds)" if rounds > 1 else "")
            + ": "
            f"{summary['corrected_over_uncorrected']:g} times apart, for the same stall. "
            "Measured from when each request was due, the requests the stall delayed carry the "
            "wait; measured from when they were finally sent, they look fast."
        )
    if summary.get("p99_wrk_ms") is not None:
        lines.append(
            f"- wrk reports a p99 of {_ms(summary['p99_wrk_ms'])} ms. wrk 4 back-fills: after "
            "the run it adds the latencies that requests due at its average rate would have "
            "seen during each long response, so its tail lands near the corrected one. Its "
            "load still paused: no request was sent while the server stood still."
        )
    if summary.get("wrk_requests_missing") is not None:
        lines.append(
            f"- wrk completed {summary['wrk_requests_missing']:,} fewer requests than its "
            f"no-stall baseline. A {s['stall_for']:g} s pause at the baseline's "
            f"{summary['wrk_baseline_rps']:,} requests/s accounts for about "
            f"{summary['wrk_requests_missing_stall_only']:,} of them"
            + (
                " (the rest is this host's run-to-run noise)"
                if summary["wrk_requests_missing"] > summary["wrk_requests_missing_stall_only"]
                else " (run-to-run noise hides part of it)"
            )
            + ": the closed loop waited with the server instead of receiving the requests "
            "that users would have kept sending."
        )
    if chart:
        lines += ["", f"![latency percentiles per run]({chart.name})"]
    lines += ["", "What to look for and the questions: docs/labs/5-coordinated-omission.md.", ""]
    return "\n".join(lines)


def run_lab5(knobs: Knobs, results_dir: Path, smoke: bool) -> int:
    try:
        settings = lab5_settings(knobs, smoke)
        settings["port"] = lab5_port(load(settings["stack"]).port)
        folder = results_dir / new_run_id("lab5-coordinated-omission")
        coordinated_omission(settings, folder)
    except KnobError as exc:
        print(str(exc))
        return 2
    except Exception as exc:
        if isinstance(exc, StepError):
            print(exc.explain())
            return 1
        raise
    print(f"\nLab 5 report: {_shown(folder / LAB5_REPORT)}")
    print(f"  data: {_shown(folder / 'lab5.json')}; chart: {_shown(folder / 'lab5-latency.png')}")
    print("  what to look for and the questions: docs/labs/5-coordinated-omission.md")
    return 0


def lab5_port(port: int) -> int:
    """The stack's own port, or any free one when something else listens there."""
    free = port_or_free(port)
    if free != port:
        print(f"lab 5: port {port} is in use; the stack listens on {free} instead")
    return free


def _shown(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.relative_to(REPO_ROOT))
    return str(path)
