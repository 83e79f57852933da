"""The interface every runner (native, Docker) implements.

A runner turns a manifest into a running server: `build` once, then
`start` returns a `Server` that can be waited on, sampled and stopped. The
check and bench commands only talk to this interface, so a new runner plugs
in without touching them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from loadtest.core.manifest import Manifest


@dataclass(frozen=True)
class Limits:
    """The one knob set passed to every stack, whatever the runner.

    cpus: server cores (taskset natively, cpuset in Docker); None = no pinning.
    cpu_quota: CPU time in CPUs, e.g. 0.25 (CFS quota); None = no quota.
    memory: bytes; None = no limit.
    """

    cpus: tuple[int, ...] | None = None
    cpu_quota: float | None = None
    memory: int | None = None
    extra_env: dict = field(default_factory=dict)

    def workers(self) -> int | None:
        """WORKERS passed to the stack: one per server core when cores are pinned."""
        return len(self.cpus) if self.cpus else None


class Server(Protocol):
    """A started stack.

    `manifest` is the stack id's manifest (a `name@variant` id carries the
    variant's env). `base_url` is `http://127.0.0.1:PORT`, or
    `https://127.0.0.1:PORT` for a `tls = true` stack, whose `tls_cert` is
    the PEM certificate the runner made for this run (None for plain HTTP):
    readiness probes, the conformance checker and every load tool trust
    exactly that file.
    """

    manifest: Manifest
    base_url: str
    tls_cert: Path | None

    def wait_ready(self, timeout: float = 60.0) -> float:
        """Block until the server answers HTTP(S); return seconds it took. Raises StepError."""

    def pids(self) -> list[int]:
        """Every process of the server (the whole tree), for CPU and memory sampling."""

    def is_alive(self) -> bool: ...

    def output_tail(self, lines: int = 40) -> str: ...

    def stop(self, timeout: float = 15.0) -> int:
        """Stop the server; return its exit code. Raises StepError on an unclean stop."""

    def kill(self) -> None:
        """Kill the whole tree at once (after a failure); never raises."""


class Runner(Protocol):
    """Builds and starts stacks.

    For a `tls = true` stack, `start` makes a self-signed certificate with
    `loadtest.host.tls.self_signed(runner.tls_folder)` (default `.build/tls`;
    `make bench` points it at the run's results folder) and gives the stack
    TLS_CERT/TLS_KEY. A variant's env (`manifest.env`) is added to the
    stack's environment.
    """

    name: str
    tls_folder: Path

    def unavailable_reason(self, manifest: Manifest) -> str | None:
        """None when the stack can run here, else why not (e.g. missing toolchain)."""

    def build(self, manifest: Manifest) -> bool:
        """Build the stack if its inputs changed; True if a build ran. Raises StepError."""

    def start(self, manifest: Manifest, limits: Limits, port: int | None = None) -> Server:
        """Start one stack with the given limits. Raises StepError."""

    def versions(self, manifest: Manifest) -> dict:
        """Runtime versions as actually used, for the results' provenance."""

    # Optional: `dependencies(manifest) -> list[str]`, the resolved dependency list
    # of the built stack for run.json (StepError when it cannot be read). A runner
    # without it has its stacks recorded with `"dependencies": null` and the reason.


RUNNERS = ("auto", "native", "docker")


class RunnerUnavailable(Exception):
    """The runner that was asked for cannot run here."""
