"""Checks of the HTTP layer: headers, routing, HEAD and connection handling."""

from __future__ import annotations

import datetime as dt
import threading
import time

from . import expect
from .context import (
    NETWORK_ERRORS,
    Context,
    Failure,
    describe_error,
    failed,
    guarded,
    passed,
    require,
    verdict,
)
from .rawhttp import ConnectionClosed, Response, build_request
from .vectors import DATE_SHAPE

# Date has 1 s resolution and many servers refresh a cached value once a
# second, so a correct Date may lag the true time by up to 2 s; on top of
# that the contract's own 2 s tolerance. A Date from the future gets 2 s.
DATE_PAST_SLACK = dt.timedelta(seconds=3)
DATE_FUTURE_SLACK = dt.timedelta(seconds=2)
# A fresh Date changes within 2 s (1 s resolution, a cache refreshed once a
# second): asked again every DATE_POLL, it must change within DATE_FRESH_GAP.
DATE_FRESH_GAP = 2.1
DATE_POLL = 0.1
CLOSE_GRACE = 0.3  # how long the header checks wait for a promised close
STILL_OPEN_WAIT = 0.05  # how long an open connection must stay quiet
CONCURRENT_REQUESTS = 50
MAX_LISTED = 3  # problems spelled out per failing check line

# Responses whose headers are judged: every 200 and 400 kind.
HEADER_SAMPLES = (
    ("hello", "/"),
    ("kb1", "/?n=1"),
    ("workday", "/workday"),
    ("workday-at", "/workday?at=2019-05-05T10:00"),
    ("bad-n", "/?n=0"),
    ("bad-at", "/workday?at=2019-02-30T10:00"),
)
HEADER_IDS = (
    "header-content-type",
    "header-content-length",
    "header-no-chunked",
    "header-no-cookie",
    "header-date",
)


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def summarize(problems: list) -> str:
    shown = "; ".join(problems[:MAX_LISTED])
    if len(problems) > MAX_LISTED:
        shown += f"; and {len(problems) - MAX_LISTED} more"
    return shown


# -- headers ------------------------------------------------------------------


def date_problems(response: Response, before: dt.datetime, after: dt.datetime) -> list:
    values = response.header_values("Date")
    if len(values) != 1:
        return [f"expected one Date header, got {len(values)}"]
    moment = expect.parse_imf_fixdate(values[0])
    if moment is None:
        return [
            f"expected an IMF-fixdate such as 'Sun, 06 Nov 1994 08:49:37 GMT', got {values[0]!r}"
        ]
    if moment < before - DATE_PAST_SLACK or moment > after + DATE_FUTURE_SLACK:
        offset = (moment - before).total_seconds()
        return [
            f"expected a current Date (checker's clock {expect.format_imf_fixdate(before)}), "
            f"got {values[0]!r} ({offset:+.0f} s)"
        ]
    return []


def length_problems(response: Response, sent: int) -> list:
    """Exactly one Content-Length, equal to the body bytes the server sent."""
    values = response.header_values("Content-Length")
    if len(values) != 1:
        return [f"expected one Content-Length header, got {len(values)}"]
    if not (values[0].isascii() and values[0].isdigit()):
        return [f"expected a decimal Content-Length, got {values[0]!r}"]
    if int(values[0]) != sent:
        return [f"expected Content-Length to equal the {sent} body bytes sent, got {values[0]}"]
    return []


def header_problems(response: Response, sent: int, before: dt.datetime, after: dt.datetime) -> dict:
    """Problems per header check id for one 200 or 400 response."""
    problems = {check_id: [] for check_id in HEADER_IDS}
    problems["header-content-type"] = expect.content_type_problems(response)
    problems["header-content-length"] = length_problems(response, sent)
    for value in response.header_values("Transfer-Encoding"):
        problems["header-no-chunked"].append(f"expected no Transfer-Encoding, got {value!r}")
    for value in response.header_values("Set-Cookie"):
        problems["header-no-cookie"].append(f"expected no Set-Cookie, got {value!r}")
    problems["header-date"] = date_problems(response, before, after)
    return problems


