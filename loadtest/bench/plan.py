"""The measurement plan of a bench run, and its duration estimate.

The plan is the ordered list of cases: for each repetition ("round") the
stack instances are shuffled, and within an instance the scenarios are, with
a seeded random generator, so the same knobs and seed give the same order
(that is what `--resume` relies on) and the seed is recorded with the
results.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

from loadtest.core.knobs import SCENARIO_HEADERS, SCENARIOS, STATIC_SCENARIOS, Knobs
from loadtest.core.verdict import STEADY_MIN_WINDOWS, WARMUP_WINDOW_S
from loadtest.runners import calibration

# Seconds a case costs beyond its duration (tool start, sampling, bookkeeping),
# and per started stack (start, ready, stop); used for the estimate only.
CASE_OVERHEAD_S = 0.5
# A warm-up window costs a little more than its second (the tool's start, new
# connections); a warm stack settles in the minimum number of windows.
WARMUP_WINDOW_COST_S = WARMUP_WINDOW_S + 0.1
INSTANCE_OVERHEAD_S = 6.0
VERIFY_S = 5.0
# Guesses for the estimate only: a fixed request count at this rate, a TTFB sample.
ASSUMED_FIXED_RPS = 1000.0
TTFB_SAMPLE_S = 0.01
# Runs of a sustainable-rate search (core/slo.py): the peak rate, about five
# halvings to 5% of the peak, two confirmations, and the recorded run.
SLO_RUNS = 9


@dataclass(frozen=True)
class Case:
    """One measurement: a load-tool run against one stack instance."""

    stack: str
    quota: float | None
    scenario: str
    connections: int
    tool: str
    rate: str  # "" closed loop, "5000" req/s, "50%" of the measured peak, "slo" (core/slo.py)
    repetition: int
    phase: str = "measure"  # "peak": the wrk run that sets the rate of the oha runs
    cores: int | None = None  # server cores of a SERVER_CORES sweep; None: SERVER_CPUS

    @property
    def key(self) -> str:
        quota = "" if self.quota is None else f"{self.quota:g}"
        parts = [self.stack, quota, self.scenario, str(self.connections), self.tool, self.rate,
                 str(self.repetition), self.phase]  # fmt: skip
        if self.cores is not None:
            parts.append(f"cores={self.cores}")
        return "|".join(parts)

    @property
    def path(self) -> str:
        return SCENARIOS[self.scenario]

    @property
    def headers(self) -> tuple[tuple[str, str], ...]:
        return SCENARIO_HEADERS.get(self.scenario, ())


@dataclass
class Instance:
    """One start of one stack (a quota needs its own start): its cases in order."""

    stack: str
    quota: float | None
    repetition: int
    cases: list[Case]
    cores: int | None = None  # server cores of a SERVER_CORES sweep; None: SERVER_CPUS


def scenarios_for(knobs: Knobs, contract: str) -> list[str]:
    """The knob's scenarios that a stack of this contract serves ("api" or "static")."""
    static = contract == "static"
    return [s for s in knobs.scenarios if (s in STATIC_SCENARIOS) == static]


def configurations(knobs: Knobs, quotas: tuple = ()) -> list[tuple[float | None, int | None]]:
    """(CPU quota in CPUs, server cores) of every start of a stack; `quotas`, when
    given, in place of SERVER_CPU_QUOTA (an A/B run's side, core/ab.py).

    With SERVER_CORES each quota is a share of the server cores, as the 2019
    run capped a share of a whole VM: 0.25 on 2 cores is 0.5 CPUs; a share of
    1 or more is the whole cores, uncapped.
    """
    shares = list(quotas) or knobs.quotas
    if not knobs.server_cores:
        return [(q, None) for q in shares]
    configs = []
    for cores in knobs.server_cores:
        for share in shares:
            quota = None if share is None or share >= 1 else round(share * cores, 4)
            configs.append((quota, cores))
    return configs


def server_cpus_for(knobs: Knobs, cores: int | None) -> tuple[int, ...]:
    """SERVER_CPUS, or `cores` CPUs: the server cores first, then the others (client last)."""
    if cores is None:
        return knobs.server_cpus
    available = sorted(os.sched_getaffinity(0))
    rest = [c for c in available if c not in knobs.server_cpus and c not in knobs.client_cpus]
    order = list(knobs.server_cpus) + rest + [c for c in knobs.client_cpus
                                              if c not in knobs.server_cpus]  # fmt: skip
    return tuple(order[:cores])


def warmup_connections(instance: Instance, scenario: str) -> int:
    """The connections a scenario is warmed up and primed at: the highest level the
    instance measures it at (one rule for both, so a JIT is primed on the load it meets)."""
    return max(c.connections for c in instance.cases if c.scenario == scenario)


def remaining(the_plan: list[Instance], done: set[str]) -> list[Instance]:
    """The plan without the cases already measured (`done`: their keys, from --resume)."""
    if not done:
        return the_plan
    todo = []
    for instance in the_plan:
        cases = [c for c in instance.cases if c.key not in done]
        if cases:
            todo.append(Instance(instance.stack, instance.quota, instance.repetition, cases,
                                 instance.cores))  # fmt: skip
    return todo


