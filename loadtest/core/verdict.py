"""What limited a measurement: every threshold of judgement, and the verdict.

A requests/s figure means something only when we know what stopped it from
being higher. Each measurement gets one verdict, derived from what was
measured in the same window:

- `server-bound`: the server used nearly all the CPU it was given (its
  cores, or its CPU quota when capped): the figure is the stack's own.
- `client-bound`: the load tool used nearly all of its cores: the figure is
  a lower bound for the server.
- `neither`: both had CPU to spare, so something else set the pace, or more
  than ERROR_SHARE of the requests failed (then whatever the CPUs say). The
  verdict then names the likely cause where the figures allow it (a
  delayed-ACK stall, waiting, errors, idle connections, too few
  connections, a tool whose counts do not add up...).

Every threshold lives here, once, with the reason for its value;
docs/methodology.md ("What limited a figure") explains them for readers.
This module imports nothing from the harness: it is pure arithmetic on the
figures of one record, so it is tested on recorded figures.
"""

from __future__ import annotations

from dataclasses import dataclass

# ----------------------------------------------------------------- thresholds

# The load tool is the bottleneck at >= 90% of the cores it can use: wrk's
# event loop, at full speed, spends the last 5-10% of a core in the kernel's
# scheduler and timer work that the rusage of the process does not show.
CLIENT_BOUND_SHARE = 0.90
# The server is the bottleneck at >= 85% of the CPU it was given, counted over
# the seconds load was flowing. Lower than the client's bar because part of the
# loopback's receive work runs as softirq on the server's core and is charged
# to no process, and a pre-fork server's supervisor sleeps on a core share.
SERVER_BOUND_SHARE = 0.85
# ... or when its cores were >= 90% busy (kernel per-CPU counters, which do
# see the softirq work) and other processes explain less than NOISY_FOREIGN_PCT.
SERVER_CORES_BUSY_SHARE = 0.90
# Other processes above 15 points of the pinned cores: the host was shared
# (the harness's own sampler stays under 2 points).
NOISY_FOREIGN_PCT = 15.0

# Linux delays an ACK by at least 40 ms (TCP_DELACK_MIN, HZ/25). A response
# written in two pieces with Nagle's algorithm on waits for that ACK, so a
# stalled server shows latencies of about k x 40 ms with idle CPUs.
DELAYED_ACK_MS = 40.0
DELAYED_ACK_TOLERANCE = 0.25  # mean latency within 25% of k x 40 ms, k = 1..5
# Neither side busy and each request waits this long or more: the server waits
# on something (a sleep, a lock, a timer, a pool smaller than the connections).
WAITING_MS = 5.0
# Errors above 1% of the attempted requests set the pace (a failed request is
# fast or times out, both unlike a served one).
ERROR_SHARE = 0.01
# Little's law for a closed-loop tool: connections = requests/s x mean latency
# when every connection always has a request in flight. The tool's own time
# between answer and next request makes the product a little smaller; more
# than 25% above the connections is impossible (the counts do not add up),
# below half means connections sat idle outside the measured latency
# (refused or capped connections, reconnects, a tool that miscounts).
# wrk 4 is the exception above: after the run it back-fills the latencies of
# requests a stalled connection did not send (its coordinated-omission
# correction), so its mean exceeds the measured one whenever the distribution
# has a tail (cherrypy 1.6x, spring-mvc 3.7x in docs/measurements/*quick);
# for wrk only the low bound is a sign of inconsistent counts.
LITTLE_HIGH = 1.25
LITTLE_LOW = 0.50
# An open-loop run that achieved >= 98% of its offered rate was paced by the rate.
OFFERED_RATE_SHARE = 0.98