def _sample(ctx: Context, target: str, close: bool) -> tuple:
    """(response, body bytes the server sent, before, after) for one request.

    Keep-alive: the body is framed by the response itself; bytes left over
    after it mean Content-Length was too small. Connection: close: every byte
    up to the close is body, so a too large or too small Content-Length shows.
    """
    before = utc_now()
    with ctx.connect() as conn:
        if close:
            conn.send(build_request("GET", target, ctx.host_header, (("Connection", "close"),)))
            response, _closed = conn.read_response_until_close(CLOSE_GRACE)
            sent = len(response.body)
        else:
            response = conn.request("GET", target, ctx.host_header)
            sent = len(response.body) + len(conn.buffer)
    return response, sent, before, utc_now()


def check_headers(ctx: Context) -> list:
    """Content-Type, exact Content-Length, no chunking, no cookies, a current Date.

    Every 200 and 400 kind is requested twice: keep-alive and Connection: close.
    """
    collected = {check_id: [] for check_id in HEADER_IDS}
    count = 0
    for label, target in HEADER_SAMPLES:
        for close in (False, True):
            where = f"{label} ({'Connection: close' if close else 'keep-alive'})"
            try:
                response, sent, before, after = _sample(ctx, target, close)
            except NETWORK_ERRORS as exc:
                for check_id in HEADER_IDS:
                    collected[check_id].append(f"{where}: {describe_error(exc)}")
                continue
            count += 1
            for check_id, problems in header_problems(response, sent, before, after).items():
                collected[check_id].extend(f"{where}: {p}" for p in problems)
    details = {
        "header-content-type": f"{expect.CONTENT_TYPE!r} on {count} responses",
        "header-content-length": f"exact on {count} responses",
        "header-no-chunked": f"no Transfer-Encoding on {count} responses",
        "header-no-cookie": f"no Set-Cookie on {count} responses",
        "header-date": f"current IMF-fixdate on {count} responses",
    }
    return [
        verdict(i, [summarize(collected[i])] if collected[i] else [], details[i])
        for i in HEADER_IDS
    ]


def check_no_compression(ctx: Context) -> list:
    """Even when the client offers gzip and br, bodies are sent as they are."""
    offered = (("Accept-Encoding", "gzip, deflate, br"),)

    def run() -> str:
        problems = []
        for target, judge in (
            ("/?n=100", lambda body: _x_problems(body, 100)),
            ("/?n=10", lambda body: _x_problems(body, 10)),
            ("/", lambda body: expect.hello_body_problems(body, ctx.display_name)),
        ):
            response = ctx.fetch(target, headers=offered)
            for value in response.header_values("Content-Encoding"):
                problems.append(f"{target}: expected no Content-Encoding, got {value!r}")
            problems += [f"{target}: {p}" for p in judge(response.body)]
        if problems:
            raise Failure(summarize(problems))
        return "no Content-Encoding with Accept-Encoding: gzip, deflate, br"

    return [guarded("header-no-compression", run)]


def _x_problems(body: bytes, kb: int) -> list:
    if len(body) == kb * 1000 and not body.strip(b"X"):
        return []
    return [f"expected {kb * 1000} bytes of 'X', got {expect.show(body)}"]


