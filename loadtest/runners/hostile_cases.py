"""The raw-socket cases of the hostile-input suite (`make hostile`).

Each case sends bytes no well-behaved client sends and judges the answer
by the rules in docs/reliability.md: no 5xx, a 4xx or a closed connection
for a bad request, the right answer for a request that is odd but valid.
Everything goes to 127.0.0.1 on the port given, with a timeout on every
socket operation, so a case always ends (the raw client: runners/raw_http.py).

A case returns a `CaseResult`; it never raises for anything the server
does (a refused connection, a reset, a hang are all results).
"""

from __future__ import annotations

import contextlib
import errno
import selectors
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field

# raw_http.TIMEOUT_S is read where it is defined, at call time, so that one
# setting (a test's shorter timeout) reaches raw_http's helpers and these cases.
from loadtest.runners import raw_http
from loadtest.runners.raw_http import (
    HOST,
    Exchange,
    Response,
    closed_by_peer,
    connect,
    exchange,
    exchange_sequence,
    raise_file_limit,
    request,
)

HELLO_PREFIX = b"Hello World, from "
SUNDAY = "2019-05-05T10:00"  # belongs to Monday 2019-05-06
SUNDAY_ANSWER = b"2019-05-06"
# 505 (HTTP Version Not Supported) is what RFC 9110 section 15.6.6 prescribes
# for a major version the server does not speak: the one 5xx a case may accept.
VERSION_NOT_SUPPORTED = 505


@dataclass
class CaseResult:
    case: str
    ok: bool
    detail: str
    statuses: list = field(default_factory=list)  # every status seen, for the 5xx tally
    info: dict = field(default_factory=dict)  # measured, not judged
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {
            "case": self.case,
            "ok": self.ok,
            "detail": self.detail,
            "statuses": self.statuses,
            "info": self.info,
            "seconds": round(self.seconds, 2),
        }


# -- judging ----------------------------------------------------------------------


def rejected(ex: Exchange, allow_505: bool = False) -> tuple[bool, str]:
    """A bad request: a 4xx, or a close without an answer; never a 2xx or a 5xx."""
    bad = [s for s in ex.statuses if not (400 <= s < 500 or (allow_505 and s == 505))]
    if ex.error.startswith("connect"):
        return False, ex.describe()
    if bad:
        return False, f"expected a 4xx or a close, got {ex.describe()}"
    if not ex.responses and not ex.closed:
        return False, f"expected a 4xx or a close, got {ex.describe()}"
    return True, ex.describe()


def tolerated(
    ex: Exchange, good: Callable[[Response], bool], allow_505: bool = False
) -> tuple[bool, str]:
    """Odd but valid: the right 200, or a 4xx, or a close; never a 5xx or a hang."""
    if ex.error.startswith("connect"):
        return False, ex.describe()
    for response in ex.responses:
        if response.status >= 500 and not (allow_505 and response.status == 505):
            return False, f"5xx: {ex.describe()}"
        if 200 <= response.status < 300 and not good(response):
            return False, f"wrong 2xx body ({len(response.body)} bytes): {ex.describe()}"
    if not ex.responses and not ex.closed:
        return False, f"no answer and no close: {ex.describe()}"
    return True, ex.describe()


def is_kb(n: int) -> Callable[[Response], bool]:
    return lambda r: r.status == 200 and r.body == b"X" * (n * 1000)


def is_hello(r: Response) -> bool:
    return r.status == 200 and r.body.startswith(HELLO_PREFIX)


def is_sunday(r: Response) -> bool:
    return r.status == 200 and r.body == SUNDAY_ANSWER


def served(port: int) -> tuple[bool, str, float]:
    """One fresh GET /?n=1: (answered right, what happened, seconds it took)."""
    started = time.monotonic()
    ex = exchange(port, request("/?n=1"), expect=1)
    took = time.monotonic() - started
    ok = bool(ex.responses) and is_kb(1)(ex.responses[0])
    return ok, ex.describe(), took


def _many(case: str, port: int, variants: list[tuple[str, bytes, Callable]]) -> CaseResult:
    """Run several payloads; the case passes when every one does."""
    failed, statuses, details = [], [], []
    for label, payload, judge in variants:
        ex = exchange(port, payload, expect=1)
        statuses += ex.statuses
        ok, detail = judge(ex)
        details.append(f"{label}: {detail}")
        if not ok:
            failed.append(f"{label}: {detail}")
    return CaseResult(
        case, not failed, "; ".join(failed) if failed else "; ".join(details), statuses
    )


