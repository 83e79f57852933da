"""Pre-fork supervision for servers that run one process and have no master.

bjoern and meinheld serve from a single event loop in a single process and
ship no process manager. To use several cores they are forked over one
listening socket that the parent opened (bjoern's ``tests/fork.py`` shows
the pattern). :class:`Supervisor` is that parent, and :func:`run_forked`
announces the server and runs one:

- forks ``workers`` children that each run ``serve()`` on the inherited socket;
- on SIGTERM or SIGINT it sends each child the server's own graceful-stop
  signal, waits up to ``grace`` seconds, SIGKILLs what is left and exits 0;
- a child that exits on its own is restarted, unless it dies within
  ``boot_time`` seconds of starting (it cannot serve: the whole server stops
  with status 1 instead of restarting it in a loop).

The parent serves nothing; it waits in ``os.wait()`` and costs no CPU.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from typing import Callable, Dict, Tuple

from .config import Config

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
DEFAULT_GRACE_S = 10.0
DEFAULT_BOOT_TIME_S = 1.0
EXIT_WORKER_FAILED = 1

__all__ = ["DEFAULT_BOOT_TIME_S", "DEFAULT_GRACE_S", "Supervisor", "run_forked"]


def _log(name: str, message: str) -> None:
    print(f"{name}: {message}", file=sys.stderr, flush=True)


class Supervisor:
    """The parent process: forks, forwards stop signals, restarts crashed workers.

    Create and :meth:`run` it after the listening socket is open, so that
    every child inherits it. ``stop_signal`` is the signal the server treats
    as "stop gracefully" (bjoern: SIGINT; meinheld: SIGTERM).
    """

    def __init__(
        self,
        workers: int,
        serve: Callable[[], object],
        *,
        stop_signal: int,
        grace: float = DEFAULT_GRACE_S,
        boot_time: float = DEFAULT_BOOT_TIME_S,
        name: str = "server",
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self.serve = serve
        self.stop_signal = stop_signal
        self.grace = grace
        self.boot_time = boot_time
        self.name = name
        self.children: Dict[int, Tuple[int, float]] = {}  # pid -> (number, started)
        self.stopping = False
        self.exit_code = 0

    # --- the child ------------------------------------------------------------

    def _child(self) -> None:
        code = 0
        try:
            # Not the parent's forwarding handlers: SIGTERM ends the process,
            # SIGINT raises KeyboardInterrupt (Python's defaults); the server
            # installs its own while it runs.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            self.serve()
        except KeyboardInterrupt:
            pass  # the graceful stop of servers that raise it (bjoern)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
            code = EXIT_WORKER_FAILED
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    # --- the parent -------------------------------------------------------------

    def _spawn(self, number: int) -> None:
        pid = os.fork()
        if pid == 0:
            self._child()  # never returns
        self.children[pid] = (number, time.monotonic())

    def _signal_children(self, signum: int) -> None:
        for pid in list(self.children):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    def _on_stop(self, signum: int, frame: object = None) -> None:
        if self.stopping:
            # A second SIGTERM/SIGINT: stop waiting for a graceful end.
            self._signal_children(signal.SIGKILL)
            return
        self.stopping = True
        self._signal_children(self.stop_signal)
        signal.setitimer(signal.ITIMER_REAL, self.grace)

    def _on_grace_over(self, signum: int, frame: object = None) -> None:
        if self.children:
            _log(
                self.name,
                f"{len(self.children)} worker(s) still busy after {self.grace:g} s; killing them",
            )
            self._signal_children(signal.SIGKILL)

    def _reap(self, pid: int, status: int) -> None:
        number, started = self.children.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        if self.stopping:
            # Ended by the stop signal, on its own, or killed after the grace period.
            if code not in (0, -signal.SIGKILL, -signal.SIGTERM, -signal.SIGINT, -self.stop_signal):
                _log(
                    self.name, f"worker {number} (pid {pid}) exited with code {code} while stopping"
                )
                self.exit_code = EXIT_WORKER_FAILED
            return
        _log(self.name, f"worker {number} (pid {pid}) exited with code {code}")
        if time.monotonic() - started < self.boot_time:
            _log(self.name, "a worker failed at start-up; stopping")
            self.exit_code = EXIT_WORKER_FAILED
            self._on_stop(signal.SIGTERM)
            return
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            self._spawn(number)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)

    def run(self) -> int:
        """Fork the workers and supervise them until they are all gone; the exit code."""
        # Block the stop signals while forking so that none arrives half-way;
        # they are delivered to the forwarding handler once it is installed.
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            for number in range(self.workers):
                self._spawn(number)
            for signum in STOP_SIGNALS:
                signal.signal(signum, self._on_stop)
            signal.signal(signal.SIGALRM, self._on_grace_over)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        while self.children:
            try:
                pid, status = os.wait()  # retried by Python after each signal handler
            except ChildProcessError:
                break
            if pid in self.children:
                self._reap(pid, status)
        signal.setitimer(signal.ITIMER_REAL, 0)
        return self.exit_code


def run_forked(config: Config, serve: Callable[[], object], *, stop_signal: int, name: str) -> int:
    """Run ``serve()`` in ``config.workers`` forked processes; returns the exit code.

    Call it after the listening socket is open on ``config.host`` and
    ``config.port``: it prints the start-up line (the address and the number
    of workers) and supervises the workers with the default grace and boot
    times.
    """
    _log(
        name,
        f"http://{config.host}:{config.port}/ with {config.workers} worker "
        f"process(es), one event loop each",
    )
    return Supervisor(config.workers, serve, stop_signal=stop_signal, name=name).run()
