"""The raw uvloop + httptools server, built with its manifest and run for real.

Talks raw sockets to 127.0.0.1 to cover what a framework would otherwise do:
requests split across TCP writes, pipelining, malformed requests, HEAD,
Connection: close, HTTP/1.0, request bodies, limits, flow control and the
worker processes' supervision.
"""

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from loadtest.core.manifest import load
from loadtest.core.runner import Limits
from loadtest.runners.native import running_stack
from loadtest.testing import AT_ERROR, WORKDAY, free_port

pytestmark = pytest.mark.e2e

STACK = Path(__file__).resolve().parent.parent
HELLO = re.compile(rb"Hello World, from Python uvloop \+ httptools! \d{4}-\d\d-\d\d [\d:.]{12}")


@pytest.fixture(scope="module")
def server():
    with running_stack("uvloop", Limits(extra_env={"WORKERS": "2"}), port=free_port()) as srv:
        yield srv
        # SIGTERM to the parent must stop it and every worker cleanly.
        assert srv.stop() == 0


class Client:
    """A raw HTTP/1.1 connection that reads responses one by one."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buffer = b""

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed")
        self.buffer += chunk

    def response(self, head_only=False):
        """(status, headers dict with lower-case names, body)."""
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        status_line, *lines = head.decode("latin-1").split("\r\n")
        assert status_line.startswith("HTTP/1.1 "), status_line
        headers = {}
        for line in lines:
            name, value = line.split(":", 1)
            assert name.lower() not in headers, f"repeated header {name}"
            headers[name.lower()] = value.strip()
        length = 0 if head_only else int(headers["content-length"])
        while len(self.buffer) < length:
            self._fill()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return int(status_line.split()[1]), headers, body

    def closed_by_server(self):
        """True when the server has closed its side (after any buffered data)."""
        try:
            return self.buffer == b"" and self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self):
        self.sock.close()


@pytest.fixture
def client(server):
    c = Client(server.port)
    yield c
    c.close()


def get(path, extra=b""):
    return b"GET " + path.encode() + b" HTTP/1.1\r\nHost: test\r\n" + extra + b"\r\n"


def test_display_name_matches_the_manifest():
    source = (STACK / "server.py").read_text()
    name = re.search(r'^DISPLAY_NAME = "(.*)"$', source, re.M).group(1)
    assert name == load("uvloop").display_name


def test_response_shape(client):
    client.send(get("/workday?at=2019-05-05T10:00"))
    status, headers, body = client.response()
    assert (status, body) == (200, b"2019-05-06")
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert headers["content-length"] == "10"
    assert re.fullmatch(r"\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT", headers["date"])
    assert "connection" not in headers and "transfer-encoding" not in headers


def test_request_split_across_tcp_writes(client):
    client.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    request = get("/workday?at=2019-09-30T15:00:01", b"User-Agent: split-test\r\n")
    for piece in (request[:2], request[2:9], request[9:30], request[30:-3], request[-3:]):
        client.send(piece)
        time.sleep(0.05)
    assert client.response()[2] == b"2019-10-08"
    # The connection is still usable, and byte-by-byte works too.
    for byte in get("/?n=2"):
        client.send(bytes([byte]))
    assert client.response()[2] == b"X" * 2000


def test_pipelined_requests_answered_in_order(client):
    cases = WORKDAY["cases"][:5]
    paths = [f"/?n={n}" for n in (3, 1, 2)] + ["/workday?at=" + c["at"] for c in cases]
    paths += ["/nope", "/?n=0"]
    client.send(b"".join(get(p) for p in paths))  # 10 requests in one write
    answers = [client.response() for _ in paths]
    assert [a[2] for a in answers[:3]] == [b"X" * 3000, b"X" * 1000, b"X" * 2000]
    assert [a[2].decode() for a in answers[3:8]] == [c["expect"] for c in cases]
    assert [a[0] for a in answers[8:]] == [404, 400]
    client.send(get("/"))
    assert HELLO.fullmatch(client.response()[2])


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GARBAGE\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
        b"GET /\x00 HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nBad Header\r\n\r\n",
        b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
    ],
)
def test_malformed_request_gets_400_and_server_keeps_serving(server, request_bytes):
    bad = Client(server.port)
    bad.send(request_bytes)
    status, headers, body = bad.response()
    assert (status, headers["connection"], body) == (400, "close", b"Bad Request")
    assert bad.closed_by_server()
    bad.close()
    for _ in range(4):  # new connections reach both workers
        good = Client(server.port)
        good.send(get("/?n=1"))
        assert good.response()[0] == 200
        good.close()


def test_valid_requests_before_a_malformed_one_are_answered(client):
    client.send(get("/?n=1") + get("/workday?at=2019-05-05T10:00") + b"BROKEN\r\n\r\n")
    assert client.response()[0] == 200
    assert client.response()[2] == b"2019-05-06"
    assert client.response()[0] == 400
    assert client.closed_by_server()


def test_head(client):
    client.send(b"HEAD /?n=5 HTTP/1.1\r\nHost: t\r\n\r\n" + get("/?n=1"))
    status, headers, body = client.response(head_only=True)
    assert (status, headers["content-length"], body) == (200, "5000", b"")
    assert client.response()[2] == b"X" * 1000  # no stray body bytes before it
    client.send(b"HEAD /workday?at= HTTP/1.1\r\n\r\n")
    status, headers, _ = client.response(head_only=True)
    assert (status, headers["content-length"]) == (400, str(len(AT_ERROR)))


def test_connection_close(client):
    client.send(get("/?n=1", b"Connection: close\r\n") + get("/?n=2"))
    status, headers, body = client.response()
    assert (status, headers["connection"], len(body)) == (200, "close", 1000)
    assert client.closed_by_server()  # the request after it is not answered


def test_http10_closes_unless_keep_alive_is_asked(client, server):
    client.send(b"GET /?n=1 HTTP/1.0\r\n\r\n")
    status, headers, body = client.response()
    assert (status, headers["connection"], len(body)) == (200, "close", 1000)
    assert client.closed_by_server()
    keep = Client(server.port)
    for _ in range(3):
        keep.send(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        status, headers, body = keep.response()
        assert (status, headers["connection"]) == (200, "keep-alive")
    keep.close()


def test_methods_and_paths(client):
    client.send(
        b"POST /workday HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
        + b"DELETE / HTTP/1.1\r\n\r\n"
        + b"OPTIONS * HTTP/1.1\r\n\r\n"
        + get("/workday/")
        + b"GET http://example.test/workday?at=2019-05-05T10:00 HTTP/1.1\r\n\r\n"
    )
    status, headers, body = client.response()
    assert (status, headers["allow"], body) == (405, "GET, HEAD", b"Method Not Allowed")
    assert client.response()[0] == 405
    assert client.response()[0] == 404
    assert client.response()[0] == 404
    assert client.response()[2] == b"2019-05-06"  # absolute-form target


def test_request_bodies_are_ignored(client):
    body = b"x" * 200_000
    client.send(b"GET /?n=1 HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    assert client.response()[2] == b"X" * 1000
    chunked = b"GET /?n=2 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    client.send(chunked + get("/?n=3"))
    assert len(client.response()[2]) == 2000
    assert len(client.response()[2]) == 3000


def rejected(port, *pieces):
    """Send pieces until the server stops the connection; its status, or None.

    A server that closes while request bytes are still unread makes the kernel
    reset the connection, which may swallow the error response itself.
    """
    c = Client(port)
    try:
        for piece in pieces:
            c.send(piece)
        return c.response()[0]
    except (BrokenPipeError, ConnectionResetError, EOFError):
        return None
    finally:
        c.close()


def test_limits(server):
    assert rejected(server.port, get("/?" + "a" * 9000)) == 414
    body = [b"x" * 100_000] * 11
    assert rejected(server.port, b"POST / HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n", *body) in (
        413,
        None,
    )
    headers = [b"X-Filler: " + b"y" * 1000 + b"\r\n"] * 200
    assert rejected(server.port, b"GET / HTTP/1.1\r\n", *headers) in (431, None)
    # None of that disturbed the server.
    c = Client(server.port)
    c.send(get("/?n=1"))
    assert c.response()[0] == 200
    c.close()


def test_pipelined_large_bodies_with_a_slow_reader(client):
    # 40 x 100 KB answers are far above the transport's high-water mark: the
    # server must pause, wait for the reader and still answer every request.
    client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    client.send(b"".join(get(f"/?n={100 - i % 2}") for i in range(40)))
    time.sleep(0.5)
    for i in range(40):
        assert len(client.response()[2]) == (100 - i % 2) * 1000


def test_upgrade_request_is_answered_as_http11(client):
    client.send(get("/?n=1", b"Connection: Upgrade\r\nUpgrade: h2c\r\n") + get("/?n=2"))
    assert len(client.response()[2]) == 1000
    assert len(client.response()[2]) == 2000


def test_date_changes_every_second(client):
    client.send(get("/"))
    first = client.response()[1]["date"]
    time.sleep(1.2)
    client.send(get("/"))
    assert client.response()[1]["date"] != first


def test_a_crashed_worker_is_replaced(server):
    workers = [pid for pid in server.pids() if pid != server.process.pid]
    assert len(workers) == 2
    os.kill(workers[0], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        now = [pid for pid in server.pids() if pid != server.process.pid]
        if len(now) == 2 and workers[0] not in now:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"worker not replaced: {server.pids()}")
    for _ in range(6):
        c = Client(server.port)
        c.send(get("/"))
        assert c.response()[0] == 200
        c.close()


def test_a_stop_right_after_a_restart_is_clean():
    # SIGTERM forwarded to a worker forked a moment before, whose event loop has
    # not yet taken the signal over, ends it by the signal: still a clean stop.
    with running_stack("uvloop", Limits(extra_env={"WORKERS": "2"}), port=free_port()) as srv:
        workers = [pid for pid in srv.pids() if pid != srv.process.pid]
        os.kill(workers[0], signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not [p for p in srv.pids() if p not in workers and p != srv.process.pid]:
            assert time.monotonic() < deadline, f"worker not replaced: {srv.pids()}"
            time.sleep(0.001)
        assert srv.stop() == 0


def test_single_worker_runs_in_process_and_stops_cleanly():
    with running_stack("uvloop", Limits(extra_env={"WORKERS": "1"}), port=free_port()) as srv:
        assert srv.pids() == [srv.process.pid]
        c = Client(srv.port)
        c.send(get("/workday?at=2019-05-05T10:00"))
        assert c.response()[2] == b"2019-05-06"
        c.close()
        assert srv.stop() == 0


def test_port_in_use_stops_every_worker_with_a_clear_message(server):
    python = server.manifest.build_dir / "venv" / "bin" / "python"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        env = dict(
            os.environ,
            PORT=str(taken.getsockname()[1]),
            HOST="127.0.0.1",
            WORKERS="2",
            WORKDAY_CALENDAR=str(
                STACK.parent.parent / "contracts/calendar/xshg-non-trading-weekdays.txt"
            ),
        )
        result = subprocess.run(
            [str(python), "server.py"],
            cwd=STACK,
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 3
    assert "cannot listen on 127.0.0.1:" in result.stderr


def test_missing_calendar_is_a_clear_error(server):
    python = server.manifest.build_dir / "venv" / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "WORKDAY_CALENDAR"}
    result = subprocess.run(
        [str(python), "server.py"], cwd=STACK, env=env, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2
    assert "WORKDAY_CALENDAR is not set" in result.stderr
