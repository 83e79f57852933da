"""The sustainable rate: the highest constant request rate a stack serves
within a latency objective (profile `slo`).

A closed-loop peak says how fast a server goes when every client waits for
its answer; users meet it at a fixed arrival rate, and what they feel is the
tail. So the search offers constant rates (oha, open loop, latencies
corrected for coordinated omission) and keeps the highest one at which

- the objective's percentile (SLO_PERCENTILE, default 99) stays within
  SLO_P99_MS (default 10 ms),
- no request failed, and
- the achieved rate is within OFFERED_RATE_SHARE of the offered one (a
  server that cannot keep up answers fewer requests than were sent).

A step where the load tool itself was the bottleneck says nothing about the
server: it is kept in the record as `client`, and the search goes on below
it, since rates above that are out of the tool's reach; an answer found
that way is a lower bound, and `reason` says so.

The search starts at the closed-loop peak (a stack that meets the objective
there is sustainable at least at its peak), then bisects between the last
rate that passed and the first that failed until they are within PRECISION
of the peak, and confirms the answer with a second run at that rate, so a
lucky run is not the answer.
A rate that fails its confirmation
is not sustainable: the bisection resumes below it, from the last lower rate
that passed, up to CONFIRMATIONS times. This module is pure arithmetic on
step outcomes; loadtest/bench runs them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from loadtest.core.verdict import OFFERED_RATE_SHARE

# Bisection stops when the bracket is narrower than 5% of the peak: about five
# steps, and finer than the run-to-run spread of one step on a shared host.
PRECISION = 0.05
# Below 5% of the peak the stack is called unable to meet the objective: its
# tail comes from something other than load (a timer, a stall, GC).
FLOOR_SHARE = 0.05
# A step's percentile means something only over enough requests (the 99th of
# 2,000 is the 20th-highest); a slow rate runs longer, up to the cap.
MIN_STEP_REQUESTS = 2000
MAX_STEP_S = 30.0
# An answer must pass twice; a rate that fails its confirmation is searched
# again below, at most this many times (each costs a few steps).
CONFIRMATIONS = 3


@dataclass(frozen=True)
class Step:
    """One constant-rate run: what was offered and what came back."""

    offered: float
    achieved: float
    percentile_ms: float | None
    errors: int
    client_bound: bool

    def outcome(self, objective_ms: float) -> str:
        """pass, fail (the server missed the objective) or client (no verdict)."""
        if self.client_bound:
            return "client"
        if (
            self.errors
            or self.percentile_ms is None
            or self.percentile_ms > objective_ms
            or self.achieved < OFFERED_RATE_SHARE * self.offered
        ):
            return "fail"
        return "pass"


@dataclass
class SloResult:
    objective_ms: float
    percentile: float
    peak: float
    slo_rps: float | None = None  # None: no rate from the floor to the peak met it
    percentile_ms: float | None = None  # the percentile reached at slo_rps (confirmation)
    reason: str = ""  # why there is no slo_rps, or what limited the search
    steps: list = field(default_factory=list)  # [offered, achieved, percentile_ms, outcome]

    def to_record(self) -> dict:
        data = asdict(self)
        return {
            "slo_rps": data["slo_rps"],
            "slo_percentile_ms": data["percentile_ms"],
            "slo_objective_ms": data["objective_ms"],
            "slo_percentile": data["percentile"],
            "slo_reason": data["reason"],
            "slo_steps": data["steps"],
            "slo_share_of_peak": (
                round(self.slo_rps / self.peak, 4) if self.slo_rps and self.peak else None
            ),
        }


def step_seconds(rate: float, duration_s: float) -> float:
    """DURATION, or longer at a slow rate so the percentile has MIN_STEP_REQUESTS."""
    if rate <= 0:
        return duration_s
    return min(MAX_STEP_S, max(duration_s, MIN_STEP_REQUESTS / rate))


def search(
    peak: float,
    probe: Callable[[float], Step],
    objective_ms: float,
    percentile: float,
    precision: float = PRECISION,
) -> SloResult:
    """Find the sustainable rate below `peak`; `probe(rate)` runs one step."""
    result = SloResult(objective_ms, percentile, peak)

    def run(rate: float) -> str:
        step = probe(round(rate, 1))
        outcome = step.outcome(objective_ms)
        result.steps.append([step.offered, round(step.achieved, 1), step.percentile_ms, outcome])
        return outcome

    if peak <= 0:
        result.reason = "no closed-loop peak to start from"
        return result
    first = run(peak)
    client_limit = peak if first == "client" else None
    passed = [peak] if first == "pass" else []
    low, high = (peak, peak) if first == "pass" else (0.0, peak)
    floor = FLOOR_SHARE * peak
    for _ in range(CONFIRMATIONS):
        while high - low > precision * peak:
            middle = (low + high) / 2
            if middle < floor:
                break
            outcome = run(middle)
            if outcome == "client":
                client_limit = middle
            if outcome == "pass":
                passed.append(middle)
            low, high = (middle, high) if outcome == "pass" else (low, middle)
        if low <= 0:
            break
        if run(low) == "pass":  # the confirmation: a lucky run is not the answer
            result.slo_rps = round(low, 1)
            result.percentile_ms = result.steps[-1][2]
            break
        # Not sustainable after all: search again below it, from the last lower pass.
        high = low
        low = max((rate for rate in passed if rate < high), default=0.0)
    else:
        result.reason = f"passes did not repeat in {CONFIRMATIONS} confirmations (noisy host?)"
        return result
    if result.slo_rps is None:
        result.reason = (
            f"the load tool could not keep {client_limit:.0f} req/s, and no lower rate passed"
            if client_limit and all(step[3] == "client" for step in result.steps)
            else f"p{percentile:g} above {objective_ms:g} ms (or errors) at every rate "
            f"down to {FLOOR_SHARE:.0%} of the peak"
        )
    elif client_limit:
        result.reason = (
            f"a lower bound: the load tool could not keep {client_limit:.0f} req/s, "
            "so higher rates were not tried"
        )
    return result
