"""Docker runner: build a stack's image and run it as a hardened container.

Same interface as the native runner (loadtest/runner.py). Every container
comes from the generated docker-compose.yml (loadtest/runners/compose.py), so the
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
docker/standins/standins.py (no registry needed). `python -m loadtest.runners.docker
smoke` is the CI path behind `make docker-smoke`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from loadtest.core import mirror
from loadtest.core.errors import StepError
from loadtest.core.manifest import REPO_ROOT, Manifest
from loadtest.core.runner import Limits
from loadtest.host import tls as tls_files
from loadtest.host.cgroups import ContainerCgroup
from loadtest.host.ports import free_port, port_in_use
from loadtest.host.process import CLEAN_EXIT_CODES, answers_http, pinned
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.base import ToolError, raw_paths, read_raw
from loadtest.runners import compose as compose_file

STANDINS_SCRIPT = REPO_ROOT / "docker" / "standins" / "standins.py"
BUILD_TIMEOUT_S = 1800
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


# The images install their packages while they build (pip, go, Maven, npm,
# cargo inside the Dockerfiles), straight from the registries.
OFFLINE_PROBLEM = (
    "OFFLINE=1: the images fetch their packages from the registries while they build, "
    "and the mirror does not serve them; RUNNER=native (docs/offline.md)"
)


def daemon_problem() -> str | None:
    """None when a Docker daemon answers and may be used, else why not."""
    if mirror.is_offline():
        return OFFLINE_PROBLEM
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
        return self.build_service(manifest.stack, compose_file.dockerfile_path(manifest), manifest)

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
        info["official_base_images"] = compose_file.official_base_images(dockerfile, manifest)
        info["base_images"] = self.base_image_refs(dockerfile, manifest)
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

    def base_image_refs(self, dockerfile: Path, manifest: Manifest | None = None) -> dict[str, str]:
        """ARG name -> the base image a build uses (official default or its stand-in)."""
        defaults = compose_file.official_base_images(dockerfile, manifest)
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

    def build_env(self, service: str, dockerfile: Path, manifest: Manifest | None = None) -> dict:
        env = dict(os.environ)
        for arg, ref in self.base_image_refs(dockerfile, manifest).items():
            env[compose_file.env_name(service, arg)] = ref
        # The extra CA for HTTPS downloads in builds (see the Dockerfiles'
        # extra_ca secret). Stand-in builds run behind this host's TLS setup,
        # so its trust store is passed along.
        if "EXTRA_CA" not in env and self.base_images == "standin" and HOST_CA.is_file():
            env["EXTRA_CA"] = str(HOST_CA)
        return env

    def build_service(
        self, service: str, dockerfile: Path, manifest: Manifest | None = None
    ) -> bool:
        image = compose_file.image_name(service)
        before = image_id(image)
        log_path = REPO_ROOT / ".build" / service / "docker-build.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            env = self.build_env(service, dockerfile, manifest)
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

        A context manager; its `run_tool` replaces loadtest.measure.tools.base.run_tool
        so that every load tool runs inside the container.
        """
        self.build_service("loadgen", compose_file.LOADGEN_DOCKERFILE)
        return LoadgenClient(client_cpus)


# The load tools the loadgen image has (docker/loadgen/Dockerfile); h2load
# runs on the host only.
LOADGEN_TOOLS = ("wrk", "ab", "oha")


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

    An executor of loadtest.measure.tools.base (`Tool.run(spec, raw, executor=client)`):
    `run_tool` has the signature and result of loadtest.measure.tools.base.run_tool
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

        if not self.which(tool.binary):
            raise ToolError(
                f"{tool.name}: {tool.binary} is not in the loadgen image "
                "(docker/loadgen/Dockerfile); RUNNER=native runs it on the host"
            )
        return tool.binary

    def tool_versions(self) -> dict:
        """Versions of the load tools inside the image, for the provenance."""
        versions = {}
        for name in LOADGEN_TOOLS:
            try:
                versions[name] = get_tool(name).version(self)
            except ToolError:
                versions[name] = "missing"
        return versions

    def output(self, command: list[str]) -> str:
        result = docker("exec", self.container_id, *command, check=False, timeout=30)
        return result.stdout + result.stderr

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
        return pinned(argv, cpus)

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
