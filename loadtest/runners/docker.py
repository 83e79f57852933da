"""Docker runner: build a stack's image and run it as a hardened container.

Same interface as the native runner (core/runner.py). Every container comes
from the generated docker-compose.yml (runners/compose.py), so the hardening
(read-only root, no capabilities, no-new-privileges, init, nofile ulimit) and
the host network are the same whether a person types `docker compose up gin`
or the harness starts it. Limits use the same knobs as natively: cores ->
cpuset, CPU quota -> cpus, memory -> mem_limit.

The stacks run on one Docker engine (runners/engine.py): this machine's, or
SERVER_HOST's, to which the image built here is shipped. Here, CPU and memory
are read from the container's own cgroup and `pids()` lists its processes as
host PIDs, so the bench's process sampler works unchanged; on another host
the bench reads them through the engine instead.

In a Docker bench every load tool runs in the loadgen container
(runners/loadgen.py, `load_client()`), on each client host.

Base images: the Dockerfiles' defaults (official images) unless
SERVERLAB_BASE_IMAGES=standin, which substitutes local stand-ins built by
docker/standins/standins.py (no registry needed); `make docker-smoke` builds
on them.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from loadtest.core.errors import StepError
from loadtest.core.families import family_of
from loadtest.core.manifest import REPO_ROOT, Manifest
from loadtest.core.runner import Limits
from loadtest.host import tls as tls_files
from loadtest.host.ports import free_port, port_in_use
from loadtest.measure.tools import oha
from loadtest.packages import mirror, registries
from loadtest.runners import compose as compose_file
from loadtest.runners.container import (
    ServedContainer,
    compose_args,
    docker,
    image_id,
    limits_env,
)
from loadtest.runners.engine import LOCAL, Engine, tail_text
from loadtest.runners.loadgen import LoadgenClient

STANDINS_SCRIPT = REPO_ROOT / "docker" / "standins" / "standins.py"
BUILD_TIMEOUT_S = 1800
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
# Set by `make docker-smoke` for its Docker tests: why this machine builds no loadgen image.
LOADGEN_SKIPPED_ENV = "SERVERLAB_LOADGEN_SKIPPED"


# ---------------------------------------------------------------- docker CLI


# The images install their packages while they build (pip, go, Maven, npm,
# cargo, NuGet inside the Dockerfiles), straight from the registries.
OFFLINE_PROBLEM = (
    "{offline}: the images fetch their packages from the registries while they build, "
    "and the mirror does not serve them; RUNNER=native (docs/offline.md)"
)


def offline_problem(stacks: list[Manifest] | None = None) -> str | None:
    """Why images cannot be built here for want of a registry, or None.

    With `stacks`, only their package families count (an image fetches its own
    family's packages; the loadgen's come from Debian): a machine that reaches
    every registry but NuGet still builds a Go or Python image. Without, any
    family read from the mirror counts (RUNNER=auto then stays native).
    """
    families = registries.offline_families()
    if stacks is not None:
        families = families & {family_of(m.folder).registry for m in stacks}
    return OFFLINE_PROBLEM.format(offline=mirror.described(families)) if families else None


def daemon_problem() -> str | None:
    """None when a Docker daemon answers and may be used, else why not."""
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


# ---------------------------------------------------------------- the runner


class DockerRunner:
    name = "docker"

    def __init__(self, base_images: str | None = None, engine: Engine = LOCAL) -> None:
        # Where the stacks run (SERVER_HOST); images are built here and shipped there.
        self.engine = engine
        # A tls = true stack's certificate is made here (make bench: the results folder).
        self.tls_folder = tls_files.DEFAULT_FOLDER
        self.base_images = base_images or os.environ.get("SERVERLAB_BASE_IMAGES", "official")
        if self.base_images not in ("official", "standin"):
            raise ValueError("SERVERLAB_BASE_IMAGES must be official or standin")
        self._standins: dict[str, str] = {}
        self._engine_checked: dict[str, str | None] = {}

    # -- interface

    def unavailable_reason(self, manifest: Manifest) -> str | None:
        problem = offline_problem([manifest]) or daemon_problem() or compose_problem()
        if problem:
            return problem
        if self.engine.remote:
            if problem := self.engine_problem():
                return problem
            if manifest.tls:
                # The certificate folder is bind-mounted from this machine's disk.
                return f"a tls = true stack runs on this machine only, not on {self.engine.label}"
        if not compose_file.dockerfile_path(manifest).is_file():
            return f"no {manifest.docker['dockerfile']} in servers/{manifest.name}/"
        return None

    def engine_problem(self) -> str | None:
        if "problem" not in self._engine_checked:
            self._engine_checked["problem"] = self.engine.problem()
        return self._engine_checked["problem"]

    def build(self, manifest: Manifest) -> bool:
        """`docker compose build` the stack's service here, then ship it to the stacks'
        engine; True when the image changed."""
        changed = self.build_service(
            manifest.stack, compose_file.dockerfile_path(manifest), manifest
        )
        shipped = self.engine.ensure_image(compose_file.image_name(manifest.stack), manifest.name)
        return changed or shipped

    def start(self, manifest: Manifest, limits: Limits, port: int | None = None) -> DockerServer:
        if (
            port is None
            and not self.engine.remote
            and os.environ.get("SERVERLAB_DOCKER_PORTS") == "free"
        ):
            # CI on a shared machine: the same stack may be running natively
            # on its manifest port; the container takes any free port instead.
            port = free_port()
        tls = tls_files.self_signed(self.tls_folder) if manifest.tls else None
        return DockerServer(manifest, limits, port or manifest.port, tls, self.engine)

    def versions(self, manifest: Manifest) -> dict:
        info = {"runner": "docker", "image": compose_file.image_name(manifest.stack)}
        info["host"] = self.engine.label
        with contextlib.suppress(subprocess.SubprocessError, OSError, json.JSONDecodeError):
            data = json.loads(self.engine.docker("image", "inspect", info["image"]).stdout)[0]
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
            info["docker_server"] = self.engine.docker(
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

    def loadgen_unavailable_reason(self) -> str | None:
        """Why the loadgen image cannot be built here, or None. On stand-ins its oha is
        the host's own build of the pinned version (base_image_refs), which needs cargo
        unless that version is built already; official images build it in the image."""
        if self.base_images == "official" or shutil.which("cargo"):
            return None
        version = compose_file.arg_default(compose_file.LOADGEN_DOCKERFILE, "OHA_VERSION")
        if oha.built(version):
            return None
        return (f"oha {version} is not built on this machine and cargo is not found to build "
                "it (scripts/install-oha.sh): no loadgen image, nor anything that loads from it")  # fmt: skip

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

    def load_client(
        self, client_cpus: tuple[int, ...] | None = None, engine: Engine = LOCAL
    ) -> LoadgenClient:
        """The loadgen container (built if needed) on `engine`, pinned to the client cores.

        A context manager; its `run_tool` replaces loadtest.measure.tools.base.run_tool
        so that every load tool runs inside the container.
        """
        self.build_service("loadgen", compose_file.LOADGEN_DOCKERFILE)
        engine.ensure_image(compose_file.image_name("loadgen"), "loadgen")
        return LoadgenClient(client_cpus, engine)


# The uid the stack images run as (every Dockerfile's USER).
CONTAINER_UID = 10001


def bind_address(address: str) -> str:
    """What a stack on another host listens on: the address the load aims at when it
    is one (only that interface), else every interface (a host name may resolve
    to another address there than here)."""
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return "0.0.0.0"
    return address


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


class DockerServer(ServedContainer):
    """One stack's container, started by compose with the given limits."""

    def __init__(
        self,
        manifest: Manifest,
        limits: Limits,
        port: int | None = None,
        tls: tls_files.TlsFiles | None = None,
        engine: Engine = LOCAL,
    ) -> None:
        self.manifest = manifest
        self.owner = manifest.name
        self.service = manifest.stack  # a name@variant id runs its stack's service
        self.engine = engine
        self.port = port or manifest.port
        self.tls_cert = tls.cert if tls else None
        self.address = engine.address()
        self.base_url = f"{'https' if tls else 'http'}://{self.address}:{self.port}"
        self.limits = limits
        if not engine.remote and port_in_use(self.port):
            raise StepError(
                manifest.name,
                "start",
                f"port {self.port} is already in use on 127.0.0.1; stop whatever listens there "
                f"(e.g. `ss -ltnp 'sport = :{self.port}'` or `make down`)",
            )
        env = limits_env(limits)
        env[compose_file.env_name(manifest.stack, "PORT")] = str(self.port)
        if engine.remote:
            env["SERVER_BIND"] = bind_address(self.address)
        for variant in manifest.variants:  # no variant setting leaks in from this shell
            for key in variant.get("env", {}):
                env.pop(key, None)
        env.update(manifest.env)
        env.pop("TLS_CERT", None)  # nor a certificate: only FRONT=self sets them
        env.pop("TLS_KEY", None)
        if tls:
            env["TLS_DIR"] = str(container_tls(tls))
            if manifest.self_tls_terminator:
                # FRONT=self: the stack reads the mounted files (its image has no default).
                env["TLS_CERT"] = f"{compose_file.TLS_MOUNT}/{tls.cert.name}"
                env["TLS_KEY"] = f"{compose_file.TLS_MOUNT}/{tls.key.name}"
        self._up(env, manifest.name)

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


