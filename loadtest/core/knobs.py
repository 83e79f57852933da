"""The knobs of a run: profiles, their values, and the rules they must obey.

Knobs come from a profile in profiles.toml, overridden by the environment
(SERVERS=..., DURATION=...) and then by command-line options; `resolve`
returns them typed and validated. The Makefile forwards exactly the names of
`KNOBS`; docs/methodology.md explains each one.
"""

from __future__ import annotations

import os
import random
import re
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from loadtest.core.runner import RUNNERS

PROFILES_FILE = Path(__file__).with_name("profiles.toml")
MEMORY_UNITS = {"k": 1024, "m": 1024**2, "g": 1024**3}
SCENARIOS = {
    "hello": "/",
    "kb1": "/?n=1",
    "kb10": "/?n=10",
    "kb100": "/?n=100",
    "workday": "/workday",
    "page": "/",
}
FRONTS = ("none", "nginx", "apache", "self")  # TLS fronts: loadtest/runners/front.py
# Scenarios of static stacks (manifest `contract = "static"`); the rest are the api's.
STATIC_SCENARIOS = ("page",)
# Request headers per scenario: the static page is fetched as a browser does.
SCENARIO_HEADERS = {"page": (("Accept-Encoding", "br, gzip"),)}
TOOLS = ("wrk", "oha", "ab", "h2load")
HTTP_VERSIONS = ("2", "1.1")


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


def parse_memory(text: str) -> int:
    """'512m' -> bytes. Accepts k, m, g suffixes (binary, like Docker)."""
    text = text.strip().lower()
    if text and text[-1] in MEMORY_UNITS:
        number, factor = text[:-1], MEMORY_UNITS[text[-1]]
    else:
        number, factor = text, 1
    if not number.isdigit() or int(number) <= 0:
        raise ValueError(f"memory limit must look like 512m or 2g, got {text!r}")
    return int(number) * factor


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
    # TLS before each stack (front.py): none, a proxy (nginx, apache), or self (the stack's own)
    front: str = "none"
    ttfb: int = 0  # time-to-first-byte samples per case (fresh connections); 0 = none
    # Server core counts to sweep (each SERVER_CPU_QUOTA then is per core); [] = SERVER_CPUS.
    server_cores: list = field(default_factory=list)
    http: str = "2"  # h2load over https: "2" (ALPN h2) or "1.1" (--h1)
    # The load tool for stacks served over HTTPS (a front, a tls stack or variant); "": TOOL.
    tls_tool: str = ""
    # RATE=slo: the latency objective of the sustainable-rate search (loadtest/core/slo.py).
    slo_p99_ms: float = 10.0
    slo_percentile: float = 99.0
    # Docker engines elsewhere (docs/remote.md): the stacks' host and the load's hosts,
    # each a Docker context name or ssh://user@host; "" and [] = this machine.
    server_host: str = ""
    client_hosts: list = field(default_factory=list)
    experiment: str = "none"
    description: str = ""
    servers_from_profile: bool = False
    sources: dict = field(default_factory=dict)  # knob -> "profile" | "env" | "cli"

    @property
    def threads(self) -> int:
        return len(self.client_cpus)

    def tool_for(self, over_tls: bool) -> str:
        """The load tool of a stack: TLS_TOOL for one served over HTTPS, when set, else TOOL."""
        return self.tls_tool if over_tls and self.tls_tool else self.tool

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


def _items(value) -> list:
    return split_list(value) if isinstance(value, str) else list(value)


def _texts(value) -> list[str]:
    return [str(x) for x in _items(value)]


def _ints(value) -> list[int]:
    return [int(x) for x in _items(value)]


def _floats(value) -> list[float]:
    return [float(x) for x in _items(value)]


def _seconds(value) -> float:
    return float(str(value).rstrip("s"))


def _whole(value) -> int:
    return int(str(value).rstrip("s"))


def _flag(value) -> bool:
    return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")


def _cores(value) -> tuple[int, ...]:
    return parse_cpus(value) if isinstance(value, str) else tuple(int(v) for v in value)


@dataclass(frozen=True)
class Knob:
    """One knob: its name (the Makefile's, the environment's, `--name` on the command
    line), its key in profiles.toml and in `Knobs`, and the parser of its text."""

    name: str
    key: str
    parse: Callable[[object], object]


