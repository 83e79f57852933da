"""Small helpers for the stacks' own tests that start the real server.

Stack tests (servers/<name>/tests) run with the tooling venv and start the
stack through `loadtest.runners.native.running_stack`; these helpers keep the
socket plumbing and the contract's vector checks in one place, so every
stack is held to the same checks. A stack test parametrizes over the
vectors itself (for readable test ids): over INPUT_CASES with INPUT_IDS,
calling `check_input` per case, or over one group calling its `check_*`;
the checks raise AssertionError with the case and what came back.
"""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import json
import re
import socket
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from loadtest.core.manifest import REPO_ROOT
from loadtest.host.ports import free_port  # noqa: F401  (re-exported for stack tests)

if TYPE_CHECKING:
    from loadtest.runners.native import NativeServer

VECTORS_DIR = REPO_ROOT / "contracts" / "vectors"
N_ERROR = b"n must be an integer between 1 and 100"
AT_ERROR = b"at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]"
PLAIN_TEXT = "text/plain; charset=utf-8"
HELLO_TIME = re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}")
# Each static stack id and the Server header it sends: tuned configs hide the
# version (server_tokens off, ServerTokens Prod), stock configs show Debian's.
STATIC_STACK_SERVER_HEADERS = [
    ("nginx-static", "nginx"),
    ("nginx-static@stock", "nginx/1.22.1"),
    ("apache-static", "Apache"),
    ("apache-static@stock", "Apache/2.4.71 (Debian)"),
]


def vectors(name: str) -> dict:
    """contracts/vectors/<name>.json, e.g. vectors("workday")."""
    return json.loads((VECTORS_DIR / f"{name}.json").read_text())


INPUTS = vectors("inputs")
WORKDAY = vectors("workday")


@contextlib.contextmanager
def connection(port: int) -> Iterator[http.client.HTTPConnection]:
    """A keep-alive HTTP/1.1 connection to 127.0.0.1:port, closed afterwards."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        yield conn
    finally:
        conn.close()


def get(conn: http.client.HTTPConnection, target: str, method: str = "GET"):
    """One request on a kept-alive connection; returns (response, body)."""
    conn.request(method, target)
    response = conn.getresponse()
    return response, response.read()


def raw_exchange(port: int, payload: bytes) -> bytes:
    """Send raw bytes and read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(payload)
        chunks = []
        while chunk := sock.recv(65536):  # the server must close the connection
            chunks.append(chunk)
    return b"".join(chunks)


def expect(conn: http.client.HTTPConnection, target: str, status: int, body: bytes):
    """GET target must answer exactly (status, body); returns the response."""
    response, got = get(conn, target)
    assert (response.status, got) == (status, body), (target, response.status, got[:200])
    return response


# --- the vectors ----------------------------------------------------------------


def check_workday_vectors(conn: http.client.HTTPConnection) -> None:
    """Every case of contracts/vectors/workday.json answers its trading day."""
    for case in WORKDAY["cases"]:
        expect(conn, "/workday?at=" + case["at"], 200, case["expect"].encode())


def check_n_valid(conn: http.client.HTTPConnection, case: dict) -> None:
    """A valid n (inputs.json n.valid) answers n KB of "X" with its exact length."""
    response = expect(conn, "/?" + case["raw"], 200, b"X" * (1000 * case["kb"]))
    assert response.getheader("Content-Length") == str(1000 * case["kb"]), case


def check_hello(conn: http.client.HTTPConnection, case: dict, display_name: str) -> None:
    """No or an empty n (inputs.json n.hello) is the hello with the UTC time."""
    response, body = get(conn, "/?" + case["raw"] if case["raw"] else "/")
    prefix = f"Hello World, from {display_name}! ".encode()
    assert response.status == 200, (case, response.status, body)
    assert body.startswith(prefix) and HELLO_TIME.fullmatch(body[len(prefix) :]), (case, body)


def check_n_invalid(conn: http.client.HTTPConnection, case: dict) -> None:
    """An invalid n (inputs.json n.invalid) is a 400 with the n message."""
    expect(conn, "/?" + case["raw"], 400, N_ERROR)


def check_at_valid(conn: http.client.HTTPConnection, case: dict) -> None:
    """A valid at (inputs.json at.valid) answers its trading day."""
    expect(conn, "/workday?" + case["raw"], 200, case["expect"].encode())


def check_at_invalid(conn: http.client.HTTPConnection, case: dict) -> None:
    """An invalid at (inputs.json at.invalid) is a 400 with the at message."""
    expect(conn, "/workday?" + case["raw"], 400, AT_ERROR)


