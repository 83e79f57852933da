"""Pre-fork supervision for servers that run one process and have no master.

bjoern, meinheld and the raw uvloop server each serve from a single event
loop in a single process and ship no process manager; to use several cores
they are forked. :class:`Supervisor` is the parent that forks and watches
them, and :func:`run_forked` announces a server and runs one. Where the
listening socket comes from is the server's business, not the supervisor's:
bjoern and meinheld open one socket in the parent before forking and every
child accepts from it (bjoern's ``tests/fork.py`` shows the pattern); each
uvloop child binds its own socket with SO_REUSEPORT, so that the kernel
spreads connections over them. The supervisor:

- forks ``workers`` children that each run ``serve()``;
- on SIGTERM or SIGINT it sends each child the server's own graceful-stop
  signal, waits up to ``grace`` seconds, SIGKILLs what is left and exits 0;
- a child that exits on its own is restarted, unless it says it cannot serve
  (exit code :data:`EXIT_CANNOT_SERVE`, for example because it cannot bind
  its socket: the whole server stops with that code) or dies within
  ``boot_time`` seconds of starting (it presumably cannot serve either: the
  whole server stops with status 1 instead of restarting it in a loop).

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
# A worker exits with this code to say that it can never serve (uvloop: its
# own socket cannot be bound). Restarting it would fail the same way, however
# long it ran, so the supervisor stops every worker and exits with this code.
# No time heuristic is needed for a failure the worker can name itself.
EXIT_CANNOT_SERVE = 3

__all__ = [
    "DEFAULT_BOOT_TIME_S",
    "DEFAULT_GRACE_S",
    "EXIT_CANNOT_SERVE",
    "Supervisor",
    "run_forked",
]


def _log(name: str, message: str) -> None:
    print(f"{name}: {message}", file=sys.stderr, flush=True)


class Supervisor:
    """The parent process: forks, forwards stop signals, restarts crashed workers.

    A server whose children share one listening socket opens it before
    :meth:`run`, so that every child inherits it; a server whose children
    bind their own lets ``serve()`` do it and exits with
    :data:`EXIT_CANNOT_SERVE` when that fails. ``stop_signal`` is the signal
    the server treats as "stop gracefully" (bjoern: SIGINT; meinheld and
    uvloop: SIGTERM). ``boot_time=0`` restarts every crash, however young the
    worker, for a server whose workers report their start-up failures with
    :data:`EXIT_CANNOT_SERVE` (uvloop).
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
                # The first reason to stop is the exit code (EXIT_CANNOT_SERVE
                # stays even when the other workers then fail the same way).
                self.exit_code = self.exit_code or EXIT_WORKER_FAILED
            return
        _log(self.name, f"worker {number} (pid {pid}) exited with code {code}")
        if code == EXIT_CANNOT_SERVE:
            _log(self.name, "a worker cannot serve; stopping")
            self.exit_code = EXIT_CANNOT_SERVE
            self._on_stop(signal.SIGTERM)
            return
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

    For servers whose workers share one socket (bjoern, meinheld): call it
    after that socket is open on ``config.host`` and ``config.port``. It
    prints the start-up line (the address and the number of workers) and
    supervises the workers with the default grace and boot times.
    """
    _log(
        name,
        f"http://{config.host}:{config.port}/ with {config.workers} worker "
        f"process(es), one event loop each",
    )
    return Supervisor(config.workers, serve, stop_signal=stop_signal, name=name).run()
