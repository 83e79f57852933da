"""A small, correct implementation of contract v1, used to test the checker.

Standard library only (http.server, HTTP/1.1, keep-alive). It is not one of
the project's stacks and is never benchmarked. Named switches (BREAKS) each
break one rule on purpose, so the tests can prove that the checker notices;
VARIATIONS are allowed behaviours the checker must accept.

    with ReferenceServer("Reference", breaks={"chunked"}) as server:
        run_checks(server.url, "Reference")
"""

from __future__ import annotations

import datetime as dt
import email.utils
import gzip
import re
import signal
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

CALENDAR = Path(__file__).resolve().parent.parent / "calendar" / "xshg-non-trading-weekdays.txt"
CONTENT_TYPE = "text/plain; charset=utf-8"
N_ERROR = "n must be an integer between 1 and 100"
AT_ERROR = "at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]"
SHANGHAI = dt.timezone(dt.timedelta(hours=8))
CLOSE = dt.time(15, 0, 0)
N_SHAPE = re.compile(r"[0-9]{1,3}")
AT_SHAPE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?")

BREAKS = {
    "wrong-name": "the hello body names another server",
    "short-millis": "milliseconds printed with 2 digits",
    "slow-clock": "the hello time is 5 s behind",
    "cached-hello": "the first hello body is cached and repeated",
    "wrong-content-type": "Content-Type: text/plain without charset",
    "chunked": "200 and 400 bodies sent with Transfer-Encoding: chunked",
    "wrong-length": "Content-Length one less than the body",
    "no-date": "no Date header",
    "stale-date": "Date fixed at one hour before start-up",
    "frozen-date": "Date fixed at start-up",
    "set-cookie": "a Set-Cookie header on every response",
    "gzip": "gzip bodies when the client accepts gzip",
    "accept-n-zero": "n=0 accepted (empty body)",
    "lenient-n": "n parsed with int(): signs, spaces, underscores, any Unicode digit",
    "duplicate-n-ok": "a repeated n: the first value wins",
    "empty-at-now": "an empty at means now",
    "close-off-by-one": "15:00:00 already belongs to the next trading day",
    "weekends-only": "the calendar file is ignored",
    "frozen-workday": "/workday without at answers for 2019-05-05T10:00",
    "trailing-slash": "/workday/ is served like /workday",
    "no-allow": "405 without an Allow header",
    "head-body": "HEAD responses carry the body",
    "ignore-close": "Connection: close is ignored",
    "keepalive-off": "every response closes the connection",
    "reject-http10": "HTTP/1.0 requests get 505",
}

# Behaviour that real servers show and the contract allows: the checker
# must accept every one of these.
VARIATIONS = {
    "close-after-error": "close the connection after 400, 404 and 405 (Tomcat does after 400)",
    "no-server-header": "no Server header",
    "lagging-date": "a Date up to 2 s old, like a cache refreshed once a second",
    "allow-head-get": "Allow: HEAD, GET",
    "keep-alive-header": "Connection: keep-alive and Keep-Alive: timeout=5 on every response",
}


def load_calendar(path: Path) -> set:
    days = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            days.add(dt.date.fromisoformat(line))
    return days


