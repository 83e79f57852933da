"""TLS + HTTP/2 fronts: nginx or Apache httpd as a reverse proxy before a stack,
or (FRONT=self) no proxy at all: the stack terminates TLS itself.

With FRONT=nginx or FRONT=apache the api stack runs as usual (plain HTTP on
its port) and a front terminates TLS in front of it: HTTP/2 and HTTP/1.1
chosen by ALPN, the run's self-signed certificate (loadtest/tls.py), and
keep-alive connections to the stack. The front's config is rendered from a
committed template (loadtest/fronts/) into a folder of the run, together
with its pid and temp files; it runs as its own process group on a free
port of 127.0.0.1, started like a stack (loadtest/native.py: the same server
cores and, for a native stack, the same cgroup), so the two share the
server's CPU budget.

The fronted pair is one `Server` to check and bench: an https base_url, the
certificate to trust (`tls_cert`), the pids of both (CPU and memory cover
the front and the stack), and a stop that stops both and reports either's
unclean exit.

FRONT=self is for api stacks whose manifest declares [self_tls] (Kestrel):
the runner starts the stack as it starts a `tls = true` stack (the run's
certificate in TLS_CERT and TLS_KEY, an https base_url), so the same checks
and loads run over TLS and HTTP/2 with nothing in between.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import grp
import os
import pwd
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from loadtest.core.errors import StepError
from loadtest.core.knobs import FRONTS as FRONT_NAMES
from loadtest.core.manifest import REPO_ROOT, Manifest
from loadtest.core.runner import Limits, Runner
from loadtest.host import tls
from loadtest.host.cgroups import CgroupLimits, LimitsUnavailable
from loadtest.host.ports import free_port
from loadtest.host.process import ProcessGroupServer, answers_http, spawn_group

TEMPLATES = Path(__file__).with_name("fronts")
# Unprivileged user for the workers when the harness runs as root.
WORKER_USERS = ("www-data", "nobody")
PLACEHOLDER = re.compile(r"@[A-Z_]+@")
SELF = "self"  # FRONT=self: the stack terminates TLS itself ([self_tls] in its manifest)
# No brackets: the console prints it as rich markup.
SELF_VERSION = "none: each stack terminates TLS itself (self_tls in its server.toml)"


@dataclass(frozen=True)
class Kind:
    name: str
    binary: str
    package: str  # the Debian package that provides `binary`
    template: Path

    def command(self, path: str, folder: Path, config: Path) -> list[str]:
        if self.name == "nginx":
            # -e stderr: even the messages before the config is read go to stderr.
            return [path, "-e", "stderr", "-p", str(folder), "-c", str(config)]
        return [path, "-f", str(config), "-DFOREGROUND"]


FRONTS = {
    "nginx": Kind("nginx", "nginx", "nginx-light", TEMPLATES / "nginx.conf"),
    "apache": Kind("apache", "apache2", "apache2", TEMPLATES / "apache.conf"),
}


def binary(kind: str) -> str | None:
    name = FRONTS[kind].binary
    return shutil.which(name) or next(
        (p for p in (f"/usr/sbin/{name}",) if os.access(p, os.X_OK)), None
    )


@functools.cache
def version(kind: str) -> str:
    """`nginx -v` / `apache2 -v`, first line, as the provenance records it.

    Asked once per process: the plan printout, run.json and every stack's
    versions all name the same binary. FRONT=self has no binary of its own.
    """
    if kind == SELF:
        return SELF_VERSION
    path = binary(kind)
    if path is None:
        return "absent"
    result = subprocess.run([path, "-v"], capture_output=True, text=True, timeout=30, check=False)
    lines = (result.stderr or result.stdout).strip().splitlines()
    return lines[0] if lines else "unknown"


def refusal(kind: str, manifests: list[Manifest]) -> str | None:
    """Why FRONT=kind cannot run with these stacks, or None."""
    if kind not in FRONT_NAMES:
        return f"FRONT={kind!r}: use one of {', '.join(FRONT_NAMES)}"
    if kind == "none":
        return None
    if kind == SELF:
        return self_refusal(manifests)
    if binary(kind) is None:
        front = FRONTS[kind]
        return (
            f"FRONT={kind}: {front.binary} not found; install the Debian package "
            f"{front.package} (apt-get install {front.package}, or make bootstrap)"
        )
    own_tls = [
        m.name
        for m in manifests
        if getattr(m, "contract", "api") != "api" or getattr(m, "tls", False)
    ]
    if own_tls:
        return (
            f"FRONT={kind} is for api stacks; {', '.join(own_tls)} serve(s) HTTPS "
            "themselves (static or tls stacks): run them with FRONT=none"
        )
    return None


def terminator(manifest) -> str | None:
    """What terminates TLS in a stack under FRONT=self (its [self_tls]), or None."""
    return getattr(manifest, "self_tls_terminator", None)


def tls_front(kind: str, manifest: Manifest | None) -> str:
    """Who terminated TLS for a stack's measurements: the FRONT (nginx, apache, self),
    "self" for a stack that serves HTTPS itself (`tls = true`, or a variant with
    tls = true), "none" for plain HTTP (and for the ceiling, which has no manifest)."""
    if manifest is None:
        return "none"
    if kind != "none":
        return kind
    return SELF if getattr(manifest, "tls", False) else "none"


def self_refusal(manifests: list[Manifest]) -> str | None:
    """FRONT=self needs every stack to declare [self_tls]; names those that do not."""
    lacking = [m.name for m in manifests if terminator(m) is None]
    if not lacking:
        return None
    able = [m.name for m in manifests if terminator(m) is not None]
    which = f"of these only {', '.join(able)} can" if able else "none of these can"
    return (
        f"FRONT=self: {', '.join(lacking)} cannot serve TLS itself (no [self_tls] in its "
        f"server.toml); {which} (make check FRONT=self without SERVERS checks every "
        "stack that can); or put a proxy before it: FRONT=nginx|apache"
    )


def worker_user() -> tuple[str, str] | None:
    """(user, group) the workers switch to when running as root; None otherwise."""
    if os.geteuid() != 0:
        return None
    for name in WORKER_USERS:
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            return name, grp.getgrgid(entry.pw_gid).gr_name
    return None


def render(
    kind: str, *, folder: Path, listen: str, upstream: str, cert: Path, key: Path, workers: int
) -> str:
    """The template of `kind` with this run's values filled in."""
    user = worker_user()
    if user is None:
        user_line = ""
    elif kind == "nginx":
        user_line = f"user {user[0]} {user[1]};"
    else:
        user_line = f"User {user[0]}\nGroup {user[1]}"
    values = {
        "@FOLDER@": str(folder),
        "@LISTEN@": listen,
        "@UPSTREAM@": upstream,
        "@CERT@": str(cert),
        "@KEY@": str(key),
        "@WORKERS@": str(workers),
        "@MAX_WORKERS@": str(workers * 64),  # ThreadsPerChild x children (Apache)
        "@USER@": user_line,
    }
    text = PLACEHOLDER.sub(lambda m: values[m.group(0)], FRONTS[kind].template.read_text())
    return text


