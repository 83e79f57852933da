"""Docker engines: this machine's, or another host's reached over SSH.

SERVER_HOST and CLIENT_HOSTS (docs/remote.md) name engines as a Docker
context or an `ssh://user@host` URL. Every `docker` and `docker compose`
command of the Docker runner runs against one `Engine`, which only sets
DOCKER_CONTEXT or DOCKER_HOST for it: the Docker CLI itself reaches the
engine, through `ssh ... docker system dial-stdio`, so the engine's socket
is never exposed on a TCP port (core/knobs.host_problem refuses tcp://).

Images are built by this machine's engine and shipped to the others with
`docker save | docker load` when their copy differs: no registry is needed,
and every host runs the very image that was built (same image ID).

An engine also describes its host for run.json (CPU, cores, memory, kernel,
Docker version, and the clock offset to this machine, measured through the
engine) and samples a container's CPU and memory there (its API's stats),
since a remote container's processes are not this machine's.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlsplit

from loadtest.core.errors import StepError
from loadtest.core.knobs import host_problem
from loadtest.measure.metrics import ServerUsage

SHIP_TIMEOUT_S = 1800
# What `docker info` says about the host that run.json keeps.
HOST_FACTS = {
    "Name": "name",
    "NCPU": "cpus",
    "MemTotal": "memory_bytes",
    "KernelVersion": "kernel",
    "OperatingSystem": "os",
    "Architecture": "architecture",
    "ServerVersion": "docker_version",
    "CgroupVersion": "cgroup_version",
}


@dataclass(frozen=True)
class Engine:
    """One Docker engine; `endpoint` None is this machine's default engine."""

    label: str  # how run.json and the records name the host
    endpoint: str | None = None  # a context name or ssh://user@host[:port]
    _cache: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def named(cls, text: str) -> Engine:
        """SERVER_HOST/CLIENT_HOSTS text -> an Engine ("" = this machine)."""
        if not text:
            return LOCAL
        if problem := host_problem(text):
            raise ValueError(problem)
        label = urlsplit(text).hostname if text.startswith("ssh://") else text
        return cls(label or text, text)

    @property
    def remote(self) -> bool:
        return self.endpoint is not None

    def env(self, base: dict | None = None) -> dict:
        """The environment for a docker/compose command aimed at this engine."""
        env = dict(os.environ if base is None else base)
        if self.endpoint is None:
            return env
        env.pop("DOCKER_HOST", None)
        env.pop("DOCKER_CONTEXT", None)
        if self.endpoint.startswith("ssh://"):
            env["DOCKER_HOST"] = self.endpoint
        else:
            env["DOCKER_CONTEXT"] = self.endpoint
        return env

    def docker(self, *args: str, timeout: float = 120, check: bool = True, env: dict | None = None):
        """Run `docker ARGS` against this engine; the CompletedProcess (text, captured)."""
        result = subprocess.run(
            ["docker", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env(env),
        )
        if check and result.returncode != 0:
            raise subprocess.CalledProcessError(
                result.returncode, result.args, result.stdout, result.stderr
            )
        return result

    # -- where it is

    def ssh_url(self) -> str | None:
        """The engine's ssh:// endpoint (a context's is looked up); None for this machine."""
        if self.endpoint is None or self.endpoint.startswith("ssh://"):
            return self.endpoint
        if "ssh_url" not in self._cache:
            result = LOCAL.docker(
                "context", "inspect", self.endpoint, "--format", "{{.Endpoints.docker.Host}}",
                check=False, timeout=30,
            )  # fmt: skip
            self._cache["ssh_url"] = result.stdout.strip() if result.returncode == 0 else ""
        return self._cache["ssh_url"]

    def address(self) -> str:
        """The host's address as the load and the checks reach it (127.0.0.1 here)."""
        url = self.ssh_url()
        return (urlsplit(url).hostname or "") if url else "127.0.0.1"

    def problem(self) -> str | None:
        """None when the engine answers and is reached through SSH, else why not."""
        url = self.ssh_url()
        if self.remote and not (url or "").startswith("ssh://"):
            shown = url or "no such Docker context"
            return (
                f"{self.label}: its Docker endpoint is {shown!r}; engines elsewhere are "
                "reached through SSH only (docker context create NAME --docker host=ssh://...)"
            )
        try:
            result = self.docker("version", "--format", "{{.Server.Version}}",
                                 check=False, timeout=60)  # fmt: skip
        except subprocess.TimeoutExpired:
            return f"{self.label}: the Docker engine did not answer within 60 s"
        if result.returncode != 0:
            return f"{self.label}: no Docker engine answers: {tail_text(result.stderr, 20)}"
        return None

    # -- what it is

    def describe(self, clock_readings: int = 5) -> dict:
        """The host's facts for run.json, from its engine, and its clock offset.

        The offset is the engine's SystemTime minus the midpoint of two local
        clock reads around the request, over a connection already open; the
        reading with the shortest round trip is kept, and half of that round
        trip bounds the error.
        """
        info: dict = {"label": self.label, "endpoint": self.endpoint or "local"}
        best: tuple[float, float] | None = None
        try:
            with EngineAPI(self.label, self.env()) as api:
                data = api.get("/info")
                info.update({key: data.get(name) for name, key in HOST_FACTS.items()})
                for _ in range(clock_readings):
                    before = time.time()
                    remote = parse_system_time(api.get("/info").get("SystemTime", ""))
                    after = time.time()
                    if remote is not None and (best is None or after - before < 2 * best[1]):
                        best = (remote - (before + after) / 2, (after - before) / 2)
        except (StepError, ValueError) as exc:
            info["problem"] = str(exc)
        info["clock_offset_s"] = round(best[0], 6) if best else None
        info["clock_offset_error_s"] = round(best[1], 6) if best else None
        return info

    # -- images

    def image_id(self, image: str) -> str | None:
        result = self.docker("image", "inspect", "--format", "{{.Id}}", image,
                             check=False, timeout=60)  # fmt: skip
        return result.stdout.strip() if result.returncode == 0 else None

    def ensure_image(self, image: str, owner: str) -> bool:
        """Make this engine hold this machine's `image` (same ID); True when it was shipped."""
        wanted = LOCAL.image_id(image)
        if wanted is None:
            raise StepError(owner, "ship", f"{image} is not built on this machine")
        if not self.remote or self.image_id(image) == wanted:
            return False
        save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=LOCAL.env())  # fmt: skip
        try:
            load = subprocess.run(["docker", "load", "--quiet"], stdin=save.stdout,
                                  capture_output=True, text=True, env=self.env(),
                                  timeout=SHIP_TIMEOUT_S)  # fmt: skip
        finally:
            save.stdout.close()
            save_error = save.stderr.read().decode(errors="replace")
            save.wait(timeout=60)
        if save.returncode or load.returncode:
            raise StepError(owner, "ship", f"docker save | docker load to {self.label} failed",
                            tail_text(save_error + load.stderr))  # fmt: skip
        if self.image_id(image) != wanted:
            raise StepError(owner, "ship", f"{self.label} holds another {image} after the load")
        return True


