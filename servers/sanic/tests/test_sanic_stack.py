"""The Sanic stack, built with its manifest's build command and run for real.

Runs the shared input and workday vectors over HTTP, plus the points where
Sanic's defaults differ from the contract (trailing slash, Allow order,
blank query values, Date header, logging).
"""

import email.utils
import http.client
import re
import socket
import time
from pathlib import Path

import pytest

from loadtest.manifest import load
from loadtest.native import running_stack
from loadtest.runner import Limits
from loadtest.testing import AT_ERROR, N_ERROR, free_port, get, vectors

STACK = Path(__file__).resolve().parent.parent
INPUTS = vectors("inputs")
WORKDAY = vectors("workday")



@pytest.fixture(scope="module")
def server():
    with running_stack("sanic", Limits(extra_env={"WORKERS": "2"}), port=free_port()) as srv:
        yield srv
        # SIGTERM must stop the manager and every worker cleanly.
        assert srv.stop() in (0, -15, 143)


@pytest.fixture
def conn(server):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    yield connection
    connection.close()



def test_display_name_matches_the_manifest():
    source = (STACK / "server.py").read_text()
    assert (
        re.search(r'^DISPLAY_NAME = "(.*)"$', source, re.M).group(1) == load("sanic").display_name
    )


def test_workday_vectors(conn):
    for case in WORKDAY["cases"]:
        response, body = get(conn, "/workday?at=" + case["at"])
        assert (response.status, body.decode()) == (200, case["expect"]), case


@pytest.mark.parametrize("case", INPUTS["n"]["valid"], ids=lambda c: c["raw"])
def test_n_valid(conn, case):
    response, body = get(conn, "/?" + case["raw"])
    assert (response.status, body) == (200, b"X" * (1000 * case["kb"]))
    assert response.getheader("Content-Length") == str(len(body))


@pytest.mark.parametrize("case", INPUTS["n"]["hello"], ids=lambda c: c["raw"] or "<none>")
def test_hello(conn, case):
    response, body = get(conn, "/?" + case["raw"] if case["raw"] else "/")
    assert response.status == 200
    assert re.fullmatch(rb"Hello World, from Sanic! \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}", body)


@pytest.mark.parametrize("case", INPUTS["n"]["invalid"], ids=lambda c: c["raw"])
def test_n_invalid(conn, case):
    assert get(conn, "/?" + case["raw"])[1] == N_ERROR


@pytest.mark.parametrize("case", INPUTS["at"]["valid"], ids=lambda c: c["raw"])
def test_at_valid(conn, case):
    assert get(conn, "/workday?" + case["raw"])[1] == case["expect"].encode()


@pytest.mark.parametrize("case", INPUTS["at"]["invalid"], ids=lambda c: c["raw"])
def test_at_invalid(conn, case):
    response, body = get(conn, "/workday?" + case["raw"])
    assert (response.status, body) == (400, AT_ERROR)


def test_headers(conn):
    for target in ("/", "/?n=100", "/workday", "/?n=0"):
        response, body = get(conn, target)
        assert response.getheader("Content-Type") == "text/plain; charset=utf-8"
        assert response.getheader("Content-Length") == str(len(body))
        assert response.getheader("Transfer-Encoding") is None
        date = email.utils.parsedate_to_datetime(response.getheader("Date"))
        assert abs(date.timestamp() - time.time()) < 3


@pytest.mark.parametrize("path", ["/workday/", "/index.html", "/nope"])
def test_not_found(conn, path):
    assert get(conn, path)[0].status == 404


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
@pytest.mark.parametrize("path", ["/", "/workday"])
def test_method_not_allowed(conn, method, path):
    response, _ = get(conn, path, method)
    assert response.status == 405
    assert response.getheader("Allow") == "GET, HEAD"


def test_head(conn):
    response, body = get(conn, "/?n=7", "HEAD")
    assert (response.status, body, response.getheader("Content-Length")) == (200, b"", "7000")
    response, body = get(conn, "/workday?at=", "HEAD")
    assert (response.status, body) == (400, b"")
    assert response.getheader("Content-Length") == str(len(AT_ERROR))


def raw_exchange(port, payload):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(payload)
        chunks = []
        while chunk := sock.recv(65536):  # the server must close the connection
            chunks.append(chunk)
    return b"".join(chunks)


def test_http10_and_connection_close(server):
    reply = raw_exchange(server.port, b"GET /workday?at=2019-05-05T10:00 HTTP/1.0\r\n\r\n")
    assert reply.startswith(b"HTTP/1.") and b" 200 " in reply.split(b"\r\n")[0]
    assert reply.endswith(b"\r\n\r\n2019-05-06")
    reply = raw_exchange(server.port, b"GET /?n=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert reply.endswith(b"X" * 1000)


def test_no_per_request_logging(server, conn):
    before = server.log_path.read_text()
    for _ in range(20):
        get(conn, "/")
        get(conn, "/nope")
    time.sleep(0.5)
    assert server.log_path.read_text() == before
