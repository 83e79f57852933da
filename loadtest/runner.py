"""The interface every runner (native, Docker) implements.

A runner turns a manifest into a running server: `build` once, then
`start` returns a `Server` that can be waited on, sampled and stopped. The
check and bench commands only talk to this interface, so a new runner plugs
in without touching them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from .manifest import Manifest


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
    manifest: Manifest
    base_url: str

    def wait_ready(self, timeout: float = 60.0) -> float:
        """Block until the server answers HTTP; return seconds it took. Raises StepError."""

    def pids(self) -> list[int]:
        """Every process of the server (the whole tree), for CPU and memory sampling."""

    def is_alive(self) -> bool: ...

    def output_tail(self, lines: int = 40) -> str: ...

    def stop(self, timeout: float = 15.0) -> int:
        """Stop the server; return its exit code. Raises StepError on an unclean stop."""


class Runner(Protocol):
    name: str

    def unavailable_reason(self, manifest: Manifest) -> str | None:
        """None when the stack can run here, else why not (e.g. missing toolchain)."""

    def build(self, manifest: Manifest) -> bool:
        """Build the stack if its inputs changed; True if a build ran. Raises StepError."""

    def start(self, manifest: Manifest, limits: Limits, port: int | None = None) -> Server:
        """Start one stack with the given limits. Raises StepError."""

    def versions(self, manifest: Manifest) -> dict:
        """Runtime versions as actually used, for the results' provenance."""


def get_runner(name: str) -> Runner:
    if name == "native":
        from .native import NativeRunner

        return NativeRunner()
    if name == "docker":
        from .docker import DockerRunner  # added with the Docker path

        return DockerRunner()
    raise ValueError(f"unknown runner {name!r}: use native or docker")
