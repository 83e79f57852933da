"""h2load (Debian `nghttp2-client`): HTTP/2 and HTTP/1.1 over TLS, closed loop.

`h2load -n N -c CONN -m STREAMS -t THREADS [-H header]... [--h1] URL` sends N
requests over CONN connections, at most STREAMS in flight per connection (over
HTTP/1.1 that is pipelining; the harness keeps 1), or runs for `-D` seconds
instead of a count. Each connection does the full TLS handshake (ALPN picks h2
unless `--h1`). h2load never verifies the server's certificate: the run's
self-signed certificate needs no trust setting, and the handshake costs the
server the same.

Its text report gives min/max/mean/sd of the request time only, no
percentiles. The harness therefore also asks for `--log-file` (one line per
request: start in microseconds since the epoch, status, microseconds until
the end of the response; status -1 for a failed stream) and computes the
percentiles and the latency curve from it (nearest rank over the successful
requests). h2load is closed loop like wrk: its latency is subject to
coordinated omission. Over HTTP/2 it does not reconnect when a server ends a
connection (GOAWAY); with a request count the harness sends what was left
with further runs (`H2load.run`).
"""

from __future__ import annotations

import gzip
import math
import re
import shutil
import statistics
from dataclasses import replace
from pathlib import Path

from loadtest.core.stats import nearest_rank
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

NOTE_CO = "closed loop: h2load latency is subject to coordinated omission (tail understated)"
NOTE_LOG = "latency percentiles computed from h2load's per-request log (nearest rank)"
NOTE_NO_LOG = "no per-request log: latency has h2load's min/max/mean/sd only, no percentiles"
NOTE_NOT_STARTED = (
    "no request went out (connection refused or failed handshake): every request is counted "
    "as a connect error"
)
NOTE_CLOSED = (
    "{} request(s) never sent: the server closed connections under them (for example "
    "HTTP/2 GOAWAY at its per-connection request limit) and h2load does not reconnect over h2"
)
NOTE_ENDED_EARLY = (
    "the last response came {:.2f} s into a {:.2f} s run: the server closed the connections "
    "(for example at its per-connection request limit) and h2load does not reconnect over h2, "
    "so requests/s is understated"
)
# h2load runs for one request count at most, when the server keeps ending connections.
MAX_RUNS = 20
NOTE_RECONNECTED = (
    "the server ended connections (HTTP/2 GOAWAY, e.g. at its per-connection request limit) and "
    "h2load does not reconnect over h2: the requests left were sent by {} more h2load run(s) "
    "over new connections, as a browser reconnects; figures merged over the {} runs"
)
# A timed run whose responses stop before this share of its duration ended early.
EARLY_END_SHARE = 0.75
# Points of the latency curve for the CDF charts (percent).
CURVE_POINTS = (
    *range(1, 100),
    99.5,
    99.9,
    99.99,
)
TIMED_RUN = "Timing-based test"
UNITS_MS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}
# The rows of h2load's timing table and the names they get in `details`.
TIMING_ROWS = {
    "time for request": "request_ms",
    "time for connect": "connect_ms",
    "time to 1st byte": "first_byte_ms",
}