def check_date_fresh(ctx: Context) -> list:
    """The Date value changes within 2.1 s of a first request (runs in the background)."""

    def run() -> str:
        first = ctx.fetch("/").header("Date")
        deadline = time.monotonic() + DATE_FRESH_GAP
        while True:
            time.sleep(min(DATE_POLL, max(0.0, deadline - time.monotonic())))
            second = ctx.fetch("/").header("Date")
            if first is None or second is None or second != first:
                break
            if time.monotonic() >= deadline:
                break
        if first is None or second is None:
            raise Failure("expected a Date header on both responses, got none")
        if first == second:
            raise Failure(
                f"expected the Date value to change within {DATE_FRESH_GAP:g} s, "
                f"got {first!r} throughout"
            )
        t1, t2 = expect.parse_imf_fixdate(first), expect.parse_imf_fixdate(second)
        if t1 is not None and t2 is not None and t2 < t1:
            raise Failure(f"expected the later Date to be later, got {first!r} then {second!r}")
        return f"{first!r} then {second!r}"

    return [guarded("header-date-fresh", run)]


# -- routing ------------------------------------------------------------------

NOT_FOUND_PATHS = ("/nope", "/workday/", "/index.html")
OTHER_METHODS = ("POST", "PUT", "DELETE", "PATCH")


def check_not_found(ctx: Context) -> list:
    """Unknown paths, including near misses, answer 404."""
    outcomes = []
    for path in NOT_FOUND_PATHS:
        outcomes.append(
            guarded(f"not-found[{path}]", lambda p=path: _expect_status(ctx, "GET", p, 404))
        )
    return outcomes


def _expect_status(ctx: Context, method: str, target: str, status: int) -> str:
    response = ctx.fetch(target, method=method)
    require(expect.status_problems(response, status))
    return str(status)


def allow_problems(response: Response) -> list:
    values = response.header_values("Allow")
    if not values:
        return ["expected an Allow header listing GET and HEAD, got none"]
    tokens = [t.strip().upper() for value in values for t in value.split(",")]
    if sorted(tokens) != ["GET", "HEAD"]:
        return [f"expected Allow to list exactly GET and HEAD, got {', '.join(values)!r}"]
    return []


def check_methods(ctx: Context) -> list:
    """Other methods on a known route: 405 with Allow: GET, HEAD."""
    outcomes = []
    for path in ("/", "/workday"):
        for method in OTHER_METHODS:

            def run(method: str = method, path: str = path) -> str:
                # An empty body, announced, so no server waits for one.
                response = ctx.fetch(path, method=method, headers=(("Content-Length", "0"),))
                require(expect.status_problems(response, 405) + allow_problems(response))
                return f"405, Allow: {', '.join(response.header_values('Allow'))}"

            outcomes.append(guarded(f"method-not-allowed[{method}:{path}]", run))
    return outcomes


# -- HEAD ---------------------------------------------------------------------

HEAD_TARGETS = ("/", "/?n=10", "/workday")
FOLLOW_UP = ("/workday?at=2019-05-05T10:00", "2019-05-06")


def check_head(ctx: Context) -> list:
    return [guarded(f"head[{target}]", lambda t=target: _head(ctx, t)) for target in HEAD_TARGETS]


def _head(ctx: Context, target: str) -> str:
    """HEAD: GET's status and headers, Content-Length of GET's body, no body.

    "No body" is proved on the wire: the same connection then carries a
    clean response to another request, or, when the server announced
    `Connection: close` (gunicorn's sync workers do on every response),
    nothing at all arrives before the close.
    """
    get = ctx.fetch(target)
    with ctx.connect() as conn:
        head = conn.request("HEAD", target, ctx.host_header)
        problems = _head_vs_get(head, get)
        if conn.buffer:
            problems.append(
                f"expected no body after HEAD, "
                f"got {len(conn.buffer)} bytes {expect.show(bytes(conn.buffer))}"
            )
            require(problems)
        if head.will_close:
            closed, extra = conn.drain_until_close(CLOSE_GRACE * 5)
            if extra:
                problems.append(f"expected no body after HEAD, got {len(extra)} bytes")
            elif not closed:
                problems.append("announced Connection: close after HEAD but kept the connection open")
            require(problems)
            return f"{head.status}, Content-Length {head.header('Content-Length')}, no body (closed)"
        try:
            follow = conn.request("GET", FOLLOW_UP[0], ctx.host_header)
        except ConnectionClosed as exc:
            problems.append(f"expected the connection to stay open after HEAD, got: {exc}")
        except NETWORK_ERRORS as exc:
            problems.append(
                "expected a clean response to the next request on the connection "
                f"(no body after HEAD), got: {describe_error(exc)}"
            )
        else:
            problems += [
                f"next request: {p}" for p in expect.text_problems(follow, 200, FOLLOW_UP[1])
            ]
    require(problems)
    return f"{head.status}, Content-Length {head.header('Content-Length')}, no body"


