"""Lab 5's measurements (docs/labs/5-coordinated-omission.md): one stack paused with
SIGSTOP/SIGCONT for `stall_for` seconds, `stall_at` seconds into runs of the same
length under oha (open loop, with and without latency correction) and wrk (closed
loop). The report is report/coordinated_omission.py's; `make lab LAB=5` runs both.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import signal
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from loadtest.bench.results import git_info, host_info, write_json_atomic
from loadtest.core.knobs import KnobError
from loadtest.core.manifest import load
from loadtest.core.runner import Limits
from loadtest.core.verdict import WARMUP_WINDOW_S
from loadtest.measure import steady
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.base import LoadSpec
from loadtest.measure.tools.oha import Oha, install_oha
from loadtest.runners.conformance import run_conformance
from loadtest.runners.native import NativeRunner

DATA_FILE = "lab5.json"


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


def measure(settings: dict, folder: Path, say=print) -> dict:
    """Lab 5's measurements against one real stack, kept in lab5.json; returns the data.

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
        return measure_started(settings, folder, manifest, runner, tools, say)
    finally:
        os.sched_setaffinity(0, affinity)


def measure_started(settings: dict, folder: Path, manifest, runner, tools: dict, say) -> dict:
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
            say(f"  {label}: " + latency_line(record))
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
    write_json_atomic(folder / DATA_FILE, data)
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


def ms(value) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"


def latency_line(record: dict) -> str:
    lat = record.get("latency_ms") or {}
    if not record.get("ok") or not lat:
        return f"failed: {record.get('problem') or 'no latency'}"
    return (
        f"{record['requests']:,} responses, p50 {ms(lat.get('p50'))} ms, "
        f"p99 {ms(lat.get('p99'))} ms, max {ms(lat.get('max'))} ms"
    )