# Every knob, once. Defaults live in profiles.toml's [defaults]; the rules that
# relate knobs to each other are in `validate`.
KNOB_TABLE = (
    Knob("SERVERS", "servers", _texts),
    Knob("SCENARIOS", "scenarios", _texts),
    Knob("CONNECTIONS", "connections", _ints),
    Knob("DURATION", "duration", _seconds),
    Knob("WARMUP", "warmup", _seconds),
    Knob("REPEAT", "repeat", _whole),
    Knob("SERVER_CPUS", "server_cpus", _cores),
    Knob("CLIENT_CPUS", "client_cpus", _cores),
    Knob("SERVER_CPU_QUOTA", "server_cpu_quota", _floats),
    Knob("SERVER_MEMORY", "server_memory", str),
    Knob("RATE", "rate", _texts),
    Knob("TOOL", "tool", str),
    Knob("SEED", "seed", _whole),
    Knob("RUNNER", "runner", str),
    Knob("TIMEOUT", "timeout", _whole),
    Knob("PRIORITY", "priority", _whole),
    Knob("FRONT", "front", str),
    Knob("TTFB", "ttfb", _whole),
    Knob("SERVER_CORES", "server_cores", _ints),
    Knob("HTTP", "http", str),
    Knob("TLS_TOOL", "tls_tool", str),
    Knob("SLO_P99_MS", "slo_p99_ms", _seconds),
    Knob("SLO_PERCENTILE", "slo_percentile", _seconds),
    Knob("SERVER_HOST", "server_host", str),
    Knob("CLIENT_HOSTS", "client_hosts", _texts),
)
# Knob name -> key, for the command line and the environment.
KNOBS = {knob.name: knob.key for knob in KNOB_TABLE}
# Keys only a profile sets (no knob): parsed the same way.
PARSERS = {
    **{knob.key: knob.parse for knob in KNOB_TABLE},
    "keepalive": _flag,
    "calibration": _flag,
}


def _convert(key: str, value):
    """A knob's text (env/CLI) or TOML value -> its typed value."""
    parse = PARSERS.get(key)
    if parse is None:
        return value
    try:
        return parse(value)
    except ValueError as exc:
        raise KnobError(f"{key.upper()}={value!r}: {exc}") from None


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
    # auto: Docker when a daemon answers (decided when the run starts, loadtest/runner.py).
    typed.setdefault("runner", "auto")
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
    # ab and h2load send a request count over the connections: at least one each.
    if fewer := {s: n for s, n in knobs.requests.items() if n < max(knobs.connections)}:
        raise KnobError(f"requests {fewer} are fewer than CONNECTIONS={max(knobs.connections)}: "
                        "every connection sends one at least")  # fmt: skip
    if knobs.runner not in RUNNERS:
        raise KnobError(f"RUNNER={knobs.runner!r}: use one of {', '.join(RUNNERS)}")
    if knobs.tool not in TOOLS:
        raise KnobError(f"TOOL={knobs.tool!r}: use one of {', '.join(TOOLS)}")
    if knobs.front not in FRONTS:
        raise KnobError(f"FRONT={knobs.front!r}: use one of {', '.join(FRONTS)}")
    if knobs.http not in HTTP_VERSIONS:
        raise KnobError(f"HTTP={knobs.http!r}: use one of {', '.join(HTTP_VERSIONS)}")
    if knobs.tls_tool and knobs.tls_tool not in TOOLS:
        raise KnobError(f"TLS_TOOL={knobs.tls_tool!r}: use one of {', '.join(TOOLS)}")
    if knobs.tls_tool and knobs.rate:
        raise KnobError("TLS_TOOL is for closed-loop runs: RATE gives every stack to oha")
    if knobs.http != "2" and "h2load" not in (knobs.tool, knobs.tls_tool):
        raise KnobError("HTTP=1.1 chooses h2load's protocol: set TOOL=h2load (or TLS_TOOL)")
    if knobs.ttfb < 0:
        raise KnobError(f"TTFB={knobs.ttfb}: a number of samples per case (0 = none)")
    if not -20 <= knobs.priority <= 19:
        raise KnobError(f"PRIORITY={knobs.priority}: a nice value, -20..19 (0 = unchanged)")
    if knobs.duration <= 0 or knobs.warmup < 0 or knobs.repeat < 1 or knobs.timeout < 1:
        raise KnobError("DURATION > 0, WARMUP >= 0, REPEAT >= 1 and TIMEOUT >= 1 are required")
    for quota in knobs.server_cpu_quota:
        if quota <= 0:
            raise KnobError(f"SERVER_CPU_QUOTA={quota}: must be > 0 (CPUs, e.g. 0.25)")
    for rate in knobs.rate:
        if rate == "slo":
            continue
        try:
            value = float(rate[:-1]) if rate.endswith("%") else float(rate)
        except ValueError:
            raise KnobError(
                f"RATE={rate!r}: use requests/s (5000), a share of the peak (50%) "
                "or slo (the highest rate within SLO_P99_MS)"
            ) from None
        if value <= 0:
            raise KnobError(f"RATE={rate!r} must be positive")
    if knobs.rate and knobs.tool != "oha":
        raise KnobError("RATE is for open-loop runs: set TOOL=oha")
    if knobs.slo_p99_ms <= 0 or not 50 <= knobs.slo_percentile < 100:
        raise KnobError("SLO_P99_MS must be > 0 ms and SLO_PERCENTILE within 50..99.99")
    if knobs.server_memory:
        try:
            parse_memory(knobs.server_memory)
        except ValueError as exc:
            raise KnobError(f"SERVER_MEMORY: {exc}") from None
    validate_hosts(knobs)
    available = set(os.sched_getaffinity(0))
    for cores in knobs.server_cores:
        if not 1 <= cores <= len(available):
            raise KnobError(f"SERVER_CORES: {cores} cores asked, {len(available)} available here")
    for name, cpus, elsewhere in (
        ("SERVER_CPUS", knobs.server_cpus, knobs.server_host),
        ("CLIENT_CPUS", knobs.client_cpus, knobs.client_hosts),
    ):
        if elsewhere:  # the cores of another machine: its engine applies them
            continue
        missing = [c for c in cpus if c not in available]
        if missing:
            raise KnobError(f"{name}: CPUs {missing} not available here ({sorted(available)})")