# -- the cases --------------------------------------------------------------------


def invalid_request_line(port: int) -> CaseResult:
    return _many(
        "invalid-request-line",
        port,
        [
            ("garbage", b"GARBAGE\r\n\r\n", rejected),
            ("no target", b"GET\r\nHost: 127.0.0.1\r\n\r\n", rejected),
            ("four words", request("/ extra"), rejected),
            ("space in method", b"G ET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", rejected),
            ("no CRLF before headers", b"GET / HTTP/1.1 Host: 127.0.0.1\r\n\r\n", rejected),
        ],
    )


def unknown_http_version(port: int) -> CaseResult:
    """A well-formed but unknown version may be served (RFC 9110 section 2.5: answer with
    the highest version the server speaks); malformed ones must be refused. 505 (Version
    Not Supported) is a fair refusal of any of them."""
    newer = lambda ex: tolerated(ex, is_hello, allow_505=True)  # noqa: E731
    refused = lambda ex: rejected(ex, allow_505=True)  # noqa: E731
    return _many(
        "unknown-http-version",
        port,
        [
            ("HTTP/9.9", request("/", version="HTTP/9.9"), newer),
            ("HTTP/1.x", request("/", version="HTTP/1.x"), refused),
            ("HTTP/10.1", request("/", version="HTTP/10.1"), refused),
            ("HTXP/1.1", request("/", version="HTXP/1.1"), refused),
        ],
    )


def header_64k(port: int) -> CaseResult:
    # One 64 KB header: valid HTTP beyond most servers' limits (a 431 or 400 is
    # as right as serving it).
    big = "X-Padding: " + "a" * 65536 + "\r\n"
    return _many("header-64k", port, [("64 KB header", request("/?n=1", big), _kb1)])


def _kb1(ex: Exchange) -> tuple[bool, str]:
    return tolerated(ex, is_kb(1))


def url_1mb(port: int) -> CaseResult:
    target = "/?n=1&pad=" + "a" * (1 << 20)
    return _many("url-1mb", port, [("1 MB URL", request(target), _kb1)])


def bad_percent_encoding(port: int) -> CaseResult:
    variants = []
    for raw in ("%ZZ", "%", "%4", "1%", "%C0%AF", "%FF", "%E2%82"):
        variants.append((f"n={raw}", request(f"/?n={raw}"), _exactly_400))
    for raw in (f"{SUNDAY[:-3]}%3G00", "%", f"{SUNDAY}%", "%2", f"{SUNDAY[:-1]}%FF"):
        variants.append((f"at={raw}", request(f"/workday?at={raw}"), _exactly_400))
    variants.append(("path /%ZZ", request("/%ZZ"), rejected))
    return _many("invalid-percent-encoding", port, variants)


def _exactly_400(ex: Exchange) -> tuple[bool, str]:
    """The contract's answer to a bad n or at: a 400 (the checker judges its body)."""
    if ex.statuses[:1] != [400]:
        return False, f"expected 400, got {ex.describe()}"
    return True, ex.describe()


def nul_bytes(port: int) -> CaseResult:
    # RFC 9110 section 5.5: a NUL in a field value is rejected or replaced by
    # a space, so serving that request is as right as rejecting it.
    return _many(
        "nul-bytes",
        port,
        [
            ("n=%00", request("/?n=%00"), _exactly_400),
            ("n=1%000", request("/?n=1%000"), _exactly_400),
            ("at=%00", request("/workday?at=%00"), _exactly_400),
            ("raw NUL in target", b"GET /?n=\x00 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", rejected),
            ("raw NUL in method", b"G\x00T / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", rejected),
            ("raw NUL in header", request("/?n=1", "X-Nul: a\x00b\r\n"), _kb1),
        ],
    )


def body_on_get(port: int) -> CaseResult:
    """A GET with a 5-byte body, then (after its answer) a second GET on the same connection:
    the body must be skipped, never read as the start of the next request."""
    first = exchange_sequence(
        port, [request("/?n=1", "Content-Length: 5\r\n") + b"hello", request("/?n=2")]
    )
    ok, detail = tolerated(first, lambda r: r is first.responses[0] and is_kb(1)(r) or is_kb(2)(r))
    if ok and len(first.responses) == 2 and not is_kb(2)(first.responses[1]):
        ok, detail = False, f"second request misread after the body: {first.describe()}"
    if ok and len(first.responses) < 2 and not first.closed:
        ok, detail = False, f"second request unanswered: {first.describe()}"
    return CaseResult("body-on-get", ok, detail, first.statuses)