def _head_vs_get(head: Response, get: Response) -> list:
    problems = []
    if head.status != get.status:
        problems.append(f"expected status {get.status} as for GET, got {head.status}")
    if head.header_values("Content-Type") != get.header_values("Content-Type"):
        problems.append(
            f"expected Content-Type {get.header('Content-Type')!r} as for GET, "
            f"got {head.header('Content-Type')!r}"
        )
    length = head.header("Content-Length")
    if length != str(len(get.body)):
        problems.append(
            f"expected Content-Length {len(get.body)} (GET's body length), got {length!r}"
        )
    only_head = sorted(head.header_names() - get.header_names())
    only_get = sorted(get.header_names() - head.header_names())
    if only_head or only_get:
        problems.append(f"expected GET's header names, HEAD added {only_head} and lacks {only_get}")
    return problems


# -- connections ----------------------------------------------------------------


def successful_requests(ctx: Context) -> list:
    """(target, judge) pairs of 200 answers across both routes."""
    name = ctx.display_name
    return [
        ("/", lambda r: expect.hello_problems(r, name)),
        ("/?n=1", lambda r: expect.kb_problems(r, 1)),
        ("/workday?at=2019-05-05T10:00", lambda r: expect.text_problems(r, 200, "2019-05-06")),
        ("/?n=100", lambda r: expect.kb_problems(r, 100)),
        ("/workday?at=2019-10-01T10:00", lambda r: expect.text_problems(r, 200, "2019-10-08")),
        ("/?n=", lambda r: expect.hello_problems(r, name)),
        ("/workday", _workday_shape_problems),
        ("/?n=10", lambda r: expect.kb_problems(r, 10)),
        ("/workday?at=2026-02-17T00:00", lambda r: expect.text_problems(r, 200, "2026-02-24")),
        ("/?n=7", lambda r: expect.kb_problems(r, 7)),
    ]


def mixed_requests(ctx: Context) -> list:
    """Successful requests plus a 400 of each route and a 404."""
    return successful_requests(ctx)[:7] + [
        ("/?n=0", expect.n_error_problems),
        ("/workday?at=2019-02-30T10:00", expect.at_error_problems),
        ("/nope", expect.status_only_problems(404)),
    ]


def _workday_shape_problems(response: Response) -> list:
    """/workday for now: its exact value is workday-now's business."""
    problems = expect.status_problems(response, 200) + expect.content_type_problems(response)
    if response.status == 200 and not DATE_SHAPE.fullmatch(response.text):
        problems.append(f"expected a YYYY-MM-DD body, got {expect.show(response.body)}")
    return problems


def check_keep_alive(ctx: Context) -> list:
    """Ten requests, both routes, on one connection; it stays open after.

    Only 200s: HTTP lets a server close after an error, and Tomcat always
    does after a 400, so errors are judged on their own connections instead.
    """

    def run() -> str:
        requests = successful_requests(ctx)
        with ctx.connect() as conn:
            for number, (target, judge) in enumerate(requests, start=1):
                try:
                    response = conn.request("GET", target, ctx.host_header)
                except NETWORK_ERRORS as exc:
                    raise Failure(
                        f"request {number} of {len(requests)} (GET {target}): {describe_error(exc)}"
                    ) from None
                problems = judge(response)
                if response.will_close:
                    problems.append(
                        "expected a persistent connection, the server announced Connection: close"
                    )
                if problems:
                    raise Failure(
                        f"request {number} of {len(requests)} (GET {target}): {'; '.join(problems)}"
                    )
            closed, extra = conn.drain_until_close(STILL_OPEN_WAIT)
        if extra:
            raise Failure(
                "expected nothing after the last response, "
                f"got {len(extra)} bytes {expect.show(extra)}"
            )
        if closed:
            raise Failure(
                f"expected the connection to stay open after {len(requests)} requests, "
                "the server closed it"
            )
        return f"{len(requests)} requests on one connection, still open"

    return [guarded("keep-alive", run)]