class Contract:
    """The contract's logic, with the switched-on breaks applied."""

    def __init__(
        self, display_name: str, breaks: set, calendar: Path, variations: set = frozenset()
    ) -> None:
        unknown = (set(breaks) - set(BREAKS)) | (set(variations) - set(VARIATIONS))
        if unknown:
            raise ValueError(f"unknown break switches or variations: {sorted(unknown)}")
        self.display_name = display_name
        self.breaks = set(breaks)
        self.variations = set(variations)
        self.closed = set() if "weekends-only" in breaks else load_calendar(calendar)
        self.started = time.time()
        self.cached_hello = None
        # Bodies built once at start-up, as the contract allows.
        self.kb_bodies = {n: b"X" * (n * 1000) for n in range(1, 101)}

    def hello(self) -> bytes:
        if "cached-hello" in self.breaks and self.cached_hello is not None:
            return self.cached_hello
        now = dt.datetime.now(dt.timezone.utc)
        if "slow-clock" in self.breaks:
            now -= dt.timedelta(seconds=5)
        millis = f"{now.microsecond // 1000:03d}"
        if "short-millis" in self.breaks:
            millis = millis[:2]
        name = "Another Server" if "wrong-name" in self.breaks else self.display_name
        body = f"Hello World, from {name}! {now:%Y-%m-%d %H:%M:%S}.{millis}".encode()
        self.cached_hello = body
        return body

    def root(self, params: list) -> tuple:
        values = [value for key, value in params if key == "n"]
        if len(values) > 1 and "duplicate-n-ok" not in self.breaks:
            return 400, N_ERROR.encode()
        if not values or values[0] == "":
            return 200, self.hello()
        n = self.parse_n(values[0])
        if n is None:
            return 400, N_ERROR.encode()
        return 200, self.kb_bodies.get(n, b"")

    def parse_n(self, text: str) -> int | None:
        if "lenient-n" in self.breaks:
            try:
                n = int(text)
            except ValueError:
                return None
        elif N_SHAPE.fullmatch(text):
            n = int(text)
        else:
            return None
        low = 0 if "accept-n-zero" in self.breaks else 1
        return n if low <= n <= 100 else None

    def workday(self, params: list) -> tuple:
        values = [value for key, value in params if key == "at"]
        if len(values) > 1:
            return 400, AT_ERROR.encode()
        if not values or (values[0] == "" and "empty-at-now" in self.breaks):
            now = dt.datetime.now(SHANGHAI).replace(microsecond=0, tzinfo=None)
            if "frozen-workday" in self.breaks:
                now = dt.datetime(2019, 5, 5, 10, 0)
            return 200, self.trading_day(now).isoformat().encode()
        local = parse_at(values[0])
        if local is None:
            return 400, AT_ERROR.encode()
        return 200, self.trading_day(local).isoformat().encode()

    def is_trading_day(self, day: dt.date) -> bool:
        return day.weekday() < 5 and day not in self.closed

    def trading_day(self, local: dt.datetime) -> dt.date:
        day = local.date()
        if "close-off-by-one" in self.breaks:
            in_session = local.time() < CLOSE
        else:
            in_session = local.time() <= CLOSE
        if self.is_trading_day(day) and in_session:
            return day
        day += dt.timedelta(days=1)
        while not self.is_trading_day(day):
            day += dt.timedelta(days=1)
        return day

    def date_header(self) -> str | None:
        if "no-date" in self.breaks:
            return None
        if "stale-date" in self.breaks:
            return email.utils.formatdate(self.started - 3600, usegmt=True)
        if "frozen-date" in self.breaks:
            return email.utils.formatdate(self.started, usegmt=True)
        if "lagging-date" in self.variations:
            return email.utils.formatdate(time.time() - 1, usegmt=True)
        return email.utils.formatdate(usegmt=True)


