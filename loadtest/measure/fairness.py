"""How evenly the server served its connections while the load ran.

A server can reach its throughput while serving a few connections at a time
and leaving the others waiting. Its latency percentiles are then the waiting
connections, not the server's speed: gunicorn's gevent worker lets a
connection whose next request is already there keep the worker for hundreds
of requests (servers/flask-gevent/README.md, "Tail latency").

The kernel counts what each connection received: `data_segs_in` of the
server's side of every established connection (`ss -ti`), one segment per
request for the small requests of the scenarios. Read every WINDOW_S over
the middle half of the load, each window gives each connection a share: its
segments over an even split of the window's segments (1 = its fair part).
A window counts only when enough connections lived through it (reconnecting
loads have none) and the even split is MIN_SEGMENTS or more (at a slow
open-loop rate the split is uneven by chance).

The figures kept are the median over the windows of the smallest and the
largest share, and the share of the connections at a window's end that
were not there at its start (`renewed_share`, median over the windows). A
keep-alive load renews none; more means the server closed connections the
client wanted to keep (cheroot does beyond 10 idle ones), and the figure
includes TCP handshakes. The judgements (uneven, reconnecting) are
core/verdict.py's.
Readable only where the server's sockets are: this machine's network
namespace (native stacks, and containers on the host network).
"""

from __future__ import annotations

import re
import statistics
import subprocess
import threading
import time
from dataclasses import asdict, dataclass

# Short enough to see a connection wait a few hundred milliseconds, long
# enough that a fair server gives each of 64 connections 10 or more requests
# at 1,300 requests/s.
WINDOW_S = 0.5
MIN_SEGMENTS = 10
# Of the load's connections, the share that must live through a window.
MIN_LIVE_SHARE = 0.5

_SEGS_IN = re.compile(r"\bdata_segs_in:(\d+)")


@dataclass
class Fairness:
    windows: int  # windows judged (the share fields are None without any)
    connections: int | None  # connections alive through the median window
    min_share: float | None  # median over the windows of the least-served connection's share
    max_share: float | None  # median over the windows of the most-served connection's share
    # (a share: the connection's requests over an even split of the window's)
    worst_min_share: float | None  # the smallest share of any window
    # Of the connections at a window's end, the share new since its start (median).
    renewed_share: float

    def to_dict(self) -> dict:
        return asdict(self)


def parse_segments(ss_output: str) -> dict[str, int]:
    """Peer address -> data_segs_in, from `ss -tinH state established`."""
    segments: dict[str, int] = {}
    peer = None
    for line in ss_output.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            fields = line.split()
            peer = fields[-1] if len(fields) >= 2 else None
            continue
        found = _SEGS_IN.search(line)
        if peer and found:
            segments[peer] = int(found.group(1))
            peer = None
    return segments


def read_segments(port: int) -> dict[str, int] | None:
    """The server side's received segments per connection on `port`; None without ss."""
    try:
        done = subprocess.run(
            ["ss", "-tinH", "state", "established", f"( sport = :{port} )"],
            capture_output=True, text=True, timeout=5, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_segments(done.stdout)


def window_shares(
    before: dict[str, int], after: dict[str, int], connections: int
) -> tuple[float, float, int] | None:
    """(least share, largest share, live connections) of one window, or None
    when the window says nothing (too few connections lived through it, or
    too few segments)."""
    served = [after[peer] - before[peer] for peer in after if peer in before]
    if len(served) < 2 or len(served) < connections * MIN_LIVE_SHARE:
        return None
    even = sum(served) / len(served)
    if even < MIN_SEGMENTS:
        return None
    return min(served) / even, max(served) / even, len(served)


def summarize(windows: list[tuple[float, float, int]], renewed: list[float]) -> Fairness:
    renewed_share = round(statistics.median(renewed), 3) if renewed else 0.0
    if not windows:
        return Fairness(0, None, None, None, None, renewed_share)
    return Fairness(
        windows=len(windows),
        connections=int(statistics.median(w[2] for w in windows)),
        min_share=round(statistics.median(w[0] for w in windows), 3),
        max_share=round(statistics.median(w[1] for w in windows), 3),
        worst_min_share=round(min(w[0] for w in windows), 3),
        renewed_share=renewed_share,
    )


class FairnessSampler:
    """Reads the connections of `port` every WINDOW_S over the middle half of a
    load of `duration` seconds, in a thread between start() and stop()."""

    def __init__(self, port: int, connections: int, duration: float) -> None:
        self._port = port
        self._connections = connections
        self._duration = duration
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._windows: list[tuple[float, float, int]] = []
        self._renewed: list[float] = []

    def _run(self) -> None:
        start = time.monotonic()
        if self._stop.wait(self._duration * 0.25):
            return
        previous = read_segments(self._port)
        while previous is not None and time.monotonic() - start < self._duration * 0.75:
            if self._stop.wait(WINDOW_S):
                return
            current = read_segments(self._port)
            if current is None:
                return
            if current:
                self._renewed.append(len(current.keys() - previous.keys()) / len(current))
            shares = window_shares(previous, current, self._connections)
            if shares:
                self._windows.append(shares)
            previous = current

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="fairness-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> Fairness | None:
        """The figures, or None when the connections could not be read at all."""
        self._stop.set()
        if self._thread:
            self._thread.join()
        if not self._renewed:
            return None
        return summarize(self._windows, self._renewed)