class H2load(Tool):
    name = "h2load"
    binary = "h2load"

    def threads(self, spec: LoadSpec) -> int:
        return max(1, min(spec.threads, spec.connections))  # h2load needs -c >= -t

    def usable_cores(self, spec: LoadSpec) -> int:
        return min(super().usable_cores(spec), self.threads(spec))

    def command(self, spec: LoadSpec, log_file: Path | None = None) -> list[str]:
        command = [
            self.binary,
            "-c", str(spec.connections),
            "-t", str(self.threads(spec)),
            "-m", str(max(1, spec.streams)),
        ]  # fmt: skip
        if spec.requests:
            # At least one request a connection: the knobs hold it (core/knobs.validate), and
            # a rerun takes no more connections than the requests it has left (`run`).
            command += ["-n", str(spec.requests)]
            # A connection silent this long fails its requests (counted as timeouts).
            command += ["-N", f"{max(1, int(spec.timeout))}s"]
        else:
            # No -N here: h2load 1.52 aborts (libev assertion) when it fires in a
            # timed run (fixture crash-duration-inactivity); the duration bounds the run.
            command += ["-D", f"{max(1, math.ceil(spec.duration))}s"]
        for line in spec.header_lines():
            command += ["-H", line]
        if spec.http1:
            command.append("--h1")
        if log_file is not None:
            command += ["--log-file", str(log_file)]
        command.append(spec.url)
        return command

    def deadline(self, spec: LoadSpec) -> float:
        if spec.requests:
            # A request count: a capped server may need minutes; bounded all the same.
            return 900.0
        return super().deadline(spec)

    def run(self, spec: LoadSpec, raw_prefix: Path, executor: Executor = HOST) -> LoadResult:
        """Run h2load; with a request count, reconnect for it when the server ends connections.

        h2load 1.52 does not open a new connection after an HTTP/2 GOAWAY (a
        server's per-connection request limit): the requests left fail unsent.
        A browser would reconnect, so the harness runs h2load again for them,
        over new connections (with their handshakes), up to MAX_RUNS times, and
        merges the runs into one result (see `merge`).
        """
        runs = []
        remaining = spec.requests
        for number in range(1, MAX_RUNS + 1):
            part = spec
            if spec.requests:
                part = replace(spec, requests=remaining,
                               connections=min(spec.connections, remaining))  # fmt: skip
            prefix = raw_prefix if number == 1 else raw_prefix.with_name(
                f"{raw_prefix.name}.run{number}")  # fmt: skip
            runs.append(self._run_once(part, prefix, executor))
            result = runs[-1][0]
            lost = result.details.get("never_sent", 0)
            if not spec.requests or not lost or not result.requests:
                break
            remaining = lost
        if len(runs) == 1:
            return runs[0][0]
        return merge([r for r, _ in runs], [log for _, log in runs])

    def _run_once(
        self, spec: LoadSpec, raw_prefix: Path, executor: Executor = HOST
    ) -> tuple[LoadResult, str | None]:
        log_file = raw_prefix.with_name(raw_prefix.name + ".requests.tsv")
        log_file.unlink(missing_ok=True)
        command = self.command(spec, log_file)
        code, out, err, cpu, wall = self.execute(spec, command, raw_prefix, executor)
        log_text = log_file.read_text(errors="replace") if log_file.is_file() else None
        result = parse_output(out, err, code, log_text)
        if log_text is not None:
            # Keep the per-request log with the raw outputs, compressed.
            with log_file.open("rb") as plain, gzip.open(f"{log_file}.gz", "wb") as packed:
                shutil.copyfileobj(plain, packed)
            log_file.unlink()
        return self.finish(result, spec, command, code, cpu, wall, executor), log_text

    def parse(self, stdout: str, stderr: str, exit_code: int) -> LoadResult:
        return parse_output(stdout, stderr, exit_code)


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    if not match:
        raise ValueError(f"not a duration: {text!r}")
    return float(match.group(1)) * UNITS_MS[match.group(2)]


def _seconds(text: str) -> float:
    return _ms(text) / 1000


def parse_timing_rows(stdout: str) -> dict:
    """The min/max/mean/sd/(+/- sd) table, in milliseconds."""
    rows = {}
    for label, key in TIMING_ROWS.items():
        match = re.search(
            rf"^{re.escape(label)}:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+([\d.]+)%",
            stdout,
            re.MULTILINE,
        )
        if match:
            low, high, mean, sd, within = match.groups()
            rows[key] = {
                "min": _ms(low),
                "max": _ms(high),
                "mean": _ms(mean),
                "sd": _ms(sd),
                "within_sd_pct": float(within),
            }
    return rows


def parse_log(text: str) -> tuple[list[float], float]:
    """Latencies (ms) of the answered streams, and seconds from the first start to the last end."""
    latencies = []
    first = last = None
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) < 3 or fields[1].strip() == "-1":
            continue  # -1: a failed stream
        start, took = int(fields[0]), int(fields[2])
        latencies.append(took / 1000)
        first = start if first is None else min(first, start)
        last = start + took if last is None else max(last, start + took)
    return latencies, ((last - first) / 1e6 if latencies else 0.0)