class Front(ProcessGroupServer):
    """One front process (nginx or Apache httpd) proxying to `upstream` (host:port)."""

    def __init__(
        self,
        kind: str,
        upstream: str,
        folder: Path,
        tls_files: tls.TlsFiles,
        cpus: tuple[int, ...] | None = None,
        cgroup: CgroupLimits | None = None,
        port: int | None = None,
    ) -> None:
        path = binary(kind)
        if path is None:
            raise StepError(f"front-{kind}", "prerequisites", refusal(kind, []) or "")
        self.kind = kind
        self.name = f"front-{kind}"
        self.port = port or free_port()
        self.base_url = f"https://127.0.0.1:{self.port}"
        self.tls_cert = tls_files.cert
        self.folder = folder.resolve()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.config_text = render(
            kind,
            folder=self.folder,
            listen=f"127.0.0.1:{self.port}",
            upstream=upstream,
            cert=tls_files.cert.resolve(),
            key=tls_files.key.resolve(),
            workers=len(cpus) if cpus else len(os.sched_getaffinity(0)),
        )
        self.config_path = self.folder / f"{kind}.conf"
        self.config_path.write_text(self.config_text)
        self.log_path = self.folder / f"{kind}.log"
        self.process = spawn_group(
            FRONTS[kind].command(path, self.folder, self.config_path),
            cwd=self.folder,
            env=dict(os.environ),
            log_path=self.log_path,
            cpus=cpus,
            cgroup=cgroup,
        )

    def _answers(self) -> bool:
        """An HTTPS answer from the stack through the front (a 5xx is the front's own)."""
        return answers_http(self.port, self.tls_cert, accept=lambda status: status < 500)

    def _start_hint(self) -> str:
        return f" (config: {self.config_path})"


