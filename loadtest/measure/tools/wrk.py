"""wrk: closed-loop throughput (Debian package `wrk`).

wrk keeps a fixed number of connections busy: each sends its next request as
soon as the previous answer arrives. That measures the server's peak rate,
but its latency suffers from coordinated omission (a stalled server also
stalls the load). wrk 4 corrects its percentiles after the run: for every
response slower than its average interval between requests, it adds the
latencies the requests it did not send would have had. Its tail is then an
estimate, near the truth for one stall (docs/labs/5-coordinated-omission.md);
oha's open-loop runs measure it. Every report that shows wrk latencies says so.

For a run spread over several client hosts (group.py), `command_for_merge`
asks the report script for wrk's whole latency histogram as well, so that the
hosts' latencies merge into exact percentiles.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from loadtest.measure.tools.base import (
    ERROR_KINDS,
    HOST,
    PERCENTILES,
    Executor,
    LoadResult,
    LoadSpec,
    Tool,
    latency_key,
)

LUA_SCRIPT = Path(__file__).with_name("wrk_report.lua")
MARKER = "SERVERLAB_WRK_JSON "
NOTE_CO = ("closed loop, subject to coordinated omission: wrk's load pauses while the server "
           "stalls; its percentiles add back-filled latencies for the requests it did not send "
           "(an estimate)")
# The report script's argument (after `--`) that adds the latency histogram to its line.
HISTOGRAM_ARG = "histogram"
NOTE_HISTOGRAM_COST = (
    "tool_cpu_s and wall_s exclude the {:.3f} s wrk spent exporting its latency histogram "
    "after the load"
)


class Wrk(Tool):
    name = "wrk"
    binary = "wrk"

    # `wrk -v` prints the version line and usage, then exits non-zero.
    version_flag = "-v"

    def threads(self, spec: LoadSpec) -> int:
        return max(1, min(spec.threads, spec.connections))  # wrk needs c >= t

    def usable_cores(self, spec: LoadSpec) -> int:
        return min(super().usable_cores(spec), self.threads(spec))

    def command(self, spec: LoadSpec) -> list[str]:
        threads = self.threads(spec)
        return [
            self.binary,
            "-t", str(threads),
            "-c", str(spec.connections),
            "-d", f"{max(1, math.ceil(spec.duration))}s",
            # wrk parses --timeout as whole seconds ("0.5" would become 0).
            "--timeout", f"{max(1, int(spec.timeout))}s",
            "-s", str(LUA_SCRIPT),
            *[arg for line in spec.header_lines() for arg in ("-H", line)],
            spec.url,
        ]  # fmt: skip

    def command_for_merge(self, spec: LoadSpec, records: str | None = None) -> list[str]:
        """The command of one client host of a group: the usual one, and the histogram.

        `records` is not used: wrk's histogram comes back in its own stdout.
        """
        return [*self.command(spec), "--", HISTOGRAM_ARG]

    def complete_for_merge(
        self, result: LoadResult, records: str | None = None, executor: Executor = HOST
    ) -> None:
        """Take the histogram export out of the tool's time: it ran after the load,
        on one core, and would otherwise blur the client-bound share."""
        export_s = result.details.get("histogram_cpu_s") or 0.0
        if export_s <= 0:
            return
        result.tool_cpu_s = max(0.0, result.tool_cpu_s - export_s)
        result.wall_s = max(0.0, result.wall_s - export_s)
        result.notes.append(NOTE_HISTOGRAM_COST.format(export_s))

    def parse(self, stdout: str, stderr: str, exit_code: int) -> LoadResult:
        return parse_output(stdout, stderr, exit_code)


def parse_output(stdout: str, stderr: str = "", exit_code: int = 0) -> LoadResult:
    result = LoadResult(tool="wrk", notes=[NOTE_CO])
    line = next((ln for ln in stdout.splitlines() if ln.startswith(MARKER)), None)
    if line is None:
        result.ok = False
        result.problem = (stderr.strip() or stdout.strip() or f"exit code {exit_code}")[:500]
        return result
    data = json.loads(line[len(MARKER) :])
    result.duration_s = data["duration_us"] / 1e6
    result.requests = data["requests"]
    result.bytes_total = data["bytes"]
    if result.duration_s > 0:
        result.rps = result.requests / result.duration_s
        result.bytes_per_s = result.bytes_total / result.duration_s
    errors = data["errors"]
    # wrk counts responses with status > 399 as "status" errors; 3xx pass.
    result.errors = {
        "connect": errors["connect"],
        "read": errors["read"],
        "write": errors["write"],
        "timeout": errors["timeout"],
        "non2xx": errors["status"],
    }
    assert set(result.errors) == set(ERROR_KINDS)
    latency = data["latency_us"]
    if latency:
        curve = [[p, ms / 1000] for p, ms in data["percentiles_us"]]
        result.latency_curve = curve
        by_percent = dict((p, v) for p, v in curve)
        result.latency_ms = {
            "mean": latency["mean"] / 1000,
            "stdev": latency["stdev"] / 1000,
            "min": latency["min"] / 1000,
            "max": latency["max"] / 1000,
            **{latency_key(p): by_percent.get(p) for p in PERCENTILES},
        }
    if "histogram_us" in data:
        result.details.update(histogram_details(data))
    if result.requests == 0:
        result.problem = describe_no_responses(result.errors)
    return result


def histogram_details(data: dict) -> dict:
    """wrk's latency histogram as the report script exported it (only when asked):
    [[microseconds, count], ...] ascending, or None when its CPU budget ran out."""
    return {
        "histogram_us": data["histogram_us"],
        "histogram_truncated": bool(data.get("histogram_truncated")),
        "histogram_cpu_s": float(data.get("histogram_cpu_s") or 0.0),
    }


def describe_no_responses(errors: dict) -> str:
    worst = max(errors, key=errors.get)
    if errors[worst] == 0:
        return "no responses"
    return f"no responses ({errors[worst]} {worst} errors)"
