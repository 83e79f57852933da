"""Response bodies, the Date header value and a framework-neutral router.

Frameworks (Sanic, ...) route with their own tools and call the body and
parsing functions; stacks without a framework (raw asyncio, WSGI) call
:meth:`Router.respond`, which returns status, headers and body and leaves
the wire format (and the Date header, when the server adds its own) to the
server.
"""

from __future__ import annotations

import time
from typing import NamedTuple, Optional, Tuple

from .params import (
    AT_ERROR_BODY,
    N_ERROR_BODY,
    BadRequest,
    InvalidAt,
    InvalidN,
    at_instant,
    query_value,
    valid_n,
)
from .workday import TradingCalendar

__all__ = [
    "ALLOW",
    "ALLOWED_METHODS",
    "BAD_REQUEST_BODY",
    "CONTENT_TYPE",
    "KB_BODIES",
    "METHOD_NOT_ALLOWED_BODY",
    "NOT_FOUND_BODY",
    "REASONS",
    "DateCache",
    "Hello",
    "Response",
    "Router",
    "format_hello_time",
    "hello_text",
    "http_date",
    "kb_body",
]

CONTENT_TYPE = "text/plain; charset=utf-8"
ALLOW = "GET, HEAD"
ALLOWED_METHODS = frozenset(("GET", "HEAD"))
NOT_FOUND_BODY = b"Not Found"
METHOD_NOT_ALLOWED_BODY = b"Method Not Allowed"
BAD_REQUEST_BODY = b"Bad Request"
REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
}
# "200 OK", the form WSGI's start_response wants, formatted once per status.
STATUS_LINES = {status: f"{status} {reason}" for status, reason in REASONS.items()}

MAX_KB = 100
# The n-KB bodies, built once at import (5 MB per process); index 0 is unused.
KB_BODIES: Tuple[bytes, ...] = tuple(b"X" * (n * 1000) for n in range(MAX_KB + 1))


def kb_body(n: int) -> bytes:
    """Exactly n x 1000 ASCII ``X`` (n already validated to be 1..100)."""
    return KB_BODIES[n]


# --- hello -----------------------------------------------------------------


def format_hello_time(epoch_ms: int) -> str:
    """UTC ``YYYY-MM-DD HH:MM:SS.mmm`` with always three millisecond digits."""
    seconds, millis = divmod(epoch_ms, 1000)
    t = time.gmtime(seconds)
    return "%04d-%02d-%02d %02d:%02d:%02d.%03d" % (
        t.tm_year,
        t.tm_mon,
        t.tm_mday,
        t.tm_hour,
        t.tm_min,
        t.tm_sec,
        millis,
    )


def hello_text(display_name: str, epoch_ms: Optional[int] = None) -> str:
    """``Hello World, from <display_name>! <UTC time>``, time taken now by default."""
    if epoch_ms is None:
        epoch_ms = time.time_ns() // 1_000_000
    return f"Hello World, from {display_name}! {format_hello_time(epoch_ms)}"


# "000" .. "999": the millisecond part of the hello time, formatted once.
_MILLIS: Tuple[bytes, ...] = tuple(b"%03d" % millis for millis in range(1000))


