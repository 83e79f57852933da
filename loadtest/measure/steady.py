"""Steady state: warm up until throughput is stable, and tell when a run drifted.

JIT runtimes (the JVM's C2, PyPy's tracing JIT) and lazy caches serve their
first seconds several times slower than the rest; a fixed warm-up is either
too short for them or wasted on the others. The warm-up therefore runs the
load in one-second windows until successive ones agree within STEADY_TOLERANCE,
up to the WARMUP knob's bound per instance and scenario, and the curve of
window rates is kept with the measurement. A runtime that plateaus before it
is warm (the JVM's tiered JIT on one core) is first primed for the seconds its
manifest declares (`warmup_s`), once per instance. A stack that declares a JIT
whose compiler can be read (measure/jit.py) is warm only once that compiler
has also gone quiet: at most JIT_QUIET_MS of compiling in each of the
instance's last JIT_QUIET_WINDOWS windows, waited for up to JIT_BOUND_S
seconds of load; past that the case is measured and flagged COLD.

Within a measurement, a sampler reads the loopback interface's byte counter a
few times a second (every byte of a request and its answer crosses it, for
any tool, natively or in containers on the host network): the rate of its
first half against its second half is the run's drift, and a run beyond
DRIFT_BOUND is flagged NOT-STEADY. The thresholds live in loadtest/verdict.py.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from loadtest.core.verdict import (
    DRIFT_BOUND,
    DRIFT_T,
    JIT_BOUND_S,
    STEADY_MIN_WINDOWS,
    STEADY_TOLERANCE,
    WARMUP_WINDOW_S,
)
from loadtest.measure.jit import JitWatch

LOOPBACK = "lo"
# A compiler signal that has given nothing after this many windows is given up
# (dotnet-counters, a .NET program itself, took over 3 s to start beside wrk on one core).
JIT_SILENT_WINDOWS = 10
# Leading and trailing windows below this share of the median are idle: before
# the tool started or after it ended. Low on purpose: a server that collapses
# half-way must stay in the span; the one partial window at each end is
# dropped by `drift` itself.
EDGE_SHARE = 0.05
MIN_WINDOWS_FOR_DRIFT = 4


@dataclass
class WarmUp:
    """The warm-up of one instance and scenario: window rates in requests/s, and what
    the JIT's compiler said after each window (when the stack declares one)."""

    curve: list[float] = field(default_factory=list)
    steady: bool = False
    bound_s: float = 0.0
    problem: str = ""
    primed_s: float = 0.0  # the manifest's warmup_s, run before the windows
    jit_signal: str = ""  # which counter was read, or why none could be
    jit_compiles: list[int] = field(default_factory=list)  # methods compiled per window
    jit_compile_ms: list[float] = field(default_factory=list)  # milliseconds compiling per window
    jit_quiet: bool | None = None  # None: no compiler read
    loaded_before_s: float = 0.0  # load this instance had run before this warm-up

    @property
    def seconds(self) -> float:
        return self.primed_s + len(self.curve) * WARMUP_WINDOW_S

    @property
    def cold(self) -> bool:
        """Measured while its compiler was still busy (COLD)."""
        return self.jit_quiet is False

    def to_dict(self) -> dict:
        quiet_after = self.loaded_before_s + self.seconds if self.jit_quiet else None
        return {
            "warmup_s": self.seconds,
            "warmup_primed_s": self.primed_s,
            "warmup_steady": self.steady,
            "warmup_curve": [round(r, 1) for r in self.curve],
            "warmup_bound_s": self.bound_s,
            "jit_signal": self.jit_signal or None,
            "jit_compiles": self.jit_compiles or None,
            "jit_compile_ms": self.jit_compile_ms or None,
            "jit_last_window_ms": self.jit_compile_ms[-1] if self.jit_compile_ms else None,
            "jit_quiet_after_s": quiet_after,
            "jit_cold": self.cold,
        }


def settled(curve: list[float], tolerance: float = STEADY_TOLERANCE) -> bool:
    """The last STEADY_MIN_WINDOWS windows within `tolerance` of each other
    (their spread relative to the largest)."""
    if len(curve) < STEADY_MIN_WINDOWS:
        return False
    last = curve[-STEADY_MIN_WINDOWS:]
    top = max(last)
    return top > 0 and (top - min(last)) / top <= tolerance