class FrontedServer:
    """A stack behind a front: the Server interface of the pair."""

    def __init__(self, stack, front: Front, cgroup: CgroupLimits | None = None) -> None:
        self.stack = stack
        self.front = front
        self.manifest = stack.manifest
        self.port = front.port
        self.base_url = front.base_url
        self.tls_cert = front.tls_cert
        self._own_cgroup = cgroup  # the front's own cgroup when it cannot join the stack's

    def wait_ready(self, timeout: float = 60.0) -> float:
        """The stack first (its own readiness rule), then the front in front of it."""
        started = time.monotonic()
        self.stack.wait_ready(timeout)
        self.front.wait_ready(max(5.0, timeout - (time.monotonic() - started)))
        return time.monotonic() - started

    def pids(self) -> list[int]:
        return sorted(set(self.front.pids()) | set(self.stack.pids()))

    def is_alive(self) -> bool:
        return self.front.is_alive() and self.stack.is_alive()

    def output_tail(self, lines: int = 40) -> str:
        return (
            f"--- {self.front.kind} ({self.front.log_path}) ---\n{self.front.output_tail(lines)}\n"
            f"--- {self.manifest.name} ---\n{self.stack.output_tail(lines)}"
        )

    def stop(self, timeout: float = 15.0) -> int:
        """Stop the front, then the stack; either's unclean stop raises StepError."""
        problems = []
        try:
            self.front.stop(timeout)
        except StepError as exc:
            problems.append(exc)
        try:
            code = self.stack.stop(timeout)
        except StepError as exc:
            problems.append(exc)
        finally:
            self._remove_cgroup()
        if problems:
            raise StepError(
                self.manifest.name,
                "stop",
                "; ".join(f"{p.stack}: {p.message}" for p in problems),
                "\n".join(p.output for p in problems if p.output),
            )
        return code

    def kill(self) -> None:
        self.front.kill()
        self.stack.kill()
        self._remove_cgroup()

    def _remove_cgroup(self) -> None:
        if self._own_cgroup is not None:
            self._own_cgroup.remove()

    def __enter__(self) -> FrontedServer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.kill()


def inner_dependencies(runner: Runner, manifest: Manifest) -> list[str]:
    """The wrapped runner's list of the stack's resolved dependencies (a wrapper adds none)."""
    inner = getattr(runner, "dependencies", None)
    if inner is None:
        raise StepError(
            manifest.name, "dependencies", f"the {runner.name} runner does not list them"
        )
    return inner(manifest)