def _scenario_cases(
    knobs: Knobs, stack, quota, scenario, repetition, cores=None, over_tls=False
) -> list[Case]:
    cases = []
    tool = knobs.tool_for(over_tls)
    for connections in sorted(knobs.connections):
        base = dict(stack=stack, quota=quota, scenario=scenario, connections=connections,
                    repetition=repetition, cores=cores)  # fmt: skip
        if tool == "oha" and knobs.rate:
            # A share of the peak, or the sustainable-rate search, starts from the peak.
            if any(r.endswith("%") or r == "slo" for r in knobs.rate):
                cases.append(Case(tool="wrk", rate="", phase="peak", **base))
            cases.extend(Case(tool="oha", rate=r, **base) for r in knobs.rate)
        else:
            cases.append(Case(tool=tool, rate="", **base))
    return cases


def measures_ceiling(knobs: Knobs) -> bool:
    """Whether the nginx ceiling is in the plan: with the api scenarios (it serves those)."""
    return knobs.calibration and bool(scenarios_for(knobs, "api"))


def build_plan(
    knobs: Knobs, stacks: list[str], contracts: dict | None = None, over_tls: set | None = None,
    quotas: dict | None = None,
) -> list[Instance]:
    """The shuffled, interleaved plan; `contracts` maps a stack to "api" or "static",
    `over_tls` holds the stacks served over HTTPS (measured with TLS_TOOL when set),
    `quotas` a stack to its own CPU quotas (an A/B run's side) in place of the knob's.

    A stack gets only the scenarios of its contract (the ceiling serves the
    api's); a stack left with none is not in the plan (see `contract_notes`).
    """
    contracts, over_tls, quotas = contracts or {}, over_tls or set(), quotas or {}
    rng = random.Random(knobs.seed)
    plan = []
    for repetition in range(1, knobs.repeat + 1):
        instances = [(s, q, c) for s in stacks
                     for q, c in configurations(knobs, quotas.get(s, ()))]  # fmt: skip
        if measures_ceiling(knobs):
            instances.append((calibration.NAME, None, None))  # the ceiling: never capped
        rng.shuffle(instances)
        for stack, quota, cores in instances:
            scenarios = scenarios_for(knobs, contracts.get(stack, "api"))
            if not scenarios:
                continue
            rng.shuffle(scenarios)
            cases = []
            for scenario in scenarios:
                cases.extend(_scenario_cases(knobs, stack, quota, scenario, repetition, cores,
                                             stack in over_tls))  # fmt: skip
            plan.append(Instance(stack, quota, repetition, cases, cores))
    return plan


def contract_notes(knobs: Knobs, stacks: list[str], contracts: dict) -> list[str]:
    """What the contract filter did, for the plan printout."""
    notes = []
    for contract in ("api", "static"):
        mine = [s for s in stacks if contracts.get(s, "api") == contract]
        if not mine:
            continue
        scenarios = scenarios_for(knobs, contract)
        if scenarios:
            notes.append(f"{contract} stacks ({', '.join(mine)}): {', '.join(scenarios)}")
        else:
            wanted = ", ".join(STATIC_SCENARIOS if contract == "static" else
                               [s for s in SCENARIOS if s not in STATIC_SCENARIOS])  # fmt: skip
            notes.append(f"{contract} stacks ({', '.join(mine)}) NOT measured: no {contract} "
                         f"scenario in SCENARIOS (theirs: {wanted})")  # fmt: skip
    return notes


def case_seconds(knobs: Knobs, case: Case) -> float:
    ttfb = (0.3 + knobs.ttfb * TTFB_SAMPLE_S) if knobs.ttfb and case.phase == "measure" else 0.0
    fixed = knobs.requests.get(case.scenario) if case.tool in ("ab", "h2load") else None
    if fixed and case.tool == "ab":
        return 2.0 + CASE_OVERHEAD_S + ttfb  # a fixed request count: a few seconds at most
    if fixed:
        return fixed / ASSUMED_FIXED_RPS + CASE_OVERHEAD_S + ttfb
    if case.rate == "slo":
        return SLO_RUNS * (knobs.duration + CASE_OVERHEAD_S) + ttfb
    return knobs.duration + CASE_OVERHEAD_S + ttfb


def expected_warmup_s(knobs: Knobs) -> float:
    """A steady stack's warm-up per scenario; WARMUP is only its upper bound."""
    if knobs.warmup <= 0:
        return 0.0
    return STEADY_MIN_WINDOWS * WARMUP_WINDOW_COST_S


def instance_seconds(
    knobs: Knobs, instance: Instance, verify: bool, primed_s: float = 0.0
) -> float:
    """`primed_s`: the stack's JIT warm-up at most (Bench.primed)."""
    warmups = len({c.scenario for c in instance.cases}) * expected_warmup_s(knobs)
    if knobs.warmup > 0:
        warmups += primed_s
    cases = sum(case_seconds(knobs, c) for c in instance.cases)
    # The first case is measured again at the end (DRIFTED); not an open-loop one.
    first = instance.cases[0] if instance.cases else None
    again = case_seconds(knobs, first) if first and not first.rate else 0.0
    return INSTANCE_OVERHEAD_S + (VERIFY_S if verify else 0) + warmups + cases + again


def estimate_seconds(knobs: Knobs, plan: list[Instance], primed: dict | None = None) -> float:
    """`primed`: stack -> declared JIT warm-up seconds (manifest `warmup_s`)."""
    seen: set[str] = set()
    total = 0.0
    for instance in plan:
        verify = instance.stack not in seen and instance.stack != calibration.NAME
        seen.add(instance.stack)
        total += instance_seconds(knobs, instance, verify, (primed or {}).get(instance.stack, 0.0))
    return total
