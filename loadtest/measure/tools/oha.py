"""oha: constant-rate, open-loop latency (`cargo install --locked oha`).

`oha --no-tui -q RATE -z DUR -c CONN --latency-correction --output-format json`
sends requests on a fixed schedule whatever the server does, and with
`--latency-correction` measures each latency from when the request *should*
have been sent. A stalled server therefore shows up in the tail: these
latencies are free of coordinated omission, unlike wrk's and ab's.

For a run spread over several client hosts (group.py) the JSON report stays
the source of every count (responses, status codes, errors by kind); its
percentiles cannot be merged, so `command_for_merge` also has oha store each
response's corrected latency (`--db-url`, a SQLite file where oha runs) and
`complete_for_merge` reduces that file, where it lies, to a histogram in
whole microseconds. oha's other per-request output, `--output-format csv`,
lists the responses only: the failed requests (timeouts, refused or reset
connections) leave no row, so their counts would be lost.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

from loadtest.core.errors import StepError
from loadtest.core.manifest import REPO_ROOT
from loadtest.measure.tools.base import (
    HOST,
    PERCENTILES,
    Executor,
    LoadResult,
    LoadSpec,
    Tool,
    ToolError,
    latency_key,
)

NOTE_OPEN = "open loop at a constant rate, latency corrected for coordinated omission"
# What a run without --latency-correction measured instead (lab 5's uncorrected oha).
NOTE_UNCORRECTED = ("open loop at a constant rate, latency from when each request was sent: "
                    "not corrected for coordinated omission")  # fmt: skip
NOTE_CLOSED = "closed loop (no rate): latency from when each request was sent"


def cache_dir() -> Path:
    """Where scripts/install-oha.sh builds and links oha (outside the repository)."""
    return Path(os.environ.get("SERVERLAB_CACHE") or Path.home() / ".cache" / "serverlab")


def cache_bin_dir() -> Path:
    """The stable link to the version in use: $CACHE/bin/oha."""
    return cache_dir() / "bin"


def built(version: str) -> bool:
    """Whether scripts/install-oha.sh has built this version here ($CACHE/oha-<version>)."""
    return (cache_dir() / f"oha-{version}" / "bin" / "oha").is_file()


class Oha(Tool):
    name = "oha"
    binary = "oha"

    def path(self) -> str | None:
        cached = cache_bin_dir() / "oha"
        if cached.is_file() and os.access(cached, os.X_OK):
            return str(cached)
        return shutil.which(self.binary)

    def command(self, spec: LoadSpec) -> list[str]:
        command = [
            self.binary,
            "--no-tui",
            "-z", f"{max(1, math.ceil(spec.duration))}s",
            "-c", str(spec.connections),
            "-t", f"{max(1, int(spec.timeout))}s",
            "--output-format", "json",
        ]  # fmt: skip
        if spec.rate:
            command += ["-q", f"{spec.rate:g}", "--latency-correction"]
        for line in spec.header_lines():
            command += ["-H", line]
        if spec.ca_cert:
            command += ["--cacert", spec.ca_cert]
        command.append(spec.url)
        return command

    def command_for_merge(self, spec: LoadSpec, records: str) -> list[str]:
        """The command of one client host of a group: the usual one, and the
        per-request records at `records` (a path where oha runs)."""
        command = self.command(spec)
        return [*command[:-1], "--db-url", records, command[-1]]

    def complete_for_merge(
        self, result: LoadResult, records: str, executor: Executor = HOST
    ) -> None:
        """Attach the latency histogram from `records` (removed there afterwards), and
        take oha's writing of them out of the tool's time."""
        histogram, why_not = fetch_histogram(records, executor)
        recorded = sum(count for _, count in histogram) if histogram is not None else 0
        if histogram is not None and result.ok and recorded != result.requests:
            why_not = (
                f"oha's per-request records hold {recorded} responses, its report {result.requests}"
            )
            histogram = None
        result.details["histogram_us"] = histogram
        result.details["histogram_truncated"] = False
        if histogram is None:
            result.details["histogram_missing"] = why_not
        exclude_records_writing(result)

    def parse(self, stdout: str, stderr: str, exit_code: int) -> LoadResult:
        return parse_output(stdout, stderr, exit_code)

    def finish(self, result: LoadResult, spec: LoadSpec, command, code, cpu, wall,
               executor: Executor = HOST) -> LoadResult:  # fmt: skip
        """The latency note says what the command measured: corrected or not."""
        result = super().finish(result, spec, command, code, cpu, wall, executor)
        if "--latency-correction" not in command:
            measured = NOTE_UNCORRECTED if "-q" in command else NOTE_CLOSED
            result.notes = [measured if note == NOTE_OPEN else note for note in result.notes]
        return result


# Run where oha ran (python3 is in the loadgen image, and on this host): the
# records reduced to [[microseconds, count], ...] ascending, then the file removed.
REDUCE_RECORDS = """\
import json, os, sqlite3, sys
path = sys.argv[1]
try:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = db.execute(
        "SELECT CAST(duration * 1000000 + 0.5 AS INTEGER) AS us, COUNT(*) FROM oha"
        " GROUP BY us ORDER BY us").fetchall()
    db.close()
    print("SERVERLAB_OHA_HISTOGRAM " + json.dumps(rows, separators=(",", ":")))
