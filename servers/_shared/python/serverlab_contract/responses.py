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

from .params import BadRequest, at_from_values, n_from_values, query_values
from .workday import TradingCalendar

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


class Hello:
    """The hello body for one display name, as bytes (prefix encoded once)."""

    __slots__ = ("display_name", "_prefix")

    def __init__(self, display_name: str):
        self.display_name = display_name
        self._prefix = f"Hello World, from {display_name}! "

    def body(self, epoch_ms: Optional[int] = None) -> bytes:
        if epoch_ms is None:
            # Taken at handling time, never cached.
            epoch_ms = time.time_ns() // 1_000_000
        return (self._prefix + format_hello_time(epoch_ms)).encode("ascii")


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
        return f"{self.status} {REASONS[self.status]}"


def _response(status: int, body: bytes, head: bool, *extra: Tuple[str, str]) -> Response:
    headers = (("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(body)))) + extra
    # HEAD: same status and headers (Content-Length of the GET body), no body.
    return Response(status, headers, b"" if head else body)


class Router:
    """Routes ``/`` and ``/workday`` for servers that have no router of their own.

    >>> router = Router("Python uvloop + httptools", load_calendar(path))
    >>> router.respond("GET", "/workday", "at=2019-05-05T10:00").body
    b'2019-05-06'

    ``path`` is the path without the query; ``raw_query`` the query string as
    sent (still percent-encoded, without ``?``). Per-request work reads no
    files and allocates no large buffers: n-KB bodies are shared bytes.
    """

    __slots__ = ("hello", "calendar", "_fixed")

    def __init__(self, display_name: str, calendar: TradingCalendar):
        self.hello = Hello(display_name)
        self.calendar = calendar
        self._fixed = {
            (status, head): _response(status, body, head, *extra)
            for status, body, extra in (
                (404, NOT_FOUND_BODY, ()),
                (405, METHOD_NOT_ALLOWED_BODY, (("Allow", ALLOW),)),
            )
            for head in (False, True)
        }

    def respond(self, method: str, path: str, raw_query: str) -> Response:
        if path == "/":
            handler = self._root
        elif path == "/workday":
            handler = self._workday
        else:
            return self._fixed[404, method == "HEAD"]
        if method not in ALLOWED_METHODS:
            return self._fixed[405, False]
        head = method == "HEAD"
        try:
            body = handler(raw_query)
        except BadRequest as exc:
            return _response(400, exc.body, head)
        return _response(200, body, head)

    def not_found(self, head: bool = False) -> Response:
        return self._fixed[404, head]

    def method_not_allowed(self) -> Response:
        return self._fixed[405, False]

    def _root(self, raw_query: str) -> bytes:
        n = n_from_values(query_values(raw_query).get("n")) if raw_query else None
        return self.hello.body() if n is None else KB_BODIES[n]

    def _workday(self, raw_query: str) -> bytes:
        at = at_from_values(query_values(raw_query).get("at")) if raw_query else None
        if at is None:
            return self.calendar.trading_day_now().encode("ascii")
        return self.calendar.trading_day(at).encode("ascii")
