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
  signal and waits up to ``grace`` seconds; it exits 0 when every child has
  stopped, or SIGKILLs what is left and exits 1 (a worker that outlives its
  graceful stop did not stop cleanly);
- a child that exits on its own is restarted, unless it says it cannot serve
  (exit code :data:`EXIT_CANNOT_SERVE`, for example because it cannot bind
  its socket: the whole server stops with that code) or dies within
  ``boot_time`` seconds of starting (it presumably cannot serve either: the
  whole server stops with status 1 instead of restarting it in a loop).

The parent serves nothing and costs no CPU. It installs no signal handler:
it keeps the signals it acts on blocked and takes them one at a time with
``sigwaitinfo``. A handler could lose one: a signal that lands after
Python's last check for signals and before a blocking ``os.wait()`` is
handled only when some child exits, and a SIGTERM then hangs the stop
(docs/measurements/prefork-lost-signal.md).
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
# Every signal the parent acts on: a stop, a child's exit, the end of the grace period.
SUPERVISED_SIGNALS = (*STOP_SIGNALS, signal.SIGCHLD, signal.SIGALRM)
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
            # A child inherits the parent's signal mask, which blocks the
            # signals it takes with sigwaitinfo: unblock them, with Python's
            # defaults (SIGTERM ends the process, SIGINT raises
            # KeyboardInterrupt); the server installs its own while it runs.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, SUPERVISED_SIGNALS)
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

    def _on_stop(self) -> None:
        if self.stopping:
            # A second SIGTERM/SIGINT: stop waiting for a graceful end.
            self._signal_children(signal.SIGKILL)
            return
        self.stopping = True
        self._signal_children(self.stop_signal)
        signal.setitimer(signal.ITIMER_REAL, self.grace)

    def _on_grace_over(self) -> None:
        if self.children:
            _log(
                self.name,
                f"{len(self.children)} worker(s) still busy after {self.grace:g} s; killing them",
            )
            self.exit_code = self.exit_code or EXIT_WORKER_FAILED
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
            self._on_stop()
            return
        if time.monotonic() - started < self.boot_time:
            _log(self.name, "a worker failed at start-up; stopping")
            self.exit_code = EXIT_WORKER_FAILED
            self._on_stop()
            return
        self._spawn(number)

    def _reap_exited(self) -> None:
        """Reap every child that has exited (one SIGCHLD may stand for several)."""
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.children:
                self._reap(pid, status)

    def run(self) -> int:
        """Fork the workers and supervise them until they are all gone; the exit code."""
        # Blocked, a signal waits until sigwaitinfo takes it, whenever it comes:
        # none is lost between a check and a wait, none arrives half-way through a
        # fork, and each child unblocks them for itself.
        blocked_before = signal.pthread_sigmask(signal.SIG_BLOCK, SUPERVISED_SIGNALS)
        try:
            for number in range(self.workers):
                self._spawn(number)
            while True:
                self._reap_exited()
                if not self.children:
                    break
                signum = signal.sigwaitinfo(SUPERVISED_SIGNALS).si_signo
                if signum in STOP_SIGNALS:
                    self._on_stop()
                elif signum == signal.SIGALRM:
                    self._on_grace_over()
                # SIGCHLD: the next _reap_exited() finds the child.
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked_before)
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
