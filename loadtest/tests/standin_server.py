"""The reference server with one flaw of pace, for the validity tests.

`python -m loadtest.tests.standin_server BEHAVIOUR "Display Name"` serves the
contract (contracts/tests/reference_server.py, so it passes verification)
on $HOST:$PORT, with one of:

- `nagle`: head and body leave in two writes with Nagle's algorithm on, so
  every keep-alive response waits for the client's delayed ACK (~40 ms);
- `slow-start`: 20 ms per request at first, less and less over SLOW_START_S
  of load, then full speed (a JIT or a cache warming up);
- `slows-half-way`: full speed for HALF_WAY_S of load, then 20 ms per request
  (a server degrading during a run);
- `capacity`: answers GET / at most CAPACITY_RPS times a second, one after
  another in evenly spaced slots (a single worker with a fixed service time):
  below that rate nothing waits, above it a backlog grows without bound;
- `gc-stall`: full speed, but every STALL_EVERY_S seconds of load all
  requests to GET / stop for STALL_MS (a periodic stop-the-world pause);
- `stalls-once`: full speed, but after STALL_ONCE_AFTER_S of load every
  request to GET / stops for STALL_ONCE_MS, once (a server that hangs);
- `climbs`: CLIMB_MS per request for CLIMB_S of load, then full speed, with
  no ramp in between (a JIT whose hot code is replaced at once).

"Load" starts at the LOAD_STARTS_AFTER-th GET /: the conformance checker sends
far fewer, so the clock starts with the harness's warm-up or measurement.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from contracts.tests.reference_server import Handler, ReferenceServer, serve_in_foreground

LOAD_STARTS_AFTER = 200
SLOW_START_S = 2.5
HALF_WAY_S = 1.8
CAPACITY_RPS = 400.0
STALL_EVERY_S = 0.5
STALL_MS = 100.0
STALL_ONCE_AFTER_S = 1.5
STALL_ONCE_MS = 900.0
CLIMB_S = 4.0
CLIMB_MS = 20.0
BEHAVIOURS = ("nagle", "slow-start", "slows-half-way", "capacity", "gc-stall", "stalls-once",
              "climbs")  # fmt: skip


class Pace:
    """The shared state of `capacity` and `gc-stall`: slots and pauses across threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.next_slot = 0.0
        self.next_stall = time.monotonic() + STALL_EVERY_S
        self.stalled_once = False

    def stall_once(self) -> None:
        with self.lock:  # every other request queues on the lock
            if not self.stalled_once:
                self.stalled_once = True
                time.sleep(STALL_ONCE_MS / 1000)

    def wait_for_slot(self) -> None:
        with self.lock:
            slot = max(time.monotonic(), self.next_slot)
            self.next_slot = slot + 1 / CAPACITY_RPS
        time.sleep(max(0.0, slot - time.monotonic()))

    def maybe_stall(self) -> None:
        with self.lock:
            if time.monotonic() >= self.next_stall:
                time.sleep(STALL_MS / 1000)  # every other request queues on the lock
                self.next_stall = time.monotonic() + STALL_EVERY_S


class Clock:
    def __init__(self) -> None:
        self.hellos = 0
        self.started: float | None = None
        self.lock = threading.Lock()

    def tick(self) -> float | None:
        """Seconds since load started (None before)."""
        with self.lock:
            self.hellos += 1
            if self.started is None and self.hellos >= LOAD_STARTS_AFTER:
                self.started = time.monotonic()
        return None if self.started is None else time.monotonic() - self.started


def handler_for(behaviour: str, clock: Clock) -> type:
    pace = Pace()

    class Paced(Handler):
        disable_nagle_algorithm = behaviour != "nagle"

        def do_GET(self) -> None:
            elapsed = clock.tick() if self.path == "/" else None
            if behaviour == "capacity" and self.path == "/":
                pace.wait_for_slot()
            elif behaviour == "gc-stall" and self.path == "/":
                pace.maybe_stall()
            if elapsed is not None:
                if behaviour == "slow-start" and elapsed < SLOW_START_S:
                    time.sleep(0.020 * (1 - elapsed / SLOW_START_S))
                elif behaviour == "slows-half-way" and elapsed >= HALF_WAY_S:
                    time.sleep(0.020)
                elif behaviour == "stalls-once" and elapsed >= STALL_ONCE_AFTER_S:
                    pace.stall_once()
                elif behaviour == "climbs" and elapsed < CLIMB_S:
                    time.sleep(CLIMB_MS / 1000)
            super().do_GET()

    return Paced


def main(argv: list[str]) -> int:
    behaviour, display_name = argv[0], argv[1]
    if behaviour not in BEHAVIOURS:
        print(f"unknown behaviour {behaviour!r}", file=sys.stderr)
        return 2
    server = ReferenceServer(display_name, port=int(os.environ["PORT"]),
                             host=os.environ.get("HOST", "127.0.0.1"))  # fmt: skip
    server.httpd.RequestHandlerClass = handler_for(behaviour, Clock())
    return serve_in_foreground(server, f"stand-in ({behaviour})")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
