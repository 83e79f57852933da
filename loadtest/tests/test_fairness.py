"""The connections' service (measure/fairness.py): the UNEVEN and RECONNECTS verdicts.

Real servers under real wrk load, read through the kernel's counters: one
serves every ready connection once per turn of its loop; another, like an
eager greenlet, keeps serving a connection for as long as its next request
comes quickly (UNEVEN); a third closes each connection after a few
responses, as cheroot does beyond 10 idle keep-alive connections
(RECONNECTS).
"""

from __future__ import annotations

import selectors
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from loadtest.core.verdict import UNEVEN_MAX_SHARE, UNEVEN_MIN_SHARE, reconnects, uneven
from loadtest.measure.fairness import (
    MIN_SEGMENTS,
    FairnessSampler,
    parse_segments,
    summarize,
    window_shares,
)

pytestmark = pytest.mark.timing

needs_wrk_and_ss = pytest.mark.skipif(
    shutil.which("wrk") is None or shutil.which("ss") is None, reason="wrk or ss not installed"
)

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
# How long the eager server keeps a connection while its requests keep coming.
EAGER_TURN_S = 0.3
# The closing server's requests per connection.
CLOSE_AFTER = 5

SS_OUTPUT = """\
0      0      127.0.0.1:8142 127.0.0.1:47192
\t cubic wscale:10,10 rto:201 rtt:0.02/0.01 mss:32768 bytes_received:6700 segs_out:101 segs_in:102 data_segs_in:100 send 1.2Gbps
0      0      127.0.0.1:8142 127.0.0.1:47176
\t cubic wscale:10,10 rto:201 rtt:0.02/0.01 mss:32768 bytes_received:67 segs_out:2 segs_in:3 data_segs_in:1 send 1.2Gbps
0      0      [::1]:8142 [::1]:51000
\t cubic wscale:10,10 rto:201 rtt:0.02/0.01 mss:32768 segs_out:1 segs_in:1 send 1.2Gbps
"""


def test_ss_lines_give_each_peer_its_received_segments():
    # A connection that has received no data has no data_segs_in: not counted.
    assert parse_segments(SS_OUTPUT) == {"127.0.0.1:47192": 100, "127.0.0.1:47176": 1}


def test_a_window_gives_the_least_and_most_served_connections_against_an_even_split():
    before = {"a": 0, "b": 0, "c": 0, "gone": 5}
    after = {"a": 20, "b": 40, "c": 240, "new": 90}
    # Only connections alive through the window count: a, b and c (an even split: 100).
    assert window_shares(before, after, connections=4) == (0.2, 2.4, 3)


def test_a_window_says_nothing_with_few_live_connections_or_few_requests():
    before = {"a": 0, "b": 0, "c": 0, "d": 0}
    busy = {"a": 50, "b": 60}
    assert window_shares(before, busy, connections=8) is None  # 2 of 8 lived through it
    quiet = {p: MIN_SEGMENTS - 1 for p in before}
    assert window_shares(before, quiet, connections=4) is None


def test_the_medians_over_the_windows_are_kept_and_the_worst_window_too():
    windows = [(0.9, 1.1, 64), (0.1, 9.0, 64), (0.8, 1.2, 62)]
    kept = summarize(windows, renewed=[0.0, 0.5, 0.0])
    assert (kept.windows, kept.connections) == (3, 64)
    assert (kept.min_share, kept.max_share, kept.worst_min_share) == (0.8, 1.2, 0.1)
    assert kept.renewed_share == 0.0
    # No window to judge (every connection replaced): no shares, but the renewal stays.
    churn = summarize([], renewed=[1.0, 1.0])
    assert (churn.windows, churn.min_share, churn.renewed_share) == (0, None, 1.0)
    assert not uneven(churn.to_dict())