def malformed_chunk(port: int) -> CaseResult:
    """Transfer-Encoding: chunked with a broken chunk: refused, and never read as a request.

    A chunk size that is well-formed but absurd (20 hex digits) is legal
    HTTP: a server may refuse it or wait for the data; it must not crash or
    answer the request hidden behind it.
    """
    te = "Transfer-Encoding: chunked\r\n"
    variants = [
        ("size not hex", request("/?n=1", te) + b"ZZZ\r\nhello\r\n0\r\n\r\n", True),
        ("data longer than size", request("/?n=1", te) + b"2\r\nhello\r\n0\r\n\r\n", True),
        (
            "POST, size not hex",
            request("/", te, method="POST") + b"ZZZ\r\nhello\r\n0\r\n\r\n",
            True,
        ),
        ("huge size", request("/?n=1", te) + b"FFFFFFFFFFFFFFFFFFFF\r\nhello\r\n0\r\n\r\n", False),
    ]
    failed, details, statuses = [], [], []
    for label, payload, malformed in variants:
        ex = exchange(port, payload + request("/?n=2"), expect=2)
        statuses += ex.statuses
        ok, detail = tolerated(ex, is_kb(1))  # a 2xx for the hidden n=2 is wrong
        if not malformed and not ex.responses and ex.timed_out and not ex.error:
            ok, detail = True, "waits for the announced data"
        # Broken framing must be refused at some point: a 4xx or a close.
        refused = ex.closed or any(400 <= s < 500 for s in ex.statuses)
        if ok and malformed and not refused:
            ok, detail = False, f"malformed chunk accepted: {ex.describe()}"
        details.append(f"{label}: {detail}")
        if not ok:
            failed.append(f"{label}: {detail}")
    return CaseResult("malformed-chunk", not failed, "; ".join(failed or details), statuses)


PIPELINED = 100


def pipelined(port: int) -> CaseResult:
    """100 requests in one write: every answer right and in order.

    A server may stop early only the way HTTP allows it: the last answer says
    `Connection: close` and then the connection closes (RFC 9112 section 9.6).
    """
    kinds = [("/", is_hello), ("/?n=1", is_kb(1)), (f"/workday?at={SUNDAY}", is_sunday)]
    plan = [kinds[i % len(kinds)] for i in range(PIPELINED)]
    payload = b"".join(request(target) for target, _ in plan)
    ex = exchange(port, payload, expect=PIPELINED)
    wrong = [
        f"#{i + 1} {r.status}"
        for i, (r, (_, good)) in enumerate(zip(ex.responses, plan))
        if not good(r)
    ]
    got = len(ex.responses)
    if wrong:
        ok, detail = False, f"wrong answers: {', '.join(wrong[:5])}"
    elif ex.error:
        ok, detail = False, f"after {got}: {ex.error}"
    elif got == PIPELINED:
        ok, detail = True, f"{got} of {PIPELINED} answered in order"
    elif got and ex.responses[-1].closes and ex.closed:
        ok, detail = True, f"{got} of {PIPELINED} answered, then Connection: close as HTTP allows"
    else:
        ok, detail = (
            False,
            f"{got} of {PIPELINED} answered, then {ex.describe().split(', ', 1)[-1]}",
        )
    return CaseResult("pipelined-100", ok, detail, ex.statuses, {"answered": got})


def one_byte_at_a_time(port: int) -> CaseResult:
    data = request(f"/workday?at={SUNDAY}")
    ex = exchange(port, [data[i : i + 1] for i in range(len(data))], expect=1, pause_s=0.002)
    ok = bool(ex.responses) and is_sunday(ex.responses[0])
    return CaseResult("one-byte-at-a-time", ok, ex.describe(), ex.statuses)


SILENT = 16
SILENT_HOLD_S = 3.0