# This machine's Docker daemon and Compose v2 plugin, for the smokes.
DAEMON_SCRIPT = REPO_ROOT / "scripts" / "docker-daemon.sh"
COMPOSE_SCRIPT = REPO_ROOT / "scripts" / "install-compose.sh"
DAEMON_PID_FILE = REPO_ROOT / ".build" / "docker" / "dockerd.pid"


@contextlib.contextmanager
def local_daemon(who: str, stacks: list[Manifest]) -> Iterator[bool]:
    """This machine's Docker daemon and Compose v2 for a smoke of `stacks`: yields whether
    they are there; a daemon started here is stopped again at the end, by PID."""
    if problem := offline_problem(stacks):
        print(f"{who}: {problem}", file=sys.stderr)
        yield False
        return
    if compose_problem() and shutil.which("docker"):
        # Compose v2 from its Go module, once per machine (cached).
        if subprocess.run(["bash", str(COMPOSE_SCRIPT)], stdout=subprocess.DEVNULL).returncode:
            print(f"{who}: could not install the Compose v2 plugin", file=sys.stderr)
            yield False
            return
    started_here = False
    if daemon_problem():
        had_pid_file = DAEMON_PID_FILE.exists()
        if subprocess.run(["bash", str(DAEMON_SCRIPT), "start"]).returncode:
            print(f"{who}: no Docker daemon and none could be started", file=sys.stderr)
            yield False
            return
        started_here = not had_pid_file and DAEMON_PID_FILE.exists()
    try:
        yield True
    finally:
        if started_here:
            subprocess.run(["bash", str(DAEMON_SCRIPT), "stop"])