def test_uneven_when_a_connection_is_starved_or_one_is_favoured():
    fair = {"windows": 4, "min_share": 0.8, "max_share": 1.2}
    assert not uneven(fair) and not uneven(None)
    assert uneven({**fair, "min_share": UNEVEN_MIN_SHARE - 0.01})
    assert uneven({**fair, "max_share": UNEVEN_MAX_SHARE + 0.1})


def test_reconnects_only_when_the_load_meant_to_keep_its_connections():
    churn = {"renewed_share": 1.0}
    assert reconnects(churn, keepalive=True)
    assert not reconnects(churn, keepalive=False)  # ab without -k reconnects by design
    assert not reconnects({"renewed_share": 0.0}, keepalive=True)
    assert not reconnects(None, keepalive=True)


def answer(conn: socket.socket) -> bool | None:
    """Answers every complete request read from `conn`: True when it answered, None
    when no request was there yet, False when the connection closed."""
    try:
        data = conn.recv(65536)
        if not data:
            return False
        conn.sendall(RESPONSE * max(1, data.count(b"\r\n\r\n")))
        return True
    except (BlockingIOError, TimeoutError):
        return None
    except OSError:
        return False


def serve(listener: socket.socket, eager: bool, stop: threading.Event, closing: bool) -> None:
    selector = selectors.DefaultSelector()
    served: dict[socket.socket, int] = {}
    selector.register(listener, selectors.EVENT_READ)
    while not stop.is_set():
        for key, _ in selector.select(0.1):
            if key.fileobj is listener:
                conn, _ = listener.accept()
                conn.setblocking(False)
                selector.register(conn, selectors.EVENT_READ)
                continue
            conn = key.fileobj
            alive = answer(conn) is not False
            if alive and eager:
                alive = keep_serving(conn)
            served[conn] = served.get(conn, 0) + 1
            if not alive or (closing and served[conn] >= CLOSE_AFTER):
                served.pop(conn, None)
                selector.unregister(conn)
                conn.close()
    selector.close()


def keep_serving(conn: socket.socket) -> bool:
    """The eager turn: the next request on this connection before any other."""
    conn.settimeout(0.01)
    end = time.monotonic() + EAGER_TURN_S
    try:
        while time.monotonic() < end:
            answered = answer(conn)
            if answered is None:  # no next request within the timeout
                return True
            if not answered:
                return False
        return True
    finally:
        if conn.fileno() != -1:
            conn.setblocking(False)


@contextmanager
def server(eager: bool = False, closing: bool = False) -> Iterator[int]:
    listener = socket.create_server(("127.0.0.1", 0), backlog=128)
    listener.setblocking(False)
    stop = threading.Event()
    thread = threading.Thread(target=serve, args=(listener, eager, stop, closing), daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def measured(port: int, connections: int = 16, seconds: int = 4):
    sampler = FairnessSampler(port, connections, seconds)
    sampler.start()
    subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", f"http://127.0.0.1:{port}/"],
        capture_output=True, check=True, timeout=seconds + 30,
    )  # fmt: skip
    return sampler.stop()


@needs_wrk_and_ss
def test_a_loop_that_serves_each_ready_connection_in_turn_is_even():
    with server(eager=False) as port:
        fairness = measured(port)
    assert fairness is not None and fairness.windows >= 2, fairness
    assert fairness.connections == 16
    assert not uneven(fairness.to_dict()), fairness
    assert fairness.renewed_share == 0.0 and not reconnects(fairness.to_dict(), True)


@needs_wrk_and_ss
def test_a_loop_that_keeps_a_connection_while_it_has_requests_is_uneven():
    with server(eager=True) as port:
        fairness = measured(port)
    assert fairness is not None and fairness.windows >= 2, fairness
    assert uneven(fairness.to_dict()), fairness


@needs_wrk_and_ss
def test_a_server_that_closes_kept_alive_connections_reconnects():
    with server(closing=True) as port:
        fairness = measured(port)
    assert fairness is not None, "the connections were read"
    assert fairness.renewed_share > 0.5, fairness
    assert reconnects(fairness.to_dict(), keepalive=True)