# A context name as `docker context create` accepts it.
CONTEXT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
# The tools whose raw latency data merges exactly across client hosts: each has
# command_for_merge and complete_for_merge (measure/tools/group.py).
MERGEABLE_TOOLS = ("wrk", "oha")


def host_problem(text: str) -> str | None:
    """None when `text` names a Docker engine the harness may use, else why not.

    Engines elsewhere are reached only through SSH: a Docker context whose
    endpoint is ssh:// (checked when the run starts) or an ssh:// URL. A
    tcp:// engine answers anybody who can reach its port, so it is refused.
    """
    if text.startswith("ssh://"):
        return None if len(text) > len("ssh://") else "ssh:// needs a host"
    if "://" in text:
        return (
            f"{text!r}: engines elsewhere are reached through SSH only "
            "(ssh://user@host or a Docker context whose endpoint is ssh://); "
            "an engine on a TCP port answers anybody who reaches it"
        )
    if not CONTEXT_NAME.match(text):
        return f"{text!r} is neither an ssh:// URL nor a Docker context name"
    return None


def validate_hosts(knobs: Knobs) -> None:
    """SERVER_HOST and CLIENT_HOSTS: Docker engines, used by the Docker runner only."""
    hosts = ([knobs.server_host] if knobs.server_host else []) + list(knobs.client_hosts)
    if not hosts:
        return
    for host in hosts:
        if problem := host_problem(host):
            raise KnobError(f"SERVER_HOST/CLIENT_HOSTS: {problem}")
    if len(set(knobs.client_hosts)) != len(knobs.client_hosts):
        raise KnobError(f"CLIENT_HOSTS names a host twice: {','.join(knobs.client_hosts)}")
    if knobs.runner != "docker":
        raise KnobError("SERVER_HOST and CLIENT_HOSTS run stacks and load through Docker engines: "
                        "set RUNNER=docker")  # fmt: skip
    if knobs.front != "none":
        raise KnobError("FRONT runs on this machine: not with SERVER_HOST or CLIENT_HOSTS")
    if len(knobs.client_hosts) > 1 and knobs.tool not in MERGEABLE_TOOLS:
        raise KnobError(
            f"TOOL={knobs.tool} with {len(knobs.client_hosts)} CLIENT_HOSTS: only "
            f"{' and '.join(MERGEABLE_TOOLS)} give the raw latencies that merge across hosts"
        )
    if len(knobs.client_hosts) > 1 and min(knobs.connections) < len(knobs.client_hosts):
        raise KnobError(
            f"CONNECTIONS={min(knobs.connections)} is fewer than the "
            f"{len(knobs.client_hosts)} CLIENT_HOSTS that share them"
        )
