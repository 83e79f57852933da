"""Knobs, profiles and the measurement plan of a bench run.

Knobs come from a profile in profiles.toml, overridden by the environment
(SERVERS=..., DURATION=...) and then by command-line options. The plan is
the ordered list of cases: for each repetition ("round") the stack instances
are shuffled, and within an instance the scenarios are, with a seeded random
generator, so the same knobs and seed give the same order (that is what
`--resume` relies on) and the seed is recorded with the results.
"""

from __future__ import annotations

import os
import random
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import calibration
from .cgroups import parse_memory

PROFILES_FILE = Path(__file__).with_name("profiles.toml")
SCENARIOS = {
    "hello": "/",
    "kb1": "/?n=1",
    "kb10": "/?n=10",
    "kb100": "/?n=100",
    "workday": "/workday",
}
TOOLS = ("wrk", "oha", "ab")
FRONTS = ("none", "nginx", "apache")  # loadtest/front.py
# Knob name (as in the Makefile and the environment) -> profiles.toml key.
KNOBS = {
    "SERVERS": "servers",
    "SCENARIOS": "scenarios",
    "CONNECTIONS": "connections",
    "DURATION": "duration",
    "WARMUP": "warmup",
    "REPEAT": "repeat",
    "SERVER_CPUS": "server_cpus",
    "CLIENT_CPUS": "client_cpus",
    "SERVER_CPU_QUOTA": "server_cpu_quota",
    "SERVER_MEMORY": "server_memory",
    "RATE": "rate",
    "TOOL": "tool",
    "SEED": "seed",
    "RUNNER": "runner",
    "TIMEOUT": "timeout",
    "PRIORITY": "priority",
    "FRONT": "front",
}
# Seconds a case costs beyond its duration (tool start, sampling, bookkeeping),
# and per started stack (start, ready, stop); used for the estimate only.
CASE_OVERHEAD_S = 0.5
INSTANCE_OVERHEAD_S = 6.0
VERIFY_S = 5.0


class KnobError(Exception):
    """A knob has a value the harness cannot use."""


def load_profiles(path: Path = PROFILES_FILE) -> dict:
    with path.open("rb") as handle:
        return tomllib.load(handle)


def profile_names(path: Path = PROFILES_FILE) -> list[str]:
    return [name for name in load_profiles(path) if name != "defaults"]


def split_list(text: str) -> list[str]:
    return [part.strip() for part in text.replace(" ", ",").split(",") if part.strip()]


def parse_cpus(text: str) -> tuple[int, ...]:
    """'0', '0,1', '2-3' -> (0,), (0, 1), (2, 3)."""
    cpus: list[int] = []
    for part in split_list(text):
        if "-" in part:
            low, high = part.split("-", 1)
            cpus.extend(range(int(low), int(high) + 1))
        else:
            cpus.append(int(part))
    if not cpus:
        raise KnobError(f"no CPU in {text!r}")
    return tuple(dict.fromkeys(cpus))


