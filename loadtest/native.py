"""Native runner: build and run a stack on the host from its manifest.

Build and run commands come from the manifest's [native] table and run in
bash with the stack's folder as working directory. Servers are pinned to the
server cores with taskset and optionally placed in a cgroup for CPU quota and
memory limits.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import shutil
import signal
import ssl
import subprocess
import time
from pathlib import Path

from .cgroups import CgroupLimits, LimitsUnavailable
from .errors import StepError
from .manifest import CALENDAR_FILE, REPO_ROOT, REPO_SERVERS_DIR, Manifest
from .ports import port_in_use
from .runner import Limits
from .tls import DEFAULT_FOLDER as DEFAULT_TLS_FOLDER
from .tls import TlsFiles, self_signed

SHARED_DIR = REPO_SERVERS_DIR / "_shared"
STATIC_SITE_DIR = REPO_ROOT / "contracts" / "static"
# Generated folders that must not trigger a rebuild.
IGNORED_DIRS = {"target", "__pycache__", ".pytest_cache", "node_modules", "bin", "obj"}
CLEAN_EXIT_CODES = {0, 143, 130, -signal.SIGTERM, -signal.SIGINT}
BUILD_TIMEOUT_S = 900


def base_env(manifest: Manifest) -> dict:
    env = dict(os.environ)
    env.update(
        REPO_ROOT=str(REPO_ROOT),
        BUILD_DIR=str(manifest.build_dir),
        WORKDAY_CALENDAR=str(CALENDAR_FILE),
        PYTHONUNBUFFERED="1",
    )
    env.update(manifest.env)  # a [[variant]]'s settings, e.g. STATIC_CONFIG=stock
    return env


def source_digest(manifest: Manifest) -> str:
    """Hash of everything a native build reads: the stack's folder and _shared/
    (and, for a static stack, the site it serves)."""
    digest = hashlib.sha256(manifest.native["build"].encode())
    roots = [manifest.folder, SHARED_DIR]
    if manifest.contract == "static":
        roots.append(STATIC_SITE_DIR)
    for root in roots:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or IGNORED_DIRS.intersection(path.relative_to(root).parts):
                continue
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


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
        return None

    def build(self, manifest: Manifest) -> bool:
        manifest.build_dir.mkdir(parents=True, exist_ok=True)
        stamp = manifest.build_dir / ".build-stamp"
        digest = source_digest(manifest)
        if stamp.is_file() and stamp.read_text() == digest:
            return False
        log = manifest.build_dir / "build.log"
        with log.open("w") as out:
            try:
                result = subprocess.run(
                    ["bash", "-euo", "pipefail", "-c", manifest.native["build"]],
                    cwd=manifest.folder,
                    env=base_env(manifest),
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
        stamp.write_text(digest)
        return True

    def start(self, manifest: Manifest, limits: Limits, port: int | None = None) -> NativeServer:
        tls = self_signed(self.tls_folder) if manifest.tls else None
        return NativeServer(manifest, limits, port or manifest.port, tls)

    def dependencies(self, manifest: Manifest) -> list[str]:
        """What the built stack runs with (pip freeze, go list -m all, Maven's list).

        Raises StepError (step "dependencies") when the list cannot be read.
        """
        from .supply_chain import resolved_dependencies

        return resolved_dependencies(manifest)

    def versions(self, manifest: Manifest) -> dict:
        result = subprocess.run(
            ["bash", "-c", manifest.native["version"]],
            cwd=manifest.folder,
            env=base_env(manifest),
            capture_output=True,
            text=True,
            timeout=60,
        )
        text = (result.stdout or result.stderr).strip().splitlines()
        return {"runtime_native": text[0] if text else "unknown"}


class ProcessGroupServer:
    """A server started with spawn_group: its process group, log and clean stop.

    Subclasses set `process`, `log_path` and `name` (who a StepError names),
    and may override `_release` to free what they own once the group is gone.
    """

    name: str
    process: subprocess.Popen
    log_path: Path
    base_url: str
    port: int
    tls_cert: Path | None

    def wait_ready(self, timeout: float = 60.0) -> float:
        """Seconds until the server answers; StepError if it exits or stays silent."""
        started = time.monotonic()
        while time.monotonic() < started + timeout:
            if self.process.poll() is not None:
                raise StepError(
                    self.name,
                    "start",
                    f"exited with code {self.process.returncode} before it was ready"
                    + self._start_hint(),
                    self.output_tail(),
                )
            if self._answers():
                return time.monotonic() - started
            time.sleep(0.1)
        self.kill()
        protocol = "HTTPS" if self.base_url.startswith("https:") else "HTTP"
        raise StepError(
            self.name,
            "wait-ready",
            f"no {protocol} answer on {self.base_url} within {timeout:.0f} s",
            self.output_tail(),
        )

    def _answers(self) -> bool:
        return answers_http(self.port, self.tls_cert)

    def _start_hint(self) -> str:
        """Added to the message when the server exits during start-up."""
        return ""

    def pids(self) -> list[int]:
        """The process group: the server and every worker it forked."""
        return group_pids(self.process.pid)

    def is_alive(self) -> bool:
        return self.process.poll() is None

    def output_tail(self, lines: int = 40) -> str:
        return tail(self.log_path, lines)

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM, wait, then SIGKILL; an unclean stop raises StepError."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise StepError(
                    self.name,
                    "stop",
                    f"did not exit within {timeout:.0f} s of SIGTERM; killed",
                    self.output_tail(),
                ) from None
        # Workers follow their parent out a moment later; any left is a defect.
        leftovers = wait_group_empty(self.process.pid, 3.0)
        self.kill()
        code = self.process.returncode
        if leftovers:
            raise StepError(self.name, "stop", f"left processes running after exit: {leftovers}")
        if code not in CLEAN_EXIT_CODES:
            raise StepError(
                self.name, "stop", f"exit code {code} after SIGTERM", self.output_tail()
            )
        return code

    def kill(self) -> None:
        """Kill the whole process group, whatever state it is in; never raises."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        # Workers die a moment after the signal; wait so the next server
        # finds the port free and the cgroup empty.
        wait_group_empty(self.process.pid, 5.0)
        self._release()

    def _release(self) -> None:
        """Free what the server owns besides its processes (nothing by default)."""


def answers_http(port: int, tls_cert: Path | None, accept=lambda status: True) -> bool:
    """Whether 127.0.0.1:port answers one GET / (over TLS trusting exactly `tls_cert`).

    A refused connection or a failed handshake is "not ready"; `accept`
    judges the status code of an answer.
    """
    if tls_cert is not None:
        context = ssl.create_default_context(cafile=str(tls_cert))
        connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=2, context=context)
    else:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", "/")
        response = connection.getresponse()
        response.read()
        return accept(response.status)
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


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
        self.log_path = manifest.build_dir / "server.log"
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
        env = base_env(self.manifest)
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


def tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def spawn_group(
    command: list[str],
    cwd: Path,
    env: dict,
    log_path: Path,
    cpus: tuple[int, ...] | None = None,
    cgroup: CgroupLimits | None = None,
) -> subprocess.Popen:
    """Start a server as its own process group, pinned to `cpus`, inside `cgroup`.

    Output (stdout and stderr) goes to `log_path`. The stacks and the TLS
    fronts (loadtest/front.py) are started the same way, so they share the
    server cores, the CPU quota and the memory limit on equal terms.
    """
    if cpus:
        command = ["taskset", "-c", ",".join(map(str, cpus)), *command]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as out:
        return subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: stopping it reaches every worker
            preexec_fn=cgroup.enter if cgroup is not None and cgroup.wanted else None,
        )


def group_pids(pgid: int) -> list[int]:
    """Live processes of a process group (zombies are already dead)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            # fields[0] is the state (Z: zombie, already dead), fields[2] the group id
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(entry.name))
    return sorted(found)


def wait_group_empty(pgid: int, timeout: float) -> list[int]:
    """Wait until a process group has no live process; returns any left behind."""
    deadline = time.monotonic() + timeout
    while (left := group_pids(pgid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@contextlib.contextmanager
def running_stack(name: str, limits: Limits | None = None, port: int | None = None):
    """Build and start a stack for a test; yields the ready server, then kills it."""
    from .manifest import load

    runner = NativeRunner()
    manifest = load(name)
    reason = runner.unavailable_reason(manifest)
    if reason:
        raise StepError(name, "prerequisites", reason)
    runner.build(manifest)
    server = runner.start(manifest, limits or Limits(), port)
    with server:
        server.wait_ready()
        yield server