# Steady state (loadtest/steady.py). The warm-up runs one-second windows until
# two successive ones differ by at most 10%. A cold start is 2-10x below its
# warm pace (flask-pypy, spring-webflux), far outside that. Tighter does not
# work on a 2-vCPU VM: successive one-second windows of a warm Go server
# differed by up to 15% there (run 20261123-223702-quick in docs/measurements),
# and three windows within 5% settled for only 28 of 77 stack x scenario
# warm-ups, spending 13 minutes of a 20-minute quick run. The JVM's tiered JIT
# plateaus where windows agree long before it is warm: such a stack declares
# its warm-up (`warmup_s` in its manifest), run before the windows, and the
# NOT-STEADY drift test below catches what is left.
WARMUP_WINDOW_S = 1.0
STEADY_TOLERANCE = 0.10
STEADY_MIN_WINDOWS = 2
# A stack that declares a JIT (`jit` in its manifest) whose compiler can be read
# (measure/jit.py) is warm when, besides two agreeing windows, its compiler was
# quiet in each of the instance's last JIT_QUIET_WINDOWS one-second windows of
# load: at most JIT_QUIET_MS compiling (5% of a core, half of the 10% a warm
# figure may differ from a long-warmed one) and at most JIT_QUIET_METHODS
# methods compiled. The time alone is not enough: .NET's tiered compilation
# keeps promoting to tier 1 back while tier-0 code is still being compiled, so
# ASP.NET Core MVC from a fresh start on one core compiled 0-40 methods in 0-29
# ms a second for 11 s at 28-38k req/s, then promoted in bursts of 50-300 ms
# until 36 s, and served 63k warm. Five windows, because four quiet ones
# measured Spring MVC at 0.90 of its warm rate and five at 0.96 (docs/
# methodology.md, "Warm: the runtime says so", has the traces and the
# simulation of each rule). The warm-up waits for that until the instance has
# run JIT_BOUND_S seconds of load (its declared priming included); a case
# measured before is COLD.
JIT_QUIET_MS = 50.0
JIT_QUIET_METHODS = 20
JIT_QUIET_WINDOWS = 5
JIT_BOUND_S = 150.0
# A measurement whose second half ran more than 15% faster or slower than its
# first half (loopback bytes per sampled window) is NOT-STEADY, when the change
# is also significant: Welch's t of the two halves' window rates beyond 3.
# Halves of a steady run of an event-loop stack differ by a few percent; a
# bursty thread-pool server (cherrypy: p99 of 45-90 ms) swings 30% between
# quarter-second windows without any trend, which the t test tells apart from
# a JIT still climbing or a server collapsing (t of 10 and more).
DRIFT_BOUND = 0.15
DRIFT_T = 3.0

# DRIFTED (an instance's first case measured again after its last) is judged by the
# comparison rule, against the instance's own windows and the ceiling's re-checks of the
# same run: core/change.py `drifted`.
# STALL: a quarter-second window in the middle of a load (loopback bytes) that
# carried under 1% of the median window's traffic: the server answered nothing
# for that long (cherrypy's hello at 128 connections: 0 to 3,138 req/s in one
# window). The figure then says more about the stall than about the server's
# pace, whatever its CPU did.
STALL_SHARE = 0.01

# UNEVEN: in the half-second windows of a measurement (measure/fairness.py),
# the least-served connection got under half of its even part of the
# window's requests, or the most-served over twice its part, in the median
# window. Fair servers stay within 0.8-1.25 (hello at 64 connections on one
# core, run 20261126-080301-quick in docs/measurements: gin 0.95-1.04,
# meinheld 0.82-1.02, flask-pypy 0.94-1.24, nginx 0.88-1.05); gunicorn's
# gevent worker on CPython gave 0.22 and 4.4 (worst window 0.06), with a p99
# 16 times its p50 (docs/measurements/connection-fairness.md). The latency percentiles
# of an uneven measurement describe connections left waiting, not the
# server's pace.
UNEVEN_MIN_SHARE = 0.5
UNEVEN_MAX_SHARE = 2.0
# RECONNECTS: of the connections at the end of a half-second window, more than
# 10% were new since its start, in the median window, under a tool that keeps
# its connections alive. The server closed them (cheroot beyond 10 idle
# keep-alive connections: all 64 renewed in every window at 64 connections),
# so the figure includes a TCP handshake for many of its requests. A
# keep-alive load renews none; 10% leaves room for a connection lost at the
# edge of a window.
RENEWED_SHARE = 0.10

# Tools whose mean latency includes back-filled (never measured) requests.
LATENCY_BACKFILLED = ("wrk",)

