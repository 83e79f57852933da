"""Before a scenario's first case: load until its throughput is steady, and for a JIT
stack, its declared priming first.

Both load at the scenario's warm-up level (`plan.warmup_connections`) and
neither writes a record: their raw output goes to raw/warmup/, their story into
the first case's record (`steady.WarmUp.to_dict`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.markup import escape

from loadtest.bench import plan
from loadtest.bench.console import rates
from loadtest.bench.context import RunContext
from loadtest.bench.loadspec import load_spec, raw_name
from loadtest.bench.plan import Case, Instance
from loadtest.core.verdict import WARMUP_WINDOW_S
from loadtest.measure import jit, steady
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.group import run_load

# The declared JIT warm-up goes round the instance's scenarios this many times,
# so each is hot and none was last primed long before it is measured.
PRIME_PASSES = 2


@dataclass
class Loaded:
    """A started instance as its warm-ups see it: its JIT's compiler signal (or why
    there is none) and the seconds of load it has had since it started."""

    compiler: jit.JitWatch | str | None = None
    loaded_s: float = 0.0

    def close(self) -> None:
        if isinstance(self.compiler, jit.JitWatch):
            self.compiler.close()
        self.compiler = None


def warmup_tool(measured_by: set[str]) -> str:
    """The tool that warms a scenario up: wrk (keep-alive, whatever tool measures), but
    h2load for h2load's cases: the same protocol, TLS sessions and headers."""
    return "h2load" if measured_by == {"h2load"} else "wrk"


def warm_up(
    context: RunContext, loaded: Loaded, server, instance: Instance, scenario: str
) -> steady.WarmUp | None:
    """Load before a scenario's first case until its throughput is steady (JITs,
    caches, pools): one-second windows, at most WARMUP seconds (measure/steady.py)."""
    if context.knobs.warmup <= 0:
        return None
    tool = warmup_tool({c.tool for c in instance.cases if c.scenario == scenario})
    case = Case(instance.stack, instance.quota, scenario,
                plan.warmup_connections(instance, scenario), tool, "",
                instance.repetition, "warmup", instance.cores)  # fmt: skip
    spec = load_spec(context.knobs, context.priority, server, case, duration=WARMUP_WINDOW_S)
    raw = context.raw("warmup", raw_name(case))
    primed = prime(context, server, instance, case)
    windows = 0

    def window() -> float | None:
        nonlocal windows
        windows += 1
        context.status.doing(f"{instance.stack} {scenario} warm-up {windows}s")
        result = run_load(get_tool(tool), spec, raw.with_name(f"{raw.name}.w{windows}"),
                          context.executor)  # fmt: skip
        return result.rps if result.ok and result.requests > 0 else None

    warmed = steady.warm_up_watched(window, context.knobs.warmup, loaded.compiler, primed,
                                    loaded_before_s=loaded.loaded_s)  # fmt: skip
    loaded.loaded_s += warmed.seconds
    say_unsettled(context, instance.stack, scenario, warmed, loaded.loaded_s)
    return warmed


def say_unsettled(
    context: RunContext, stack: str, scenario: str, warmed: steady.WarmUp, loaded_s: float
) -> None:
    if not warmed.steady and not warmed.problem:
        context.status.say(f"[yellow]! {escape(stack)} {scenario}: not steady after "
                           f"{warmed.seconds:g} s of warm-up (windows {rates(warmed.curve)})[/]")  # fmt: skip
    if warmed.cold:
        context.status.say(f"[yellow]! {escape(stack)} {scenario}: COLD, its JIT still "
                           f"spent {warmed.jit_compile_ms[-1]:g} ms of the last second compiling "
                           f"after {loaded_s:g} s of load[/]")  # fmt: skip


def prime(context: RunContext, server, instance: Instance, case: Case) -> float:
    """Before an instance's first warm-up: the seconds of load its manifest
    declares (`warmup_s`, a JIT's compile queue), spread over every scenario
    the instance will measure, in PRIME_PASSES turns.

    A JIT compiles the code each request path runs: primed on one scenario
    only, the others start cold (spring-mvc's /workday after 60 s of / ran
    15k, 18k, 29k, then 44k req/s in its first 1 s windows; after a mixed
    prime, 44k from the first window: docs/methodology.md, "Steady state").
    """
    manifest = context.manifests.get(instance.stack)
    seconds = manifest.warmup_s if manifest else 0.0
    first = case.scenario == instance.cases[0].scenario
    if not seconds or not first:
        return 0.0
    scenarios = list(dict.fromkeys(c.scenario for c in instance.cases))
    slice_s = max(WARMUP_WINDOW_S, seconds / (PRIME_PASSES * len(scenarios)))
    for turn in range(PRIME_PASSES):
        for scenario in scenarios:
            context.status.doing(f"{instance.stack} JIT warm-up {seconds:g} s: {scenario} "
                                 f"({turn + 1}/{PRIME_PASSES})")  # fmt: skip
            load = replace(case, scenario=scenario,
                           connections=plan.warmup_connections(instance, scenario))  # fmt: skip
            raw = context.raw("warmup", f"{raw_name(load)}.primed{turn + 1}")
            spec = load_spec(context.knobs, context.priority, server, load, duration=slice_s)
            run_load(get_tool(case.tool), spec, raw, context.executor)
    return seconds