finally:
    for leftover in (path, path + "-journal"):
        if os.path.exists(leftover):
            os.remove(leftover)
"""
HISTOGRAM_MARKER = "SERVERLAB_OHA_HISTOGRAM "
NOTE_RECORDS_COST = (
    "tool_cpu_s and wall_s exclude the {:.3f} s oha ran after its load phase (writing its "
    "per-request records), counted as one busy core"
)


def fetch_histogram(records: str, executor: Executor) -> tuple[list | None, str]:
    """(histogram, "") from oha's records where it ran, or (None, why not)."""
    try:
        output = executor.output(["python3", "-c", REDUCE_RECORDS, records])
    except (OSError, subprocess.SubprocessError, ToolError, StepError) as exc:
        return None, f"oha's per-request records could not be read: {exc}"
    for line in output.splitlines():
        if line.startswith(HISTOGRAM_MARKER):
            return [[int(us), int(n)] for us, n in json.loads(line[len(HISTOGRAM_MARKER) :])], ""
    tail = output.strip().splitlines()[-1:] or ["no output"]
    return None, f"oha's per-request records could not be read: {tail[0][:300]}"


def exclude_records_writing(result: LoadResult) -> None:
    """oha writes its records after the load phase (its JSON `total`), on one thread:
    that time is the tool's wall time beyond the load phase, and as much CPU."""
    if not result.ok or result.duration_s <= 0:
        return
    after_load_s = max(0.0, result.wall_s - result.duration_s)
    result.tool_cpu_s = max(0.0, result.tool_cpu_s - after_load_s)
    result.wall_s -= after_load_s
    result.notes.append(NOTE_RECORDS_COST.format(after_load_s))


# oha reports errors by message; map them onto the common kinds.
ERROR_PATTERNS = (
    ("timeout", ("timeout", "timed out")),
    ("connect", ("connection refused", "connect", "dns", "no route")),
    ("write", ("broken pipe", "write")),
)
# Requests still in flight when -z ends are cut off by oha itself: not the server's fault.
DEADLINE_ABORT = "aborted due to deadline"


def classify_error(message: str) -> str:
    lowered = message.lower()
    for kind, needles in ERROR_PATTERNS:
        if any(needle in lowered for needle in needles):
            return kind
    return "read"  # connection reset, unexpected EOF, parse errors: the response side


def parse_output(stdout: str, stderr: str = "", exit_code: int = 0) -> LoadResult:
    result = LoadResult(tool="oha", notes=[NOTE_OPEN, "oha counts body bytes only"])
    try:
        data = json.loads(stdout)
        summary = data["summary"]
    except (json.JSONDecodeError, KeyError, TypeError):
        result.ok = False
        result.problem = (stderr.strip() or stdout.strip() or f"exit code {exit_code}")[:500]
        return result
    result.duration_s = summary.get("total") or 0.0
    statuses = {str(code): int(n) for code, n in (data.get("statusCodeDistribution") or {}).items()}
    result.status_counts = statuses
    # oha's own requestsPerSec counts failed attempts too; count responses instead.
    result.requests = sum(statuses.values())
    result.bytes_total = int(summary.get("totalData") or 0)
    if result.duration_s > 0:
        result.rps = result.requests / result.duration_s
        result.bytes_per_s = result.bytes_total / result.duration_s
    for message, count in (data.get("errorDistribution") or {}).items():
        if message == DEADLINE_ABORT:
            result.notes.append(f"{count} request(s) in flight at the end of the run were cut off")
            continue
        result.errors[classify_error(message)] += int(count)
    result.errors["non2xx"] = sum(n for code, n in statuses.items() if not code.startswith("2"))
    percentiles = data.get("latencyPercentiles") or {}
    if result.requests and summary.get("average") is not None:
        curve = []
        for key, seconds in percentiles.items():
            if seconds is not None and key.startswith("p"):
                curve.append([float(key[1:]), seconds * 1000])
        curve.sort()
        result.latency_curve = curve
        by_key = {
            key: seconds * 1000 for key, seconds in percentiles.items() if seconds is not None
        }
        result.latency_ms = {
            "mean": summary["average"] * 1000,
            "stdev": None,  # oha's JSON has no latency standard deviation
            "min": (summary.get("fastest") or 0) * 1000,
            "max": (summary.get("slowest") or 0) * 1000,
            **{latency_key(p): by_key.get(latency_key(p)) for p in PERCENTILES},
        }
    if result.requests == 0:
        worst = max(result.errors, key=result.errors.get)
        count = result.errors[worst]
        result.problem = f"no responses ({count} {worst} errors)" if count else "no responses"
    return result


def install_oha(say=print) -> bool:
    """oha is built from crates.io once (about 9 minutes on 2 cores) into a cache folder."""
    say(
        "oha is not installed: building it once with scripts/install-oha.sh "
        "(about 9 minutes on 2 cores; cached outside the repository)"
    )
    result = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "install-oha.sh")])
    if result.returncode != 0:
        say("scripts/install-oha.sh failed")
    return result.returncode == 0