VERDICTS = ("server-bound", "client-bound", "neither")

CAUSES = {
    "offered-rate": "open loop: the tool sent the offered rate and the server kept up",
    "errors": "errors or timeouts set the pace",
    "tool-counts": "the tool's counts do not add up (Little's law)",
    "idle-connections": "connections sat idle outside the measured latency "
    "(refused or capped connections, reconnects)",
    "delayed-ack": "a stall of about k x 40 ms with idle CPUs: the delayed-ACK timer "
    "(typically a response written in pieces with Nagle's algorithm on)",
    "waiting": "requests waited with idle CPUs (a sleep, a lock, a timer, a small pool)",
    "shared-cores": "server and load tool share the cores, which were busy",
    "noisy": "other processes took the pinned cores",
    "concurrency": "too few connections to keep either side busy (each waits for a round trip)",
    "stall": "the server answered nothing for a quarter-second or more in the middle of the load",
    "unknown": "neither side was busy and no known cause fits the figures",
}


# -------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Figures:
    """What one measurement says about its limits (all from the same window)."""

    rps: float
    connections: int
    mean_latency_ms: float | None
    server_cpu_pct: float | None  # the server's process tree, 100 = one core
    server_capacity: float  # CPUs it was given: cores, or the quota when capped
    tool_share: float  # 0..1 of the cores the tool can use
    server_cores_busy_pct: float | None = None  # host-wide, per core (0..100)
    foreign_pct: float | None = None  # other processes on the server cores (points)
    client_foreign_pct: float | None = None
    errors: int = 0
    requests: int = 0
    closed_loop: bool = True
    offered_rate: float | None = None
    shared_cores: bool = False
    tool: str = ""
    stalled_windows: int = 0  # windows of the load's middle with no traffic (STALL_SHARE)
    window_s: float = 0.25


@dataclass(frozen=True)
class Verdict:
    verdict: str  # one of VERDICTS
    cause: str = ""  # a key of CAUSES when the verdict is "neither"
    detail: str = ""  # the figures behind it, in words
    little_ratio: float | None = None  # rps x mean latency / connections

    @property
    def label(self) -> str:
        return f"{self.verdict} ({self.cause})" if self.cause else self.verdict

    def to_dict(self) -> dict:
        return {
            "verdict": self.verdict,
            "cause": self.cause,
            "verdict_detail": self.detail,
            "little_ratio": None if self.little_ratio is None else round(self.little_ratio, 3),
        }


# ----------------------------------------------------------------- judgement


def little_ratio(f: Figures) -> float | None:
    """Connections in service by Little's law over connections offered."""
    if not f.closed_loop or not f.mean_latency_ms or not f.connections:
        return None
    return f.rps * f.mean_latency_ms / 1000 / f.connections


def server_share(f: Figures) -> float | None:
    if f.server_cpu_pct is None or f.server_capacity <= 0:
        return None
    return f.server_cpu_pct / 100 / f.server_capacity


def is_server_bound(f: Figures) -> bool:
    share = server_share(f)
    if share is not None and share >= SERVER_BOUND_SHARE:
        return True
    # The cores' own counters, when nothing but the server explains them
    # (uncapped only: a quota leaves the cores idle by design).
    busy = f.server_cores_busy_pct
    return (
        busy is not None
        and f.server_capacity >= 1
        and busy / 100 >= SERVER_CORES_BUSY_SHARE
        and f.foreign_pct is not None
        and f.foreign_pct <= NOISY_FOREIGN_PCT
    )


def near_delayed_ack(mean_ms: float | None) -> bool:
    if not mean_ms or mean_ms < DELAYED_ACK_MS * (1 - DELAYED_ACK_TOLERANCE):
        return False
    multiple = round(mean_ms / DELAYED_ACK_MS)
    return 1 <= multiple <= 5 and abs(mean_ms - multiple * DELAYED_ACK_MS) <= (
        DELAYED_ACK_MS * DELAYED_ACK_TOLERANCE
    )