LOCAL = Engine("local")


def parse_system_time(text: str) -> float | None:
    """Docker's SystemTime (RFC 3339, nanoseconds) -> a POSIX timestamp."""
    match = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", text)
    if not match:
        return None
    whole, fraction, zone = match.groups()
    stamp = datetime.fromisoformat(whole + ("+00:00" if zone == "Z" else zone)).timestamp()
    return stamp + (float(fraction) if fraction else 0.0)


def tail_text(text: str, lines: int = 40) -> str:
    """The last `lines` lines of a command's output."""
    return "\n".join(text.strip().splitlines()[-lines:])


# ---------------------------------------------------------------- the engine's API

SAMPLE_INTERVAL_S = 0.5


class EngineAPI:
    """HTTP requests to an engine's API through `docker system dial-stdio`.

    The Docker CLI opens the connection (over SSH for an engine elsewhere) and
    relays it on its stdin and stdout; requests then share it (keep-alive), so
    a request's round trip does not include an SSH handshake: a reading taken
    inside one is timed to a millisecond or so.
    """

    def __init__(self, label: str, env: dict[str, str]) -> None:
        """`label` names the engine in errors; `env` points the Docker CLI at it (Engine.env)."""
        self.label = label
        self._process = subprocess.Popen(
            ["docker", "system", "dial-stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=env,
        )  # fmt: skip

    def get(self, path: str) -> dict:
        """The JSON answer to GET `path`; StepError when the engine does not answer."""
        request = f"GET {path} HTTP/1.1\r\nHost: docker\r\n\r\n".encode()
        try:
            self._process.stdin.write(request)
            self._process.stdin.flush()
            # A reader per answer on a duplicate of the pipe: the next answer is
            # only sent after the next request, so none is read ahead.
            response = http.client.HTTPResponse(_Pipe(self._process.stdout))
            response.begin()
            body = response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise StepError(self.label, "api", f"GET {path}: {exc}") from None
        if response.status != 200:
            raise StepError(self.label, "api", f"GET {path}: {response.status} {body[:200]}")
        return json.loads(body)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def __enter__(self) -> EngineAPI:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


class _Pipe:
    """What http.client.HTTPResponse needs of a socket: a file to read the answer from."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def makefile(self, mode: str):
        return os.fdopen(os.dup(self.stream.fileno()), mode)


def container_reading(api: EngineAPI, container_id: str) -> tuple[float, int, int]:
    """(when the engine read it, on the engine's clock; the container's CPU ns so far;
    its memory without page cache) from the engine's one-shot stats.

    The engine's own timestamp, not this machine's clock around the request: a
    busy host answers late, and the half-second intervals between readings would
    then be off by as much as the answer was.
    """
    stats = api.get(f"/containers/{container_id}/stats?stream=false&one-shot=true")
    when = parse_system_time(stats.get("read", ""))
    if when is None:
        raise StepError(api.engine.label, "api", f"stats without a time: {stats.get('read')!r}")
    cpu = int(stats.get("cpu_stats", {}).get("cpu_usage", {}).get("total_usage", 0))
    memory = stats.get("memory_stats", {})
    detail = memory.get("stats", {})
    # What `docker stats` shows: usage minus the inactive page cache (v1 `total_inactive_file`,
    # v2 `inactive_file`; `cache` where neither is reported).
    cache = detail.get("total_inactive_file", detail.get("inactive_file", detail.get("cache", 0)))
    return when, cpu, max(0, int(memory.get("usage", 0)) - int(cache))


class EngineStatsSampler:
    """A container's CPU and memory read through its engine's API, for a server on
    another host (its processes are not this machine's).

    The same start()/stop() -> ServerUsage as measure.metrics.UsageSampler:
    the engine's cumulative CPU time of the container, read every half
    second over one kept connection, gives the mean over the window, the
    peak of the half-second intervals and, with `active_pct`, the CPU over
    the load's own duration. Figures that need this machine's counters (the
    loopback traffic behind drift, the host-wide busy share of the cores)
    stay empty; `source` says where the usage came from.
    """

    source = "docker-api"

    def __init__(self, engine: Engine, container_id: str) -> None:
        self.engine = engine
        self.container_id = container_id
        self._readings: list[tuple[float, int, int]] = []
        self._api: EngineAPI | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._api = EngineAPI(self.engine.label, self.engine.env())
        self._read()
        self._thread = threading.Thread(target=self._run, name="engine-sampler", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with contextlib.suppress(StepError, ValueError):
            self._readings.append(container_reading(self._api, self.container_id))

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            self._read()

    def stop(self) -> ServerUsage:
        self._stop.set()
        if self._thread:
            self._thread.join()
        if self._api:
            self._read()
            self._api.close()
        readings = self._readings
        usage = ServerUsage(samples=max(0, len(readings) - 1), source=self.source)
        if len(readings) >= 2:
            usage.cpu_mean_pct = cpu_pct(readings[0], readings[-1])
            usage.cpu_peak_pct = max(cpu_pct(a, b) for a, b in zip(readings, readings[1:]))
            usage.cpu_active_pct = usage.cpu_mean_pct
        if readings:
            usage.rss_peak_bytes = max(memory for _, _, memory in readings) or None
        return usage

    def active_pct(self, load_seconds: float) -> float | None:
        """CPU % over the load's own duration (after stop): the window also holds the
        tool's start and end, seconds at a remote engine, while the server idles."""
        if len(self._readings) < 2 or load_seconds <= 0:
            return None
        return (self._readings[-1][1] - self._readings[0][1]) / 1e9 / load_seconds * 100


def cpu_pct(first: tuple[float, int, int], last: tuple[float, int, int]) -> float:
    """CPU % (100 = one core) between two readings."""
    return max(0.0, (last[1] - first[1]) / 1e9 / max(last[0] - first[0], 1e-6) * 100)