def check_http10(ctx: Context) -> list:
    """HTTP/1.0 requests, with and without a Host header, are answered."""

    def with_host() -> str:
        with ctx.connect() as conn:
            response = conn.request("GET", FOLLOW_UP[0], ctx.host_header, version="HTTP/1.0")
        problems = expect.text_problems(response, 200, FOLLOW_UP[1])
        if not response.header_values("Content-Length"):
            problems.append("expected a Content-Length header")
        require(problems)
        return f"{response.version} {response.status} {response.text!r}"

    def without_host() -> str:
        with ctx.connect() as conn:
            response = conn.request("GET", "/", None, version="HTTP/1.0")
        require(expect.hello_problems(response, ctx.display_name))
        return f"{response.version} {response.status} {expect.show(response.body)}"

    return [guarded("http10", with_host), guarded("http10-no-host", without_host)]


def check_connection_close(ctx: Context) -> list:
    """Connection: close: a complete response, then the server closes."""

    def run() -> str:
        with ctx.connect() as conn:
            response = conn.request("GET", "/?n=1", ctx.host_header, (("Connection", "close"),))
            require(expect.kb_problems(response, 1))
            closed, extra = conn.drain_until_close(ctx.timeout)
        if extra:
            raise Failure(
                f"expected nothing after the response, got {len(extra)} bytes {expect.show(extra)}"
            )
        if not closed:
            raise Failure(
                f"expected the server to close the connection, it stayed open for {ctx.timeout:g} s"
            )
        return "complete response, then the server closed the connection"

    return [guarded("connection-close", run)]


def check_concurrent(ctx: Context) -> list:
    """50 connections send their request at the same moment; all answers right."""
    requests = mixed_requests(ctx)
    barrier = threading.Barrier(CONCURRENT_REQUESTS)
    problems = [None] * CONCURRENT_REQUESTS

    def one(index: int) -> None:
        target, judge = requests[index % len(requests)]
        conn = None
        try:
            conn = ctx.connect()
        except NETWORK_ERRORS as exc:
            problems[index] = f"#{index} connect: {describe_error(exc)}"
        try:
            barrier.wait(ctx.timeout)
        except threading.BrokenBarrierError:
            pass  # someone could not connect; send anyway
        if conn is None:
            return
        try:
            found = judge(conn.request("GET", target, ctx.host_header))
            if found:
                problems[index] = f"#{index} GET {target}: {'; '.join(found)}"
        except NETWORK_ERRORS as exc:
            problems[index] = f"#{index} GET {target}: {describe_error(exc)}"
        finally:
            conn.close()

    threads = [
        threading.Thread(target=one, args=(i,), daemon=True) for i in range(CONCURRENT_REQUESTS)
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 3 * ctx.timeout
    for index, thread in enumerate(threads):
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive() and problems[index] is None:
            problems[index] = f"#{index}: no answer in time"
    wrong = [p for p in problems if p]
    if wrong:
        return [
            failed(
                "concurrent",
                f"expected {CONCURRENT_REQUESTS}/{CONCURRENT_REQUESTS} right, "
                f"got {len(wrong)} wrong: {summarize(wrong)}",
            )
        ]
    return [
        passed(
            "concurrent", f"{CONCURRENT_REQUESTS}/{CONCURRENT_REQUESTS} concurrent requests correct"
        )
    ]
