"""A compose service's container on a Docker engine, and the Docker CLI that drives it.

The Docker runner's stacks (runners/docker.py) and the loadgen (runners/loadgen.py)
are both containers of the generated docker-compose.yml: started with `docker
compose up` on their engine (this machine's, or another host's, runners/engine.py),
inspected, logged and removed the same way.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time

from loadtest.core.errors import StepError
from loadtest.core.manifest import REPO_ROOT
from loadtest.core.runner import Limits
from loadtest.host.cgroups import ContainerCgroup
from loadtest.host.process import CLEAN_EXIT_CODES, answers_http
from loadtest.runners import compose as compose_file
from loadtest.runners.engine import LOCAL, Engine, tail_text


def docker(*args: str, timeout: float = 120, check: bool = True, env: dict | None = None):
    """Run `docker ARGS` against this machine's engine; the CompletedProcess."""
    return LOCAL.docker(*args, timeout=timeout, check=check, env=env)


def compose_args(*args: str) -> list[str]:
    return [
        "compose",
        "--file", str(compose_file.COMPOSE_FILE),
        "--project-directory", str(REPO_ROOT),
        *args,
    ]  # fmt: skip


def limits_env(limits: Limits, client_cpus: tuple[int, ...] | None = None) -> dict:
    """The compose file's knobs for one start (unset knobs mean no limit)."""
    env = dict(os.environ)
    for key in ("SERVER_CPUS", "SERVER_CPU_QUOTA", "SERVER_MEMORY", "WORKERS", "CLIENT_CPUS",
                "SERVER_BIND"):  # fmt: skip
        env.pop(key, None)
    if limits.cpus:
        env["SERVER_CPUS"] = ",".join(map(str, limits.cpus))
    if limits.cpu_quota is not None:
        env["SERVER_CPU_QUOTA"] = f"{limits.cpu_quota:g}"
    if limits.memory is not None:
        env["SERVER_MEMORY"] = str(limits.memory)
    if limits.workers():
        env["WORKERS"] = str(limits.workers())
    if client_cpus:
        env["CLIENT_CPUS"] = ",".join(map(str, client_cpus))
    return env


def image_id(image: str) -> str | None:
    """The image's ID in this machine's engine (None: not built)."""
    return LOCAL.image_id(image)


class Container:
    """A compose service's running container: state, logs, cgroup, removal."""

    service: str
    engine: Engine = LOCAL

    def _up(self, env: dict, step_owner: str) -> None:
        result = subprocess.run(
            [
                "docker",
                *compose_args(
                    "up", "--detach", "--no-build", "--no-deps", "--force-recreate", self.service
                ),
            ],  # fmt: skip
            capture_output=True,
            text=True,
            env=self.engine.env(env),
            timeout=120,
        )
        if result.returncode != 0:
            raise StepError(
                step_owner,
                "start",
                f"docker compose up {self.service} failed on {self.engine.label}",
                tail_text(result.stderr),
            )
        result = self.engine.docker(
            *compose_args("ps", "--all", "--quiet", self.service), check=False
        )
        self.container_id = result.stdout.strip().splitlines()[0] if result.stdout.strip() else ""
        if not self.container_id:
            raise StepError(step_owner, "start", f"no container for {self.service} after `up`")
        self._cgroup: ContainerCgroup | None = None

    def inspect(self) -> dict:
        try:
            return json.loads(self.engine.docker("inspect", self.container_id, timeout=30).stdout)[
                0
            ]
        except (subprocess.SubprocessError, json.JSONDecodeError, IndexError):
            return {}

    def state(self) -> dict:
        return self.inspect().get("State", {})

    def is_alive(self) -> bool:
        return bool(self.state().get("Running"))

    def cgroup(self) -> ContainerCgroup:
        if self.engine.remote:  # its processes are another host's
            raise StepError(self.service, "sample", f"the container runs on {self.engine.label}")
        if self._cgroup is None:
            pid = self.state().get("Pid")
            if not pid:
                raise StepError(self.service, "sample", "container has no running process")
            self._cgroup = ContainerCgroup(pid)
        return self._cgroup

    def pids(self) -> list[int]:
        """Every process of the container (host PIDs), including its init; none elsewhere."""
        try:
            return self.cgroup().procs()
        except (StepError, OSError):
            return []

    def output_tail(self, lines: int = 40) -> str:
        result = self.engine.docker(
            "logs", "--tail", str(lines), self.container_id, check=False, timeout=30
        )
        return tail_text(result.stdout + result.stderr, lines)

    def remove(self) -> None:
        """Kill and remove the container, whatever its state; never raises."""
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self.engine.docker(
                "rm", "--force", "--volumes", self.container_id, check=False, timeout=60
            )


class ServedContainer(Container):
    """A container that serves HTTP on `address`:`port`: ready when it answers,
    stopped with SIGTERM and checked for a clean exit. `owner` names it in errors."""

    owner: str
    port: int
    address: str
    base_url: str
    tls_cert = None

    def wait_ready(self, timeout: float = 60.0) -> float:
        started = time.monotonic()
        deadline = started + timeout
        while time.monotonic() < deadline:
            state = self.state()
            if state and not state.get("Running"):
                raise StepError(
                    self.owner,
                    "start",
                    f"container exited with code {state.get('ExitCode')} before it was ready"
                    + (" (killed: out of memory)" if state.get("OOMKilled") else ""),
                    self.output_tail(),
                )
            if self._answers_http():
                return time.monotonic() - started
            time.sleep(0.2)
        tail = self.output_tail()
        self.kill()
        raise StepError(
            self.owner,
            "wait-ready",
            f"no HTTP answer on {self.base_url} within {timeout:.0f} s",
            tail,
        )

    def _answers_http(self) -> bool:
        return answers_http(self.port, self.tls_cert, host=self.address)

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM (through the container's init), wait, then SIGKILL; unclean raises StepError."""
        started = time.monotonic()
        result = self.engine.docker("stop", "--time", str(int(timeout)), self.container_id,
                                    check=False, timeout=timeout + 60)  # fmt: skip
        elapsed = time.monotonic() - started
        state = self.state()
        code = state.get("ExitCode")
        tail = self.output_tail()
        self.remove()
        if result.returncode != 0:
            raise StepError(self.owner, "stop", f"docker stop failed: {result.stderr.strip()}")
        if elapsed >= timeout and code == 137:
            raise StepError(
                self.owner,
                "stop",
                f"did not exit within {timeout:.0f} s of SIGTERM; killed",
                tail,
            )
        if code not in CLEAN_EXIT_CODES:
            reason = " (out of memory)" if state.get("OOMKilled") else ""
            raise StepError(self.owner, "stop", f"exit code {code} after SIGTERM{reason}", tail)
        return code

    def kill(self) -> None:
        self.remove()

    def __enter__(self) -> ServedContainer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.kill()
