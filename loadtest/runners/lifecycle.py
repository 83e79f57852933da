"""The one lifecycle of a stack: prerequisites, build, start, ready, then stop or kill.

Every command that needs a running stack (check, hostile, soak, the labs, the
stacks' own tests, the bench) goes through `running`, so a stack is started,
timed and taken down the same way everywhere:

    with running(runner, manifest, Limits(cpus=(0,)), say=log) as started:
        use(started.server)          # ready; started.ready_s is how long it took

Leaving the block normally stops the server and checks that it stopped
cleanly (a StepError otherwise; `started.stop()` inside the block stops it
there, to judge the stop itself); leaving it with an exception kills the
whole process tree, so nothing is left behind either way.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from loadtest.core.errors import StepError
from loadtest.core.manifest import Manifest
from loadtest.core.runner import Limits, Runner, Server

READY_TIMEOUT_S = 60.0


@dataclass
class Started:
    server: Server
    ready_s: float
    stopped: bool = False

    def stop(self) -> int:
        """Stop now, inside the block (to judge the stop); the way out then does nothing."""
        self.stopped = True
        return self.server.stop()


def require(runner: Runner, manifest: Manifest) -> None:
    """Raise StepError (step `prerequisites`) when the stack cannot run here."""
    reason = runner.unavailable_reason(manifest)
    if reason:
        raise StepError(manifest.name, "prerequisites", reason)


def build(runner: Runner, manifest: Manifest, say: Callable[[str], None] = print) -> bool:
    """Build the stack if its inputs changed, saying how long a build took."""
    say("build")
    started = time.monotonic()
    built = runner.build(manifest)
    if built:
        say(f"built in {time.monotonic() - started:.1f} s")
    return built


@contextlib.contextmanager
def running(
    runner: Runner,
    manifest: Manifest,
    limits: Limits | None = None,
    port: int | None = None,
    say: Callable[[str], None] = print,
    ready_timeout: float = READY_TIMEOUT_S,
) -> Iterator[Started]:
    """Build, start and wait for the stack; stop it (cleanly) or kill it on the way out."""
    build(runner, manifest, say)
    server = runner.start(manifest, limits or Limits(), port)
    started = None
    try:
        ready_s = server.wait_ready(ready_timeout)
        say(f"ready in {ready_s:.1f} s on {server.base_url}")
        started = Started(server, ready_s)
        yield started
        if not started.stopped:
            started.stop()
    except BaseException:
        server.kill()
        raise