class Hello:
    """The hello body for one display name, as bytes (prefix encoded once)."""

    __slots__ = ("display_name", "_prefix", "_this_second")

    def __init__(self, display_name: str):
        self.display_name = display_name
        self._prefix = f"Hello World, from {display_name}! "
        # (second, body up to the milliseconds' digits) for the last second seen.
        self._this_second: Tuple[int, bytes] = (-1, b"")

    @property
    def length(self) -> int:
        """The body's length, the same for every hello (years 1000..9999)."""
        return len(self._prefix.encode("ascii")) + len("YYYY-MM-DD HH:MM:SS.mmm")

    def body(self, epoch_ms: Optional[int] = None) -> bytes:
        if epoch_ms is None:
            # Taken at handling time, never cached.
            epoch_ms = time.time_ns() // 1_000_000
        second, millis = divmod(epoch_ms, 1000)
        # Fast path: everything up to the seconds changes once a second, so it
        # is formatted once a second (like a Date header) and only the three
        # millisecond digits are appended per call; gmtime() and a 7-field
        # %-format per request are most of the general path's cost
        # (18,259 -> 4,036 instructions on CPython 3.13).
        this_second = self._this_second  # one read: threads may replace it meanwhile
        if this_second[0] != second:
            this_second = self._format_second(second)
        return this_second[1] + _MILLIS[millis]

    def _format_second(self, second: int) -> Tuple[int, bytes]:
        up_to_seconds = format_hello_time(second * 1000)[: -len("000")]
        self._this_second = (second, (self._prefix + up_to_seconds).encode("ascii"))
        return self._this_second


# --- Date header -------------------------------------------------------------

_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def http_date(epoch_seconds: Optional[float] = None) -> str:
    """IMF-fixdate (RFC 9110), e.g. ``Sun, 06 Nov 1994 08:49:37 GMT``."""
    t = time.gmtime(epoch_seconds)
    return "%s, %02d %s %04d %02d:%02d:%02d GMT" % (
        _WEEKDAYS[t.tm_wday],
        t.tm_mday,
        _MONTHS[t.tm_mon],
        t.tm_year,
        t.tm_hour,
        t.tm_min,
        t.tm_sec,
    )


class DateCache:
    """The Date header value, formatted at most once per second.

    Date has one-second resolution, so servers format it once a second
    instead of per response (nginx, h2o and uvicorn do the same). ``value()``
    checks the clock on every call, so it is never stale; event-loop servers
    may instead call ``refresh()`` from a once-a-second timer and read
    ``current``.
    """

    __slots__ = ("_second", "current")

    def __init__(self) -> None:
        self._second = -1
        self.current = ""
        self.refresh()

    def refresh(self) -> str:
        now = time.time()
        second = int(now)
        if second != self._second:
            self._second = second
            self.current = http_date(now)
        return self.current

    value = refresh


# --- framework-neutral router ------------------------------------------------


class Response(NamedTuple):
    """A complete response except the Date header (servers differ in who adds it)."""

    status: int
    headers: Tuple[Tuple[str, str], ...]
    body: bytes

    @property
    def reason(self) -> str:
        return REASONS[self.status]

    @property
    def status_line(self) -> str:
        """``"200 OK"``, the form WSGI's start_response wants."""
        return STATUS_LINES[self.status]


def plain_headers(length: int, *extra: Tuple[str, str]) -> Tuple[Tuple[str, str], ...]:
    """Content-Type and Content-Length of a plain-text body of ``length`` bytes."""
    return (("Content-Type", CONTENT_TYPE), ("Content-Length", str(length))) + extra


def _response(status: int, body: bytes, head: bool, *extra: Tuple[str, str]) -> Response:
    # HEAD: same status and headers (Content-Length of the GET body), no body.
    return Response(status, plain_headers(len(body), *extra), b"" if head else body)


# Response(status, headers, body) without the Python-level __new__ of a
# NamedTuple (one Python call fewer) for the hello responses, built per request.
_new_response = tuple.__new__

# The length of every workday answer, YYYY-MM-DD.
_DAY_LENGTH = len("2019-05-06")


