"""ApacheBench (Debian `apache2-utils`): replays the 2017 experiment's method.

`ab -n 5000 -c 150 -l -r URL`: a fixed number of requests, `-l` accepts
variable-length bodies (the hello text), `-r` carries on after socket errors.
The 2017 runs did not use `-k`, so every request opened a new connection;
whether `-k` was used is recorded with every result. ab's latency figures are
whole milliseconds and closed-loop (subject to coordinated omission).
"""

from __future__ import annotations

import re

from loadtest.measure.tools.base import LoadResult, LoadSpec, Tool, first_line, latency_key

NOTE_CO = "closed loop: ab latency is subject to coordinated omission (tail understated)"
# Without -n, ab stops after -t seconds or this many requests, whichever is first.
MAX_REQUESTS_TIMED = 50_000_000


class Ab(Tool):
    name = "ab"
    binary = "ab"

    version_flag = "-V"
    # ab prints its percentiles in whole milliseconds ("  99%      9"): 9.00 would claim more.
    latency_decimals = 0

    def version_text(self, output: str) -> str:
        line = first_line(output) or "ab"  # "This is ApacheBench, Version 2.3 <$Revision$>"
        return line.replace("This is ", "").replace(" <$Revision$>", "").strip()

    def command(self, spec: LoadSpec) -> list[str]:
        command = [self.binary, "-c", str(spec.connections), "-l", "-r"]
        if spec.requests:
            command += ["-n", str(max(spec.requests, spec.connections))]
        else:
            command += ["-t", str(max(1, round(spec.duration))), "-n", str(MAX_REQUESTS_TIMED)]
        command += ["-s", str(max(1, int(spec.timeout)))]
        if spec.keepalive:
            command.append("-k")
        for line in spec.header_lines():
            command += ["-H", line]
        command.append(spec.url)
        return command

    def usable_cores(self, spec: LoadSpec) -> int:
        return 1  # ab is single-threaded

    def deadline(self, spec: LoadSpec) -> float:
        if spec.requests:
            # No duration: allow a slow server a generous time, bounded all the same.
            return 300.0
        return super().deadline(spec)

    def parse(self, stdout: str, stderr: str, exit_code: int) -> LoadResult:
        return parse_output(stdout, stderr, exit_code)


def _number(pattern: str, text: str, cast=float, default=None):
    match = re.search(pattern, text, re.MULTILINE)
    return cast(match.group(1)) if match else default


def parse_output(stdout: str, stderr: str = "", exit_code: int = 0) -> LoadResult:
    result = LoadResult(tool="ab", notes=[NOTE_CO])
    complete = _number(r"^Complete requests:\s+(\d+)", stdout, int)
    if complete is None:
        result.ok = False
        result.problem = _problem(stderr, stdout, exit_code)
        result.errors["connect"] = _connect_errors(stderr)
        if "timeout" in stderr.lower():
            result.errors["timeout"] = 1
        return result
    failed = _number(r"^Failed requests:\s+(\d+)", stdout, int, 0)
    result.duration_s = _number(r"^Time taken for tests:\s+([\d.]+)", stdout, float, 0.0)
    result.bytes_total = _number(r"^Total transferred:\s+(\d+)", stdout, int, 0)
    non2xx = _number(r"^Non-2xx responses:\s+(\d+)", stdout, int, 0)
    # "Failed requests: N\n   (Connect: a, Receive: b, Length: c, Exceptions: d)".
    # Length failures are not errors under -l; Exceptions are read-side failures.
    detail = re.search(
        r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)", stdout
    )
    connect = receive = exceptions = 0
    if detail:
        connect, receive, _length, exceptions = map(int, detail.groups())
    write_errors = _number(r"^Write errors:\s+(\d+)", stdout, int, 0)
    result.errors = {
        "connect": connect,
        "read": receive + exceptions,
        "write": write_errors,
        "timeout": 0,
        "non2xx": non2xx,
    }
    # ab counts requests that failed in "Complete requests" too; responses are the rest.
    result.requests = max(0, complete - connect - receive - exceptions)
    if failed and not detail:
        result.errors["read"] = failed
    if result.duration_s > 0:
        result.rps = result.requests / result.duration_s
        result.bytes_per_s = result.bytes_total / result.duration_s
    mean = _number(r"^Time per request:\s+([\d.]+) \[ms\] \(mean\)$", stdout, float)
    total = re.search(r"^Total:\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s+(\d+)", stdout, re.MULTILINE)
    curve = [
        [float(p), float(ms)] for p, ms in re.findall(r"^\s+(\d+)%\s+(\d+)", stdout, re.MULTILINE)
    ]
    if result.requests and total:
        tmin, tmean, tsd, _median, tmax = total.groups()
        by_percent = dict((p, v) for p, v in curve)
        result.latency_ms = {
            # ab's "Time per request (mean)" is concurrency x wall / requests; the
            # per-request mean is the Total row of the connection-times table.
            "mean": float(tmean),
            "stdev": float(tsd),
            "min": float(tmin),
            "max": float(tmax),
            **{latency_key(p): by_percent.get(float(p)) for p in (50, 75, 90, 95, 99)},
            "p99.9": None,
        }
        result.latency_curve = curve
        if mean is not None:
            result.notes.append(f"ab 'time per request' (concurrency-scaled): {mean} ms")
    if stderr.strip() and exit_code != 0:
        result.problem = _problem(stderr, stdout, exit_code)
    return result


def _connect_errors(stderr: str) -> int:
    return 1 if re.search(r"connect\(\)|Connection refused", stderr) else 0


def _problem(stderr: str, stdout: str, exit_code: int) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith("Benchmarking")]
    if lines:
        return lines[-1].strip()[:300]
    return f"exit code {exit_code}, no report"