# Every vector of inputs.json as (group, case), the group being "n-valid",
# "n-hello", "n-invalid", "at-valid" or "at-invalid"; INPUT_IDS names each
# case for a test id: `@pytest.mark.parametrize("group, case", INPUT_CASES,
# ids=INPUT_IDS)`.
INPUT_CASES = [
    (f"{param}-{group}", case)
    for param, groups in (("n", ("valid", "hello", "invalid")), ("at", ("valid", "invalid")))
    for group in groups
    for case in INPUTS[param][group]
]
INPUT_IDS = [f"{group}:{case['raw'] or '<none>'}" for group, case in INPUT_CASES]
_INPUT_CHECKS = {
    "n-valid": check_n_valid,
    "n-invalid": check_n_invalid,
    "at-valid": check_at_valid,
    "at-invalid": check_at_invalid,
}


def check_input(
    conn: http.client.HTTPConnection, group: str, case: dict, display_name: str
) -> None:
    """One (group, case) of INPUT_CASES, checked by its group's `check_*`."""
    if group == "n-hello":
        check_hello(conn, case, display_name)
    else:
        _INPUT_CHECKS[group](conn, case)


# --- the rest of the contract ---------------------------------------------------


def check_headers(conn: http.client.HTTPConnection, targets: Iterable[str]) -> None:
    """Plain text, an exact Content-Length (never chunked), one current Date."""
    for target in targets:
        response, body = get(conn, target)
        assert response.getheader("Content-Type") == PLAIN_TEXT, target
        assert response.getheader("Content-Length") == str(len(body)), target
        assert response.getheader("Transfer-Encoding") is None, target
        dates = response.msg.get_all("Date")
        assert dates and len(dates) == 1, (target, dates)
        date = email.utils.parsedate_to_datetime(dates[0])
        assert abs(date.timestamp() - time.time()) < 3, (target, dates)


def check_not_found(conn: http.client.HTTPConnection, path: str):
    """An unknown path is a 404; returns (response, body) for stack-specific checks."""
    response, body = get(conn, path)
    assert response.status == 404, (path, response.status, body[:200])
    return response, body


def check_method_not_allowed(conn: http.client.HTTPConnection, method: str, path: str):
    """Another method on a known route is a 405 with one `Allow: GET, HEAD`;
    returns (response, body) for stack-specific checks."""
    response, body = get(conn, path, method)
    assert response.status == 405, (method, path, response.status, body[:200])
    assert response.msg.get_all("Allow") == ["GET, HEAD"], (method, path)
    return response, body


def check_head(conn: http.client.HTTPConnection) -> None:
    """HEAD: the GET's status and Content-Length, no body, the connection still usable."""
    response, body = get(conn, "/?n=7", "HEAD")
    assert (response.status, body, response.getheader("Content-Length")) == (200, b"", "7000")
    response, body = get(conn, "/workday?at=", "HEAD")
    assert (response.status, body) == (400, b"")
    assert response.getheader("Content-Length") == str(len(AT_ERROR))
    # Nothing was left unread: the next request on the connection is answered.
    expect(conn, "/workday?at=2019-05-05T10:00", 200, b"2019-05-06")


def check_http10_and_connection_close(port: int) -> None:
    """HTTP/1.0 and `Connection: close` are answered, then the server closes."""
    reply = raw_exchange(port, b"GET /workday?at=2019-05-05T10:00 HTTP/1.0\r\n\r\n")
    status_line = reply.split(b"\r\n")[0]
    assert status_line.startswith(b"HTTP/1.") and b" 200 " in status_line, reply[:200]
    assert reply.endswith(b"\r\n\r\n2019-05-06"), reply[-200:]
    reply = raw_exchange(port, b"GET /?n=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert reply.endswith(b"\r\n\r\n" + b"X" * 1000), reply[:200]


def quiet_log(path, quiet_s: float = 1.0, limit_s: float = 15.0) -> str:
    """The log's text once it has not changed for quiet_s (at most limit_s)."""
    text, since, deadline = path.read_text(), time.monotonic(), time.monotonic() + limit_s
    while time.monotonic() - since < quiet_s and time.monotonic() < deadline:
        time.sleep(0.2)
        now = path.read_text()
        if now != text:
            text, since = now, time.monotonic()
    return text


def check_no_request_logging(server: NativeServer, conn: http.client.HTTPConnection) -> None:
    """Requests (hello, 404, 400) add nothing to the running stack's log.

    The log must first be quiet for a second: on a busy host a multi-worker
    server's last workers may still be writing their start-up lines.
    """
    before = quiet_log(server.log_path)
    for _ in range(20):
        for target in ("/", "/nope", "/?n=0"):
            get(conn, target)
    time.sleep(0.5)
    after = server.log_path.read_text()
    assert after == before, (
        f"the stack wrote while serving 60 requests:\n{after[len(before) :][-2000:]}"
    )