class Router:
    """Routes ``/`` and ``/workday`` for servers that have no router of their own.

    >>> router = Router("Python uvloop + httptools", load_calendar(path))
    >>> router.respond("GET", "/workday", "at=2019-05-05T10:00").body
    b'2019-05-06'

    ``path`` is the path without the query; ``raw_query`` the query string as
    sent (still percent-encoded, without ``?``). Per-request work reads no
    files and allocates no large buffers: n-KB bodies are shared bytes.

    Every response whose bytes never change (n KB, the 400s, 404, 405, the
    workday answers of the calendar's table) is built once here, for GET and
    for HEAD; hello reuses headers built once and only builds its body per
    request (its length is fixed; a body of another length gets its own
    headers). Looking a response up instead of building its headers and
    Response: 7,209 -> 694 instructions on CPython 3.13.
    """

    __slots__ = (
        "hello",
        "calendar",
        "_not_found",
        "_method_not_allowed",
        "_bad_requests",
        "_kb",
        "_headers_by_length",
        "_day_responses",
    )

    def __init__(self, display_name: str, calendar: TradingCalendar):
        self.hello = Hello(display_name)
        self.calendar = calendar
        # Indexed by head (False: GET, True: HEAD).
        self._not_found = _both(404, NOT_FOUND_BODY)
        self._method_not_allowed = _response(405, METHOD_NOT_ALLOWED_BODY, False, ("Allow", ALLOW))
        self._bad_requests = {
            body: _both(400, body) for body in (N_ERROR_BODY, AT_ERROR_BODY, BAD_REQUEST_BODY)
        }
        # The n-KB responses, index n (0 unused), as the bodies of KB_BODIES.
        self._kb = tuple(
            tuple(_response(200, body, head) for body in KB_BODIES) for head in (False, True)
        )
        # The workday responses of every answer in the calendar's table (about
        # 4,900 days for 20 years), built here like the n-KB ones: a request
        # still parses ``at`` and indexes the table, then picks its response.
        day_headers = plain_headers(_DAY_LENGTH)
        self._day_responses = {
            day: (Response(200, day_headers, day.encode("ascii")), Response(200, day_headers, b""))
            for day in calendar.table_days()
        }
        # The headers of the hello and workday bodies, whose lengths are fixed.
        self._headers_by_length = {self.hello.length: plain_headers(self.hello.length)}
        self._headers_by_length[_DAY_LENGTH] = day_headers

    def respond(self, method: str, path: str, raw_query: str) -> Response:
        if path == "/":
            handler = self._root
        elif path == "/workday":
            handler = self._workday
        else:
            return self._not_found[method == "HEAD"]
        if method == "GET":
            head = False
        elif method == "HEAD":
            head = True
        else:
            return self._method_not_allowed
        try:
            return handler(raw_query, head)
        except BadRequest as exc:
            prebuilt = self._bad_requests.get(exc.body)
            return _response(400, exc.body, head) if prebuilt is None else prebuilt[head]

    def not_found(self, head: bool = False) -> Response:
        return self._not_found[head]

    def method_not_allowed(self) -> Response:
        return self._method_not_allowed

    def _root(self, raw_query: str, head: bool) -> Response:
        value = query_value(raw_query, "n", InvalidN) if raw_query else None
        if not value:  # absent or empty: hello
            return self._ok(self.hello.body(), head)
        n = valid_n(value)
        if n is None:
            return self._bad_requests[N_ERROR_BODY][head]
        return self._kb[head][n]

    def _workday(self, raw_query: str, head: bool) -> Response:
        value = query_value(raw_query, "at", InvalidAt) if raw_query else None
        if value is None:  # absent: now
            day = self.calendar.trading_day_now()
        else:
            instant = at_instant(value)
            if instant is None:
                return self._bad_requests[AT_ERROR_BODY][head]
            day = self.calendar.day_of(*instant)
        prebuilt = self._day_responses.get(day)
        if prebuilt is None:  # a day outside the calendar's table
            return self._ok(day.encode("ascii"), head)
        return prebuilt[head]

    def _ok(self, body: bytes, head: bool) -> Response:
        """A 200 for a body built per request, with headers built once for its length."""
        headers = self._headers_by_length.get(len(body)) or plain_headers(len(body))
        # HEAD: same status and headers (Content-Length of the GET body), no body.
        return _new_response(Response, (200, headers, b"" if head else body))


def _both(status: int, body: bytes) -> Tuple[Response, Response]:
    """The GET and the HEAD response of a fixed body."""
    return _response(status, body, False), _response(status, body, True)
