"""Native runner: build and run a stack on the host from its manifest.

Build and run commands come from the manifest's [native] table and run in
bash with the stack's folder as working directory. Servers are pinned to the
server cores with taskset and optionally placed in a cgroup for CPU quota and
memory limits.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from loadtest.core.errors import StepError
from loadtest.core.families import family_of
from loadtest.core.manifest import Manifest, load, stack_env
from loadtest.core.runner import Limits
from loadtest.host.cgroups import CgroupLimits, LimitsUnavailable
from loadtest.host.locks import exclusive
from loadtest.host.ports import instance_port, port_in_use
from loadtest.host.process import ProcessGroupServer, spawn_group, tail
from loadtest.host.tls import DEFAULT_FOLDER as DEFAULT_TLS_FOLDER
from loadtest.host.tls import TlsFiles, self_signed
from loadtest.packages import mirror, registries
from loadtest.packages.offline import offline_problem
from loadtest.packages.resolved import resolved_dependencies
from loadtest.runners.lifecycle import require, running

SHARED_DIR = Path("servers") / "_shared"  # under the manifest's repository root
STATIC_SITE_DIR = Path("contracts") / "static"
# Generated folders that must not trigger a rebuild.
IGNORED_DIRS = {"target", "__pycache__", ".pytest_cache", "node_modules", "bin", "obj"}
BUILD_TIMEOUT_S = 900


def source_digest(manifest: Manifest) -> str:
    """Hash of everything a native build reads: the stack's folder and _shared/
    (and, for a static stack, the site it serves)."""
    digest = hashlib.sha256(manifest.native["build"].encode())
    roots = [manifest.folder, manifest.repo_root / SHARED_DIR]
    if manifest.contract == "static":
        roots.append(manifest.repo_root / STATIC_SITE_DIR)
    for root in roots:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or IGNORED_DIRS.intersection(path.relative_to(root).parts):
                continue
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def build_stamp(manifest: Manifest) -> Path:
    """Holds the source digest of the last successful build."""
    return manifest.build_dir / ".build-stamp"


def built_digest(manifest: Manifest) -> str | None:
    stamp = build_stamp(manifest)
    return stamp.read_text() if stamp.is_file() else None


class NativeRunner:
    """Builds and starts stacks on this host.

    `tls_folder`: where a `tls = true` stack's self-signed certificate is
    made (`make bench` sets it to the run's results folder); the stack gets
    TLS_CERT/TLS_KEY and the server object its `tls_cert`.
    """

    name = "native"

    def __init__(self, tls_folder: Path = DEFAULT_TLS_FOLDER) -> None:
        self.tls_folder = Path(tls_folder)

    def unavailable_reason(self, manifest: Manifest) -> str | None:
        missing = [tool for tool in manifest.native["requires"] if not shutil.which(tool)]
        if missing:
            return f"toolchain not found: {', '.join(missing)}"
        registry = family_of(manifest.folder).registry
        if registry and registries.is_offline(registry) and self.needs_build(manifest):
            return offline_problem(manifest, mirror.mirror_dir())
        return None

    def needs_build(self, manifest: Manifest) -> bool:
        """True unless the last build was of exactly these sources."""
        return built_digest(manifest) != source_digest(manifest)

    def build(self, manifest: Manifest) -> bool:
        # Two commands building one stack at once would share its build folder;
        # the second waits and then finds the first one's build current.
        with exclusive(manifest.build_dir / ".build-lock"):
            return self._build(manifest)

    def _build(self, manifest: Manifest) -> bool:
        digest = source_digest(manifest)
        if built_digest(manifest) == digest:
            return False
        log = manifest.build_dir / "build.log"
        with log.open("w") as out:
            try:
                result = subprocess.run(
                    ["bash", "-euo", "pipefail", "-c", manifest.native["build"]],
                    cwd=manifest.folder,
                    env=stack_env(manifest),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    timeout=BUILD_TIMEOUT_S,
                )
            except subprocess.TimeoutExpired:
                raise StepError(
                    manifest.name, "build", f"timed out after {BUILD_TIMEOUT_S} s", tail(log)
                ) from None
        if result.returncode != 0:
            raise StepError(
                manifest.name, "build", f"exit code {result.returncode} (log: {log})", tail(log)
            )
        build_stamp(manifest).write_text(digest)
        return True

    def start(self, manifest: Manifest, limits: Limits, port: int | None = None) -> NativeServer:
        tls = self_signed(self.tls_folder) if manifest.tls else None
        return NativeServer(manifest, limits, port or instance_port(manifest.port), tls)

    def dependencies(self, manifest: Manifest) -> list[str]:
        """What the built stack runs with (pip freeze, go list -m all, Maven's list).

        Raises StepError (step "dependencies") when the list cannot be read.
        """

        return resolved_dependencies(manifest)

    def versions(self, manifest: Manifest) -> dict:
        result = subprocess.run(
            ["bash", "-c", manifest.native["version"]],
            cwd=manifest.folder,
            env=stack_env(manifest),
            capture_output=True,
            text=True,
            timeout=60,
        )
        text = (result.stdout or result.stderr).strip().splitlines()
        ran = result.returncode == 0 and text
        return {"runtime_native": text[0] if ran else "unknown"}


class NativeServer(ProcessGroupServer):
    """One running stack: its process group, its log and its limits."""

    def __init__(
        self, manifest: Manifest, limits: Limits, port: int, tls: TlsFiles | None = None
    ) -> None:
        self.manifest = manifest
        self.name = manifest.name
        self.port = port
        self.tls = tls
        # The certificate every client of this server trusts; None for plain HTTP.
        self.tls_cert: Path | None = tls.cert if tls else None
        self.base_url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
        # One log per port: instances of one stack side by side keep their own.
        log_name = "server.log" if port == manifest.port else f"server-{port}.log"
        self.log_path = manifest.build_dir / log_name
        if port_in_use(port):
            raise StepError(
                manifest.name,
                "start",
                f"port {port} is already in use on 127.0.0.1; stop whatever listens there "
                f"(e.g. `ss -ltnp 'sport = :{port}'`)",
            )
        self.cgroup = CgroupLimits(
            f"serverlab-{manifest.name}-{os.getpid()}", limits.cpu_quota, limits.memory
        )
        try:
            self.cgroup.create()
        except LimitsUnavailable as exc:
            raise StepError(manifest.name, "start", str(exc)) from None
        self.process = self._spawn(limits)

    def _spawn(self, limits: Limits) -> subprocess.Popen:
        env = stack_env(self.manifest)
        env.update(PORT=str(self.port), HOST="127.0.0.1", **limits.extra_env)
        if self.tls:
            env.update(self.tls.env())
        workers = limits.workers()
        if workers:
            env["WORKERS"] = str(workers)
        return spawn_group(
            ["bash", "-c", self.manifest.native["run"]],
            cwd=self.manifest.folder,
            env=env,
            log_path=self.log_path,
            cpus=limits.cpus,
            cgroup=self.cgroup,
        )

    def _release(self) -> None:
        self.cgroup.remove()

    def __enter__(self) -> NativeServer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.kill()


@contextlib.contextmanager
def running_stack(name: str, limits: Limits | None = None, port: int | None = None):
    """Build and start a stack for a test; yields the ready server, then stops it."""
    runner = NativeRunner()
    manifest = load(name)
    require(runner, manifest)
    with running(runner, manifest, limits, port, say=lambda text: None) as up:
        yield up.server