def default_cpus() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Server cores and client cores: the first half for the server, the rest for the tool.

    On the 2-core reference machine that is SERVER_CPUS=0, CLIENT_CPUS=1.
    """
    available = sorted(os.sched_getaffinity(0))
    if len(available) == 1:
        return (available[0],), (available[0],)
    half = len(available) // 2
    return tuple(available[:half]), tuple(available[half:])


@dataclass
class Knobs:
    profile: str
    servers: list[str]
    scenarios: list[str]
    connections: list[int]
    duration: float
    warmup: float
    repeat: int
    server_cpus: tuple[int, ...]
    client_cpus: tuple[int, ...]
    server_cpu_quota: list[float]
    server_memory: str
    rate: list[str]
    tool: str
    seed: int
    runner: str
    timeout: int
    keepalive: bool
    requests: dict
    calibration: bool
    priority: int = 0  # nice value for the server and the tool (loadtest/priority.py)
    front: str = "none"  # TLS reverse proxy before each stack: none, nginx, apache (front.py)
    experiment: str = "none"
    description: str = ""
    servers_from_profile: bool = False
    sources: dict = field(default_factory=dict)  # knob -> "profile" | "env" | "cli"

    @property
    def threads(self) -> int:
        return len(self.client_cpus)

    @property
    def memory_bytes(self) -> int | None:
        return parse_memory(self.server_memory) if self.server_memory else None

    @property
    def quotas(self) -> list[float | None]:
        return list(self.server_cpu_quota) or [None]

    def to_dict(self) -> dict:
        data = asdict(self)
        data["server_cpus"] = list(self.server_cpus)
        data["client_cpus"] = list(self.client_cpus)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Knobs:
        data = dict(data)
        data["server_cpus"] = tuple(data["server_cpus"])
        data["client_cpus"] = tuple(data["client_cpus"])
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def _convert(key: str, value):
    """A knob's text (env/CLI) or TOML value -> its typed value."""
    try:
        if key in ("servers", "scenarios", "rate"):
            items = split_list(value) if isinstance(value, str) else list(value)
            return [str(v) for v in items]
        if key == "connections":
            items = split_list(value) if isinstance(value, str) else list(value)
            return [int(v) for v in items]
        if key == "server_cpu_quota":
            items = split_list(value) if isinstance(value, str) else list(value)
            return [float(v) for v in items]
        if key in ("duration", "warmup"):
            return float(str(value).rstrip("s"))
        if key in ("repeat", "seed", "timeout", "priority"):
            return int(str(value).rstrip("s"))
        if key in ("server_cpus", "client_cpus"):
            return parse_cpus(value) if isinstance(value, str) else tuple(int(v) for v in value)
        if key in ("keepalive", "calibration"):
            if isinstance(value, bool):
                return value
            return str(value).lower() in ("1", "true", "yes", "on")
    except ValueError as exc:
        raise KnobError(f"{key.upper()}={value!r}: {exc}") from None
    return value


def resolve(profile: str = "", env: dict | None = None, cli: dict | None = None) -> Knobs:
    """Profile values, then environment knobs, then command-line knobs (non-empty wins)."""
    env = os.environ if env is None else env
    cli = cli or {}
    profiles = load_profiles()
    profile = profile or cli.get("PROFILE") or env.get("PROFILE") or "quick"
    if profile not in profiles or profile == "defaults":
        raise KnobError(f"unknown profile {profile!r}; profiles: {', '.join(profile_names())}")
    values = dict(profiles["defaults"])
    values.update(profiles[profile])
    sources = dict.fromkeys(values, "profile")
    servers_from_profile = "servers" in profiles[profile]
    for layer_name, layer in (("env", env), ("cli", cli)):
        for knob, key in KNOBS.items():
            raw = layer.get(knob)
            if raw is None or str(raw).strip() == "":
                continue
            values[key] = raw
            sources[key] = layer_name
            if key == "servers":
                servers_from_profile = False
    typed = {key: _convert(key, value) for key, value in values.items()}
    server_default, client_default = default_cpus()
    typed.setdefault("server_cpus", server_default)
    typed.setdefault("client_cpus", client_default)
    typed.setdefault("runner", "native")
    if "seed" not in typed:
        typed["seed"] = random.SystemRandom().randrange(1, 2**31)
        sources["seed"] = "random"
    knobs = Knobs(
        profile=profile,
        servers_from_profile=servers_from_profile,
        sources=sources,
        **{k: v for k, v in typed.items() if k in Knobs.__dataclass_fields__ and k != "profile"},
    )
    validate(knobs)
    return knobs


def validate(knobs: Knobs) -> None:
    unknown = [s for s in knobs.scenarios if s not in SCENARIOS]
    if unknown or not knobs.scenarios:
        raise KnobError(f"SCENARIOS: unknown {unknown or 'empty'}; use {', '.join(SCENARIOS)}")
    if not knobs.connections or min(knobs.connections) < 1:
        raise KnobError("CONNECTIONS must be a list of positive integers")
    if knobs.tool not in TOOLS:
        raise KnobError(f"TOOL={knobs.tool!r}: use one of {', '.join(TOOLS)}")
    if knobs.front not in FRONTS:
        raise KnobError(f"FRONT={knobs.front!r}: use one of {', '.join(FRONTS)}")
    if not -20 <= knobs.priority <= 19:
        raise KnobError(f"PRIORITY={knobs.priority}: a nice value, -20..19 (0 = unchanged)")
    if knobs.duration <= 0 or knobs.warmup < 0 or knobs.repeat < 1 or knobs.timeout < 1:
        raise KnobError("DURATION > 0, WARMUP >= 0, REPEAT >= 1 and TIMEOUT >= 1 are required")
    for quota in knobs.server_cpu_quota:
        if quota <= 0:
            raise KnobError(f"SERVER_CPU_QUOTA={quota}: must be > 0 (CPUs, e.g. 0.25)")
    for rate in knobs.rate:
        try:
            value = float(rate[:-1]) if rate.endswith("%") else float(rate)
        except ValueError:
            raise KnobError(
                f"RATE={rate!r}: use requests/s (5000) or a share of the peak (50%)"
            ) from None
        if value <= 0:
            raise KnobError(f"RATE={rate!r} must be positive")
    if knobs.rate and knobs.tool != "oha":
        raise KnobError("RATE is for open-loop runs: set TOOL=oha")
    if knobs.server_memory:
        try:
            parse_memory(knobs.server_memory)
        except ValueError as exc:
            raise KnobError(f"SERVER_MEMORY: {exc}") from None
    available = set(os.sched_getaffinity(0))
    for name, cpus in (("SERVER_CPUS", knobs.server_cpus), ("CLIENT_CPUS", knobs.client_cpus)):
        missing = [c for c in cpus if c not in available]
        if missing:
            raise KnobError(f"{name}: CPUs {missing} not available here ({sorted(available)})")


