"""RATE=slo on a started stack: the sustainable-rate search (core/slo.py), step by step.

Each step is one constant-rate oha run below the case's peak; the run recorded
is the search's last passing one (its confirmation), or its last one when none
passed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.markup import escape

from loadtest.bench.context import RunContext
from loadtest.bench.plan import Case
from loadtest.bench.record import Ran
from loadtest.core import slo
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.base import latency_key
from loadtest.measure.tools.group import client_load

# run_at(rate, seconds, raw output prefix): one load-tool run at that constant rate.
RunAt = Callable[[float, float, Path], Ran]


def search(
    context: RunContext, case: Case, peak: float, run_at: RunAt, raw: Path
) -> tuple[slo.SloResult, Ran]:
    """The search's result and the run that stands for it in the case's record."""
    k = context.knobs
    tool = get_tool(case.tool)
    runs: list[Ran] = []
    passed: list[Ran] = []

    def probe(rate: float) -> slo.Step:
        context.status.doing(f"{case.stack} {case.scenario} c={case.connections} "
                             f"SLO step {len(runs) + 1} @{rate:g}/s")  # fmt: skip
        ran = run_at(rate, slo.step_seconds(rate, k.duration),
                     raw.with_name(f"{raw.name}-s{len(runs) + 1}"))  # fmt: skip
        runs.append(ran)
        result = ran.result
        answered = result.ok and result.requests > 0
        step = slo.Step(
            offered=rate,
            achieved=result.rps if answered else 0.0,
            percentile_ms=percentile_ms(result, k.slo_percentile) if answered else None,
            errors=result.errors_total + (0 if answered else 1),
            client_bound=client_load(tool, ran.spec, result)[1],
        )  # fmt: skip
        if step.outcome(k.slo_p99_ms) == "pass":
            passed.append(ran)
        return step

    found = slo.search(peak, probe, k.slo_p99_ms, k.slo_percentile)
    answer = f"{found.slo_rps:,.0f} req/s" if found.slo_rps else f"none ({found.reason})"
    context.status.say(escape(
        f"[{case.stack}] {case.scenario} c={case.connections}: sustainable within "
        f"p{k.slo_percentile:g} <= {k.slo_p99_ms:g} ms: {answer}; peak {peak:,.0f}, "
        f"{len(found.steps)} steps"))  # fmt: skip
    return found, (passed[-1] if found.slo_rps else runs[-1])


def percentile_ms(result, percent: float) -> float | None:
    """The result's latency at `percent`: its own figure, else from its percentile curve."""
    value = result.latency_ms.get(latency_key(percent))
    if value is not None:
        return value
    above = [ms for p, ms in result.latency_curve if p >= percent]
    return above[0] if above else None