def parse_output(
    stdout: str, stderr: str = "", exit_code: int = 0, log_text: str | None = None
) -> LoadResult:
    result = LoadResult(tool="h2load", notes=[NOTE_CO])
    counts = re.search(
        r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
        r"(\d+) errored, (\d+) timeout",
        stdout,
        re.MULTILINE,
    )
    finished = re.search(r"^finished in (\S+), ([\d.]+) req/s", stdout, re.MULTILINE)
    if not counts or not finished:
        result.ok = False
        lines = [ln.strip() for ln in (stderr + "\n" + stdout).splitlines() if ln.strip()]
        problem = next((ln for ln in reversed(lines) if "rror" in ln or "ssert" in ln), "")
        result.problem = (problem or (lines[-1] if lines else f"exit code {exit_code}"))[:300]
        if exit_code:
            result.problem += f" (exit code {exit_code})"
        return result
    _total, started, done, _succeeded, _failed, errored, timeout = map(int, counts.groups())
    # "finished in" includes connecting; h2load's req/s is over the measured time
    # (a timed run: -D), so the duration is taken from that.
    reported_rps = float(finished.group(2))
    result.duration_s = (
        done / reported_rps if done and reported_rps else _seconds(finished.group(1))
    )
    codes = re.search(
        r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", stdout, re.MULTILINE
    )
    if codes:
        result.status_counts = {
            f"{digit}xx": int(n) for digit, n in zip("2345", codes.groups()) if int(n)
        }
    non2xx = sum(n for key, n in result.status_counts.items() if key != "2xx")
    # Every request that got a whole response counts (any status), like wrk and oha.
    result.requests = done
    unanswered = max(0, started - done - timeout)
    timed = TIMED_RUN in stdout
    if timed and done:
        # Requests in flight when the time was up: cut off by h2load, not failed.
        if unanswered:
            result.notes.append(f"{unanswered} request(s) in flight at the end were cut off")
        read = 0
    elif timed:
        # Nothing answered during the whole run: the requests sent waited in vain.
        timeout += unanswered
        read = 0
    else:
        # Started but neither answered nor timed out: reset or cut off mid-response.
        read = unanswered
    # Requests never sent take the kind of what ended their connection.
    not_started = max(0, errored - timeout - read)
    connect = 0
    if not_started and not started:
        connect = not_started  # not one request went out: no connection worked
        result.notes.append(NOTE_NOT_STARTED)
    elif not_started and timeout and not done:
        timeout += not_started  # their connections timed out waiting for an answer
    elif not_started:
        # Connections worked, then closed under requests not yet sent.
        read += not_started
        result.problem = NOTE_CLOSED.format(not_started)
        result.details["never_sent"] = not_started
    result.errors = {
        "connect": connect,
        "read": read,
        "write": 0,
        "timeout": timeout,
        "non2xx": non2xx,
    }
    traffic = re.search(
        r"^traffic: \S+ \((\d+)\) total, \S+ \((\d+)\) headers \(space savings ([\d.]+)%\), "
        r"\S+ \((\d+)\) data",
        stdout,
        re.MULTILINE,
    )
    if traffic:
        total, headers, savings, data = traffic.groups()
        result.bytes_total = int(total)
        result.details["header_bytes"] = int(headers)
        result.details["body_bytes"] = int(data)
        # HPACK's saving over the headers' plain size (0 over HTTP/1.1).
        result.details["header_compression_pct"] = float(savings)
    if result.duration_s > 0:
        result.rps = result.requests / result.duration_s
        result.bytes_per_s = result.bytes_total / result.duration_s
    protocol = re.search(r"^Application protocol: (\S+)", stdout, re.MULTILINE)
    result.details["protocol"] = protocol.group(1) if protocol else "h2c or http/1.1 (no TLS)"
    for key in ("TLS Protocol", "Cipher"):
        match = re.search(rf"^{key}: (.+)$", stdout, re.MULTILINE)
        if match:
            result.details[key.lower().replace(" ", "_")] = match.group(1).strip()
    timing = parse_timing_rows(stdout)
    result.details.update({k: v for k, v in timing.items() if k != "request_ms"})
    request = timing.get("request_ms")
    if result.requests and request:
        result.latency_ms = {
            "mean": request["mean"],
            "stdev": request["sd"],
            "min": request["min"],
            "max": request["max"],
            **{latency_key(p): None for p in PERCENTILES},
        }
        latencies, span_s = parse_log(log_text) if log_text else ([], 0.0)
        if TIMED_RUN in stdout and span_s < EARLY_END_SHARE * result.duration_s:
            result.problem = NOTE_ENDED_EARLY.format(span_s, result.duration_s)
        if latencies:
            latencies.sort()
            for percent in PERCENTILES:
                result.latency_ms[latency_key(percent)] = nearest_rank(latencies, percent)
            result.latency_curve = [[p, nearest_rank(latencies, p)] for p in CURVE_POINTS]
            result.notes.append(NOTE_LOG)
        else:
            result.notes.append(NOTE_NO_LOG)
    if result.requests == 0:
        worst = max(result.errors, key=result.errors.get)
        count = result.errors[worst]
        result.problem = f"no responses ({count} {worst} errors)" if count else "no responses"
    elif exit_code != 0:
        result.problem = f"exit code {exit_code}"
    return result