def connect_send_nothing(port: int, hold_s: float = SILENT_HOLD_S) -> CaseResult:
    """16 clients connect and say nothing; a real client must still be served meanwhile."""
    silent = []
    try:
        for _ in range(SILENT):
            with contextlib.suppress(OSError):
                silent.append(connect(port))
        time.sleep(0.5)
        ok, detail, took = served(port)
        time.sleep(max(0.0, hold_s - took))
        closed = sum(closed_by_peer(s) for s in silent)
    finally:
        for sock in silent:
            sock.close()
    info = {"silent": len(silent), "closed_by_server": closed, "fresh_request_s": round(took, 3)}
    detail = (
        f"fresh request while {len(silent)} silent connections are open: {detail} "
        f"in {took:.2f} s; server closed {closed} of them within {hold_s:g} s"
    )
    return CaseResult("connect-send-nothing", ok, detail, [], info)


def idle_connections(
    port: int, count: int, hold_s: float = 2.0, rss: Callable[[], int] | None = None
) -> CaseResult:
    """`count` connections opened and held idle; a fresh request must still be served.

    `rss`, when given, reads the server's memory while the connections are held.
    """
    case = "idle-connections"
    limit = raise_file_limit(count + 256)
    target = min(count, max(0, limit - 256))
    selector = selectors.DefaultSelector()
    socks: list[socket.socket] = []
    connected = failed = 0
    started = time.monotonic()
    try:
        for _ in range(target):
            sock = socket.socket()
            sock.setblocking(False)
            err = sock.connect_ex((HOST, port))
            if err not in (0, errno.EINPROGRESS):
                sock.close()
                failed += 1
                continue
            socks.append(sock)
            selector.register(sock, selectors.EVENT_WRITE)
        pending = len(socks)
        deadline = time.monotonic() + 10.0
        while pending and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.5):
                selector.unregister(key.fileobj)
                pending -= 1
                if key.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    connected += 1
                else:
                    failed += 1
        open_s = time.monotonic() - started
        time.sleep(hold_s / 2)
        ok, detail, took = served(port)
        held_rss = rss() if rss else None
        time.sleep(hold_s / 2)
        closed = sum(closed_by_peer(s) for s in socks)
    finally:
        selector.close()
        for sock in socks:
            sock.close()
    info = {
        "wanted": count,
        "file_limit": limit,
        "connected": connected,
        "failed_or_pending": target - connected,
        "closed_by_server": closed,
        "open_s": round(open_s, 2),
        "fresh_request_s": round(took, 3),
        "rss_held": held_rss,
    }
    detail = (
        f"{connected} of {count} connected in {open_s:.1f} s, server closed {closed}; "
        f"fresh request: {detail} in {took:.2f} s"
    )
    if target < count:
        ok, detail = False, f"file limit {limit} allows only {target}: {detail}"
    return CaseResult(case, ok, detail, [], info)


RESETS = 20


def reset_mid_response(port: int) -> CaseResult:
    """Ask for 100 KB (three times, pipelined), read a little, then reset the connection."""
    done = 0
    for i in range(RESETS):
        try:
            sock = socket.socket()
            # A small receive window: the server is still writing when the RST comes.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(raw_http.TIMEOUT_S)
            sock.connect((HOST, port))
            sock.sendall(request("/?n=100") * (1 + i % 3))
            sock.recv(1024 * (1 + i % 4))
            # SO_LINGER on with a zero timeout: close() sends RST, not FIN.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
            done += 1
        except OSError:
            with contextlib.suppress(OSError):
                sock.close()
    time.sleep(0.3)
    ok, detail, _ = served(port)
    return CaseResult(
        "reset-mid-response",
        ok and done == RESETS,
        f"{done} of {RESETS} connections reset mid-body; then a fresh request: {detail}",
        [],
        {"resets": done},
    )


# Case id -> function(port); idle-connections takes the count as well.
CASES: dict[str, Callable] = {
    "invalid-request-line": invalid_request_line,
    "unknown-http-version": unknown_http_version,
    "header-64k": header_64k,
    "url-1mb": url_1mb,
    "invalid-percent-encoding": bad_percent_encoding,
    "nul-bytes": nul_bytes,
    "body-on-get": body_on_get,
    "malformed-chunk": malformed_chunk,
    "pipelined-100": pipelined,
    "one-byte-at-a-time": one_byte_at_a_time,
    "connect-send-nothing": connect_send_nothing,
    "idle-connections": idle_connections,
    "reset-mid-response": reset_mid_response,
}
