"""Processes on this host: servers started as process groups, pinned, and stopped cleanly.

Every server the harness starts itself (a stack natively, a TLS front, the
nginx ceiling) is a `ProcessGroupServer`: its own process group, pinned to
the server cores with taskset, its output in a log, stopped with SIGTERM and
checked for a clean exit and for workers left behind.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import ssl
import subprocess
import time
from pathlib import Path

from loadtest.core.errors import StepError
from loadtest.host.cgroups import CgroupLimits

# A clean stop after SIGTERM (or Ctrl-C): 0; killed by the signal (-N, as
# Popen reports it; nginx exits on SIGQUIT too); 128+N, as a shell or an init
# process (Docker's) reports a child killed by signal N.
CLEAN_EXIT_CODES = frozenset(
    {0, -signal.SIGTERM, -signal.SIGINT, -signal.SIGQUIT, 128 + signal.SIGTERM, 128 + signal.SIGINT}
)


def pinned(command: list[str], cpus: tuple[int, ...] | None) -> list[str]:
    """`command` run on `cpus` only (taskset execs it: the child is the command itself)."""
    return ["taskset", "-c", ",".join(map(str, cpus)), *command] if cpus else list(command)


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
    # Set by the first stop(): a stop is judged once (see stop).
    stop_judged: bool = False

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
        """SIGTERM, wait, then SIGKILL; an unclean stop raises StepError.

        The stop is judged once: stopping again (the way out of a test's
        `running_stack` after the test judged the stop itself) only makes sure
        nothing is left and returns the exit code.
        """
        if self.stop_judged:
            self.kill()
            return self.process.returncode
        self.stop_judged = True
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


def answers_http(
    port: int, tls_cert: Path | None, accept=lambda status: True, host: str = "127.0.0.1"
) -> bool:
    """Whether host:port answers one GET / (over TLS trusting exactly `tls_cert`).

    A refused connection or a failed handshake is "not ready"; `accept`
    judges the status code of an answer.
    """
    if tls_cert is not None:
        context = ssl.create_default_context(cafile=str(tls_cert))
        connection = http.client.HTTPSConnection(host, port, timeout=2, context=context)
    else:
        connection = http.client.HTTPConnection(host, port, timeout=2)
    try:
        connection.request("GET", "/")
        response = connection.getresponse()
        response.read()
        return accept(response.status)
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


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
    fronts (loadtest/runners/front.py) are started the same way, so they share the
    server cores, the CPU quota and the memory limit on equal terms.
    """
    command = pinned(command, cpus)
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