def parse_at(text: str) -> dt.datetime | None:
    match = AT_SHAPE.fullmatch(text)
    if not match:
        return None
    year, month, day, hour, minute, second = (int(g) if g else 0 for g in match.groups())
    if not 1970 <= year <= 2199:
        return None
    try:
        return dt.datetime(year, month, day, hour, minute, second)
    except ValueError:
        return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "reference"
    sys_version = ""
    timeout = 30  # idle keep-alive connections end after this
    # Head and body are written separately; without TCP_NODELAY, Nagle and
    # delayed ACKs add 40 ms to every keep-alive response.
    disable_nagle_algorithm = True

    @property
    def contract(self) -> Contract:
        return self.server.contract

    def log_message(self, format: str, *args: object) -> None:
        pass  # no per-request logging

    def handle_one_request(self) -> None:
        self.answered = False
        super().handle_one_request()
        breaks = self.contract.breaks
        if self.answered and "ignore-close" in breaks and self.request_version == "HTTP/1.1":
            self.close_connection = False

    def route(self) -> str | None:
        path = urlsplit(self.path).path
        if path == "/workday/" and "trailing-slash" in self.contract.breaks:
            return "/workday"
        return path if path in ("/", "/workday") else None

    def do_GET(self) -> None:
        self.answer(send_body=True)

    def do_HEAD(self) -> None:
        self.answer(send_body="head-body" in self.contract.breaks)

    def not_allowed(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if self.route() is None:
            self.send(404, b"not found", "text/plain")
            return
        allow = "HEAD, GET" if "allow-head-get" in self.contract.variations else "GET, HEAD"
        extra = [] if "no-allow" in self.contract.breaks else [("Allow", allow)]
        self.send(405, b"method not allowed", "text/plain", extra)

    def __getattr__(self, name: str):
        # http.server dispatches METHOD to do_METHOD and answers 501 when it
        # is missing; every method but GET and HEAD is a 405 here (POST, PUT,
        # OPTIONS, TRACE, QUERY, ...).
        if name.startswith("do_"):
            return self.not_allowed
        raise AttributeError(name)

    def answer(self, send_body: bool) -> None:
        if self.request_version == "HTTP/1.0" and "reject-http10" in self.contract.breaks:
            self.send(505, b"HTTP/1.0 not supported", "text/plain")
            return
        route = self.route()
        if route is None:
            self.send(404, b"not found", "text/plain", send_body=send_body)
            return
        params = parse_qsl(urlsplit(self.path).query, keep_blank_values=True)
        if route == "/":
            status, body = self.contract.root(params)
        else:
            status, body = self.contract.workday(params)
        self.send(status, body, CONTENT_TYPE, send_body=send_body, contract_response=True)

    def send(
        self,
        status: int,
        body: bytes,
        content_type: str,
        extra: list = (),
        send_body: bool = True,
        contract_response: bool = False,
    ) -> None:
        """Write a whole response; the breaks decide what goes wrong."""
        self.answered = True
        breaks, variations = self.contract.breaks, self.contract.variations
        headers = [] if "no-server-header" in variations else [("Server", self.server_version)]
        date = self.contract.date_header()
        if date is not None:
            headers.append(("Date", date))
        if contract_response and "wrong-content-type" in breaks:
            content_type = "text/plain"
        headers.append(("Content-Type", content_type))
        accepts = self.headers.get("Accept-Encoding", "")
        if contract_response and "gzip" in breaks and "gzip" in accepts:
            body = gzip.compress(body)
            headers.append(("Content-Encoding", "gzip"))
        chunked = contract_response and "chunked" in breaks
        if chunked:
            headers.append(("Transfer-Encoding", "chunked"))
        else:
            length = len(body) - 1 if contract_response and "wrong-length" in breaks else len(body)
            headers.append(("Content-Length", str(length)))
        if "set-cookie" in breaks:
            headers.append(("Set-Cookie", "session=1; Path=/"))
        if "keepalive-off" in breaks or (status >= 400 and "close-after-error" in variations):
            headers.append(("Connection", "close"))
        elif "keep-alive-header" in variations and not self.close_connection:
            headers += [("Connection", "keep-alive"), ("Keep-Alive", "timeout=5")]
        headers.extend(extra)
        self.send_response_only(status)
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if send_body:
            if chunked:
                body = (
                    b"".join(
                        b"%x\r\n%s\r\n" % (len(part), part)
                        for part in (body[i : i + 4096] for i in range(0, len(body), 4096))
                    )
                    + b"0\r\n\r\n"
                )
            self.wfile.write(body)


class _HTTPServer(ThreadingHTTPServer):
    request_queue_size = 128  # the checker opens 50 connections at once
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        # Broken on purpose, the server may leave bytes unread by the checker,
        # which then resets the connection; that is expected, not news.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ReferenceServer:
    """Serves the contract on 127.0.0.1 (a free port) from a background thread."""

    def __init__(
        self,
        display_name: str = "Reference",
        breaks=(),
        calendar: Path = CALENDAR,
        variations=(),
        tls: tuple | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
    ) -> None:
        """`tls` = (certificate file, key file) serves HTTPS instead of HTTP; port 0: a free one."""
        self.contract = Contract(display_name, set(breaks), calendar, set(variations))
        self.httpd = _HTTPServer((host, port), Handler)
        self.httpd.contract = self.contract
        self.scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            self.scheme = "https"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"{self.scheme}://{host}:{port}"

    def start(self) -> ReferenceServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)

    def __enter__(self) -> ReferenceServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def main(argv: list[str]) -> int:
    """Serve in the foreground on $HOST:$PORT until SIGTERM or SIGINT (a stand-in stack).

    `python -m contracts.tests.reference_server "Display Name" [break ...]`: the
    harness's own tests run it as a stack from a throw-away manifest.
    """
    import os

    display_name = argv[0] if argv else "Reference"
    server = ReferenceServer(
        display_name,
        breaks=argv[1:],
        calendar=Path(os.environ.get("WORKDAY_CALENDAR", CALENDAR)),
        port=int(os.environ.get("PORT", "0")),
        host=os.environ.get("HOST", "127.0.0.1"),
    )

    return serve_in_foreground(server, "reference server")


def serve_in_foreground(server: ReferenceServer, label: str) -> int:
    """Serve until SIGTERM or SIGINT, then close the socket (a stand-in stack's main loop)."""

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"{label} on {server.url}", flush=True)
    try:
        server.httpd.serve_forever(poll_interval=0.05)
    finally:
        server.httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