class FrontedRunner:
    """A runner whose servers sit behind a front; everything else is the inner runner's."""

    def __init__(
        self, runner: Runner, kind: str, folder: Path, tls_folder: Path = tls.DEFAULT_FOLDER
    ) -> None:
        self.runner = runner
        self.name = runner.name
        self.kind = kind
        self.folder = folder  # one subfolder per stack: rendered config, pid, temp files
        self.tls_folder = tls_folder

    def unavailable_reason(self, manifest: Manifest) -> str | None:
        return self.runner.unavailable_reason(manifest)

    def build(self, manifest: Manifest) -> bool:
        return self.runner.build(manifest)

    def versions(self, manifest: Manifest) -> dict:
        return {**self.runner.versions(manifest), "front": version(self.kind)}

    def dependencies(self, manifest: Manifest) -> list[str]:
        """The stack's own resolved dependencies (the front is Debian's, in `versions`)."""
        return inner_dependencies(self.runner, manifest)

    def start(self, manifest: Manifest, limits: Limits, port: int | None = None) -> FrontedServer:
        files = tls.self_signed(self.tls_folder)
        stack = self.runner.start(manifest, limits, port)
        # A native stack's cgroup (quota, memory) takes the front in too.
        cgroup = getattr(stack, "cgroup", None)
        own = None
        try:
            if not isinstance(cgroup, CgroupLimits) or not cgroup.wanted:
                # A stack in a container has its limits there; the front gets its own.
                own = CgroupLimits(
                    f"serverlab-front-{manifest.name}-{os.getpid()}",
                    limits.cpu_quota,
                    limits.memory,
                )
                own.create()
                cgroup = own
            upstream = urlsplit(stack.base_url).netloc
            front = Front(
                self.kind,
                upstream,
                self.folder / manifest.name,
                files,
                cpus=limits.cpus,
                cgroup=cgroup,
            )
        except LimitsUnavailable as exc:
            stack.kill()
            raise StepError(manifest.name, "start", str(exc)) from None
        except BaseException:
            stack.kill()
            if own is not None:
                own.remove()
            raise
        return FrontedServer(stack, front, own)


class SelfTlsRunner:
    """FRONT=self: the inner runner starts each stack as an HTTPS server of its own.

    The stack is started with its manifest seen as `tls = true`, so the native
    and the Docker runner give it the run's certificate (TLS_CERT, TLS_KEY)
    and an https base_url; there is no other process. The build and the
    dependencies are the stack's own, unchanged.
    """

    def __init__(self, runner: Runner, tls_folder: Path = tls.DEFAULT_FOLDER) -> None:
        self.runner = runner
        self.name = runner.name
        self.kind = SELF
        # Where the inner runner makes the run's certificate, as for a tls stack.
        runner.tls_folder = tls_folder

    @staticmethod
    def served(manifest: Manifest) -> Manifest:
        """The manifest as the inner runner sees it: a stack that serves HTTPS."""
        return dataclasses.replace(manifest, tls=True)

    def unavailable_reason(self, manifest: Manifest) -> str | None:
        if terminator(manifest) is None:
            return self_refusal([manifest])
        return self.runner.unavailable_reason(self.served(manifest))

    def build(self, manifest: Manifest) -> bool:
        return self.runner.build(manifest)

    def versions(self, manifest: Manifest) -> dict:
        name = terminator(manifest)
        return {
            **self.runner.versions(manifest),
            "front": f"none (the stack terminates TLS: {name})",
            "tls_terminator": name,
        }

    def dependencies(self, manifest: Manifest) -> list[str]:
        return inner_dependencies(self.runner, manifest)

    def start(self, manifest: Manifest, limits: Limits, port: int | None = None):
        return self.runner.start(self.served(manifest), limits, port)


def wrap(runner: Runner, kind: str, folder: Path, tls_folder: Path = tls.DEFAULT_FOLDER):
    """The runner itself for FRONT=none, the stacks' own TLS for FRONT=self, else the
    fronted runner."""
    if kind in ("", "none"):
        return runner
    if kind == SELF:
        return SelfTlsRunner(runner, tls_folder)
    return FrontedRunner(runner, kind, folder, tls_folder)


def describe(kind: str, manifests: list[Manifest]) -> str:
    """One line for the console: who terminates TLS for these stacks."""
    if kind == SELF:
        who = ", ".join(f"{terminator(m)} ({m.name})" for m in manifests)
        return f"every stack serves TLS + HTTP/2 itself: {who}"
    return f"every stack behind a TLS + HTTP/2 front: {version(kind)}"


DEFAULT_FOLDER = REPO_ROOT / ".build" / "front"