@dataclass(frozen=True)
class Case:
    """One measurement: a load-tool run against one stack instance."""

    stack: str
    quota: float | None
    scenario: str
    connections: int
    tool: str
    rate: str  # "" closed loop, "5000" req/s, "50%" of the measured peak
    repetition: int
    phase: str = "measure"  # "peak": the wrk run that sets the rate of the oha runs

    @property
    def key(self) -> str:
        quota = "" if self.quota is None else f"{self.quota:g}"
        return "|".join(
            [self.stack, quota, self.scenario, str(self.connections), self.tool, self.rate,
             str(self.repetition), self.phase]
        )  # fmt: skip

    @property
    def path(self) -> str:
        return SCENARIOS[self.scenario]


@dataclass
class Instance:
    """One start of one stack (a quota needs its own start): its cases in order."""

    stack: str
    quota: float | None
    repetition: int
    cases: list[Case]


def _scenario_cases(knobs: Knobs, stack, quota, scenario, repetition) -> list[Case]:
    cases = []
    for connections in sorted(knobs.connections):
        base = dict(stack=stack, quota=quota, scenario=scenario, connections=connections,
                    repetition=repetition)  # fmt: skip
        if knobs.tool == "oha" and knobs.rate:
            if any(r.endswith("%") for r in knobs.rate):
                cases.append(Case(tool="wrk", rate="", phase="peak", **base))
            cases.extend(Case(tool="oha", rate=r, **base) for r in knobs.rate)
        else:
            cases.append(Case(tool=knobs.tool, rate="", **base))
    return cases


def build_plan(knobs: Knobs, stacks: list[str]) -> list[Instance]:
    rng = random.Random(knobs.seed)
    plan = []
    for repetition in range(1, knobs.repeat + 1):
        instances = [(s, q) for s in stacks for q in knobs.quotas]
        if knobs.calibration:
            instances.append((calibration.NAME, None))  # the ceiling: never capped
        rng.shuffle(instances)
        for stack, quota in instances:
            scenarios = list(knobs.scenarios)
            rng.shuffle(scenarios)
            cases = []
            for scenario in scenarios:
                cases.extend(_scenario_cases(knobs, stack, quota, scenario, repetition))
            plan.append(Instance(stack, quota, repetition, cases))
    return plan


def case_seconds(knobs: Knobs, case: Case) -> float:
    if case.tool == "ab" and knobs.requests.get(case.scenario):
        return 2.0 + CASE_OVERHEAD_S  # a fixed request count: a few seconds at most
    return knobs.duration + CASE_OVERHEAD_S


def instance_seconds(knobs: Knobs, instance: Instance, verify: bool) -> float:
    warmups = len({c.scenario for c in instance.cases}) * knobs.warmup
    cases = sum(case_seconds(knobs, c) for c in instance.cases)
    return INSTANCE_OVERHEAD_S + (VERIFY_S if verify else 0) + warmups + cases


def estimate_seconds(knobs: Knobs, plan: list[Instance]) -> float:
    seen: set[str] = set()
    total = 0.0
    for instance in plan:
        verify = instance.stack not in seen and instance.stack != calibration.NAME
        seen.add(instance.stack)
        total += instance_seconds(knobs, instance, verify)
    return total