def merge(results: list[LoadResult], logs: list[str | None]) -> LoadResult:
    """One result from consecutive h2load runs for the same request count.

    Counts, bytes, durations, CPU and wall time add up; requests/s is over the
    summed durations; the requests a run never sent (its connections closed)
    were sent by the next run and are no errors; latency comes from the joined
    per-request logs (else the first run's figures stay).
    """
    first, last = results[0], results[-1]
    merged = LoadResult(tool="h2load", notes=list(first.notes))
    merged.requests = sum(r.requests for r in results)
    merged.duration_s = sum(r.duration_s for r in results)
    merged.bytes_total = sum(r.bytes_total for r in results)
    if merged.duration_s > 0:
        merged.rps = merged.requests / merged.duration_s
        merged.bytes_per_s = merged.bytes_total / merged.duration_s
    merged.errors = {kind: sum(r.errors.get(kind, 0) for r in results) for kind in ERROR_KINDS}
    merged.errors["read"] -= sum(r.details.get("never_sent", 0) for r in results[:-1])
    for result in results:
        for code, count in result.status_counts.items():
            merged.status_counts[code] = merged.status_counts.get(code, 0) + count
    merged.details = dict(first.details)
    merged.details.pop("never_sent", None)
    for key in ("header_bytes", "body_bytes"):
        merged.details[key] = sum(r.details.get(key, 0) for r in results)
    merged.details["h2load_runs"] = len(results)
    if "never_sent" in last.details:
        merged.details["never_sent"] = last.details["never_sent"]
    merged.notes.append(NOTE_RECONNECTED.format(len(results) - 1, len(results)))
    merged.problem = last.problem
    latencies = sorted(ms for log in logs if log for ms in parse_log(log)[0])
    if all(logs) and latencies:
        merged.latency_ms = {
            "mean": statistics.fmean(latencies),
            "stdev": statistics.stdev(latencies) if len(latencies) > 1 else 0.0,
            "min": latencies[0],
            "max": latencies[-1],
            **{latency_key(p): nearest_rank(latencies, p) for p in PERCENTILES},
        }
        merged.latency_curve = [[p, nearest_rank(latencies, p)] for p in CURVE_POINTS]
    else:
        merged.latency_ms, merged.latency_curve = first.latency_ms, first.latency_curve
    merged.ok = all(r.ok for r in results)
    merged.command = first.command
    merged.exit_code = next((r.exit_code for r in results if r.exit_code), 0)
    merged.tool_cpu_s = sum(r.tool_cpu_s for r in results)
    merged.wall_s = sum(r.wall_s for r in results)
    return merged