def warm_up(
    run_window: Callable[[], float | None],
    bound_s: float,
    primed_s: float = 0.0,
    jit: JitWatch | None = None,
    loaded_before_s: float = 0.0,
) -> WarmUp:
    """Call `run_window` (one WARMUP_WINDOW_S window of load, its requests/s or
    None when it failed) until the rate settles or `bound_s` seconds are spent
    (`primed_s`: seconds of load already run before the windows, for the record).

    With a `jit` (the instance's compiler, measure/jit.py), the rate settling is
    not enough: the compiler must also be quiet (JitWatch.quiet), waited for
    until the instance has run JIT_BOUND_S seconds of load (`loaded_before_s`
    of them before this warm-up)."""
    result = WarmUp(bound_s=bound_s, primed_s=primed_s, loaded_before_s=loaded_before_s)
    windows = max(STEADY_MIN_WINDOWS, int(bound_s / WARMUP_WINDOW_S))
    if jit is not None:
        result.jit_quiet = False
        left = JIT_BOUND_S - loaded_before_s - primed_s
        windows = max(windows, int(left / WARMUP_WINDOW_S))
        jit.read(window=False)  # compiling since the last read (cases, priming) may break the quiet
        seen = len(jit.busy_ms)
    while len(result.curve) < windows:
        rate = run_window()
        if rate is None:
            result.problem = "a warm-up window failed"
            return result
        result.curve.append(rate)
        if jit is not None and result.jit_quiet is not None:
            jit.read()
            result.jit_compile_ms, result.jit_compiles = jit.busy_ms[seen:], jit.methods[seen:]
            result.jit_quiet = jit.quiet()
            if not result.jit_compile_ms and len(result.curve) >= JIT_SILENT_WINDOWS:
                result.jit_quiet = None  # the signal gives nothing: the windows alone decide
        if settled(result.curve) and result.jit_quiet is not False:
            result.steady = True
            return result
    # At the bound: noisy windows without a trend are steady all the same.
    result.steady = not not_steady(*halves_change(result.curve))
    return result


def warm_up_watched(
    run_window: Callable[[], float | None],
    bound_s: float,
    compiler: JitWatch | str | None,
    primed_s: float = 0.0,
    loaded_before_s: float = 0.0,
) -> WarmUp:
    """warm_up with an instance's compiler as a bench or a soak holds it: its watch,
    why there is none (a text), or None (no JIT declared); the record names which."""
    watched = compiler if isinstance(compiler, JitWatch) else None
    warmed = warm_up(run_window, bound_s, primed_s, jit=watched, loaded_before_s=loaded_before_s)
    warmed.jit_signal = watched.name if watched else (compiler or "")
    if watched and warmed.jit_quiet is None:
        warmed.jit_signal += ": no reading, so the windows alone decided"
    return warmed


def read_loopback_bytes(path: str = "/proc/net/dev") -> int | None:
    """Bytes received on the loopback interface so far (None where unreadable)."""
    try:
        with open(path) as handle:
            for line in handle:
                name, _, counters = line.partition(":")
                if name.strip() == LOOPBACK:
                    return int(counters.split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return None


def active_span(rates: list[float]) -> tuple[int, int]:
    """[start, end) of the windows while load flowed: edges below EDGE_SHARE of the
    median are idle; interior dips are kept (a stall is news)."""
    if not rates:
        return 0, 0
    floor = statistics.median(rates) * EDGE_SHARE
    start, end = 0, len(rates)
    while start < end and rates[start] < floor:
        start += 1
    while end > start and rates[end - 1] < floor:
        end -= 1
    return start, end


def window_rates(level: float, loopback: list[float]) -> list[float]:
    """One run's requests/s per sampled window: the loopback's bytes per window give the
    shape (every request and answer crosses it), the tool's requests/s (`level`) their
    mean. Just [level] when too few windows carried load."""
    start, end = active_span(loopback)
    active = loopback[start + 1 : end - 1]  # the edges are partly before or after the tool ran
    mean = statistics.fmean(active) if active else 0
    if len(active) < 3 or mean <= 0:
        return [level]
    return [level * rate / mean for rate in active]


def drift(rates: list[float]) -> tuple[float | None, float | None]:
    """(change, t) of the active windows less one at each end (partly before or
    after the tool ran): see halves_change."""
    start, end = active_span(rates)
    return halves_change(rates[start + 1 : end - 1])


def halves_change(values: list[float]) -> tuple[float | None, float | None]:
    """The second half's mean over the first half's, minus 1, and Welch's t of
    the difference (None when the windows are too few to tell)."""
    if len(values) < MIN_WINDOWS_FOR_DRIFT:
        return None, None
    half = len(values) // 2
    first, second = values[:half], values[-half:]
    m1, m2 = statistics.fmean(first), statistics.fmean(second)
    if m1 <= 0:
        return None, None
    error = (statistics.variance(first) / half + statistics.variance(second) / half) ** 0.5
    t = (m2 - m1) / error if error > 0 else float("inf") if m2 != m1 else 0.0
    return m2 / m1 - 1, t


def not_steady(change: float | None, t: float | None = None) -> bool:
    """Beyond DRIFT_BOUND, and significant (|t| > DRIFT_T) where t is known."""
    if change is None or abs(change) <= DRIFT_BOUND:
        return False
    return t is None or abs(t) > DRIFT_T