def judge(f: Figures) -> Verdict:
    """The verdict of one measurement; see the module docstring."""
    ratio = little_ratio(f)
    cpu = "-" if f.server_cpu_pct is None else f"{f.server_cpu_pct:.0f}%"
    facts = (
        f"server {cpu} of {f.server_capacity:g} CPU, tool {f.tool_share * 100:.0f}% of its cores"
    )
    if f.offered_rate and f.rps >= OFFERED_RATE_SHARE * f.offered_rate:
        return Verdict("neither", "offered-rate", f"{f.rps:,.0f} of {f.offered_rate:,.0f}/s offered; {facts}", ratio)
    attempted = f.requests + f.errors
    if attempted and f.errors / attempted > ERROR_SHARE:
        # Failures set the pace whatever the CPUs say: a client busy reconnecting
        # (new TLS handshakes) after the server closed its connections is not the limit.
        return Verdict("neither", "errors", f"{f.errors:,} errors in {attempted:,} requests; {facts}", ratio)
    if f.stalled_windows:
        stalled = f.stalled_windows * f.window_s
        return Verdict("neither", "stall", f"no responses for {stalled:g} s in the middle of the "
                       f"load ({f.stalled_windows} windows of {f.window_s:g} s); {facts}", ratio)
    if f.tool_share >= CLIENT_BOUND_SHARE:
        return Verdict("client-bound", "", facts, ratio)
    if f.shared_cores:
        if (f.server_cores_busy_pct or 0) / 100 >= SERVER_CORES_BUSY_SHARE:
            return Verdict("neither", "shared-cores", facts, ratio)
    elif is_server_bound(f):
        return Verdict("server-bound", "", facts, ratio)
    return Verdict("neither", *neither_cause(f, ratio, facts), ratio)


def neither_cause(f: Figures, ratio: float | None, facts: str) -> tuple[str, str]:
    """(cause, detail) when neither side was busy; the first cause that fits."""
    if ratio is not None and ratio > LITTLE_HIGH and f.tool not in LATENCY_BACKFILLED:
        return "tool-counts", (
            f"{f.rps:,.0f} req/s x {f.mean_latency_ms:.2f} ms = {ratio * f.connections:.1f} "
            f"connections in service, but only {f.connections} open; {facts}"
        )
    if ratio is not None and ratio < LITTLE_LOW:
        return "idle-connections", (
            f"only {ratio * f.connections:.1f} of {f.connections} connections in service "
            f"(Little's law); {facts}"
        )
    mean = f.mean_latency_ms
    if near_delayed_ack(mean):
        return "delayed-ack", f"mean latency {mean:.1f} ms, about {round(mean / DELAYED_ACK_MS)} x 40 ms; {facts}"
    if mean is not None and mean >= WAITING_MS:
        return "waiting", f"mean latency {mean:.1f} ms; {facts}"
    foreign = max(v for v in (f.foreign_pct, f.client_foreign_pct, 0.0) if v is not None)
    if foreign > NOISY_FOREIGN_PCT:
        return "noisy", f"other processes used {foreign:.0f} points of the pinned cores; {facts}"
    if mean is not None:
        return "concurrency", f"{f.connections} connections, {mean:.2f} ms per round trip; {facts}"
    return "unknown", facts


def stalled_windows(rates: list[float], start: int, end: int) -> int:
    """Windows of rates[start:end] (the load's middle) that carried under STALL_SHARE of
    the median window's traffic."""
    middle = sorted(rates[start:end])
    if len(middle) < 3:
        return 0
    floor = middle[len(middle) // 2] * STALL_SHARE
    return sum(1 for rate in rates[start:end] if rate < floor)


def uneven(fairness: dict | None) -> bool:
    """Whether the server served its connections unevenly (UNEVEN_* above)."""
    if not fairness or not fairness.get("windows"):
        return False
    return fairness["min_share"] < UNEVEN_MIN_SHARE or fairness["max_share"] > UNEVEN_MAX_SHARE


def reconnects(fairness: dict | None, keepalive: bool) -> bool:
    """Whether the server closed connections a keep-alive load kept (RENEWED_SHARE)."""
    return bool(keepalive and fairness and fairness["renewed_share"] > RENEWED_SHARE)
