"""serverlab on raw asyncio + uvloop + httptools: no framework.

An ``asyncio.Protocol`` feeds the bytes it receives to httptools'
``HttpRequestParser`` (llhttp, the parser of Node.js), routes with the shared
``serverlab_contract.Router`` and writes the responses itself. One uvloop
event loop per process; WORKERS processes each bind their own listening
socket with SO_REUSEPORT so that the kernel spreads new connections over
them, and the parent process only supervises them with the supervisor that
bjoern and meinheld use too (serverlab_contract.prefork).

Run: PORT=8122 WORKDAY_CALENDAR=... python server.py
"""

import asyncio
import collections
import signal
import sys
import time
import traceback

import httptools
import uvloop

from serverlab_contract import Config, Router, config_or_exit, http_date
from serverlab_contract.prefork import EXIT_CANNOT_SERVE, Supervisor

DISPLAY_NAME = "Python uvloop + httptools"
DEFAULT_PORT = 8122

# A listen backlog of 2048 (asyncio's default is 100) as gunicorn and uvicorn
# use; the kernel caps it at net.core.somaxconn.
BACKLOG = 2048
# Connections that send nothing for this long are closed (nginx's default
# keepalive_timeout); checked by the once-a-second timer, not per request.
IDLE_TIMEOUT_S = 75.0
# Limits on what a client can make the server hold: the request target is
# buffered (414 beyond), headers are not but are bounded anyway (431 beyond,
# checked per read), bodies are counted and dropped (413 beyond).
MAX_URL_BYTES = 8 * 1024
MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 1024 * 1024
# On SIGTERM, connections still busy after this long are cut (well within
# the supervisor's own 10 s, after which it SIGKILLs a worker).
SHUTDOWN_GRACE_S = 5.0
# A worker that cannot listen exits with the supervisor's "cannot serve" code
# (3): the parent stops every worker and exits with it instead of restarting.
EXIT_CANNOT_LISTEN = EXIT_CANNOT_SERVE

STATUS_LINES = {
    200: b"HTTP/1.1 200 OK\r\n",
    400: b"HTTP/1.1 400 Bad Request\r\n",
    404: b"HTTP/1.1 404 Not Found\r\n",
    405: b"HTTP/1.1 405 Method Not Allowed\r\n",
    413: b"HTTP/1.1 413 Content Too Large\r\n",
    414: b"HTTP/1.1 414 URI Too Long\r\n",
    431: b"HTTP/1.1 431 Request Header Fields Too Large\r\n",
    500: b"HTTP/1.1 500 Internal Server Error\r\n",
}
ERROR_BODIES = {
    400: b"Bad Request",
    413: b"Content Too Large",
    414: b"URI Too Long",
    431: b"Request Header Fields Too Large",
    500: b"Internal Server Error",
}


class Clock:
    """The Date header line, reformatted once a second by a loop timer.

    Date has one-second resolution, so formatting it per response is wasted
    work; nginx, h2o and uvicorn cache it the same way. The timer fires just
    after each wall-clock second begins. The same tick closes idle connections.
    """

    date_line = b""

    @classmethod
    def start(cls, loop: asyncio.AbstractEventLoop) -> None:
        now = time.time()
        cls.date_line = b"Date: " + http_date(now).encode("ascii") + b"\r\n"
        HttpProtocol.close_idle(loop.time())
        loop.call_later(1.0 - now % 1.0, cls.start, loop)


class HttpProtocol(asyncio.Protocol):
    """One HTTP/1.1 connection: keep-alive, pipelining, HEAD, flow control."""

    router: Router  # set once per process before serving
    connections: "set[HttpProtocol]" = set()

    __slots__ = (
        "loop",
        "transport",
        "parser",
        "url",
        "in_head",
        "head_bytes",
        "body_bytes",
        "pending",
        "error",
        "closing",
        "write_paused",
        "last_active",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport = None
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""
        self.in_head = False
        self.head_bytes = 0
        self.body_bytes = 0
        # Parsed requests not answered yet: (method, url, keep_alive, http10).
        # Answered strictly in order, which is all pipelining asks for.
        self.pending = collections.deque()
        self.error = 0  # status of a fatal request error, sent after pending
        self.closing = False
        self.write_paused = False
        self.last_active = 0.0

    # --- asyncio.Protocol ---------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.last_active = self.loop.time()
        self.connections.add(self)

    def connection_lost(self, exc) -> None:
        self.connections.discard(self)
        self.closing = True
        self.pending.clear()

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return  # after an error or Connection: close, the rest is ignored
        self.last_active = self.loop.time()
        continuing_head = self.in_head
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade as upgrade:
            # Upgrade (h2c, websocket) is not supported: the request was
            # answered as plain HTTP/1.1; go on parsing what follows it.
            self.parser = httptools.HttpRequestParser(self)
            self.in_head = False
            rest = data[upgrade.args[0] :]
            if rest:
                self.data_received(rest)
                return
        except httptools.HttpParserError:
            # Malformed request, or one of the limits below. Data after a
            # request that closes the connection is not an error: it is ignored.
            if not self.error and not any(not req[2] for req in self.pending):
                self.error = 400
        else:
            # Headers are not buffered, but a request whose head keeps
            # growing across reads is cut off (bounded to one read's size).
            if self.in_head and continuing_head:
                self.head_bytes += len(data)
                if self.head_bytes > MAX_HEAD_BYTES:
                    self.error = 431
        self.flush()

    def pause_writing(self) -> None:
        # The transport's buffer is above its high-water mark (64 KiB): stop
        # answering and reading until the client has taken the data, so that
        # pipelined requests for 100 KB bodies cannot fill memory.
        self.write_paused = True
        if not self.transport.is_closing():
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        self.last_active = self.loop.time()
        self.flush()
        if not self.write_paused and not self.closing:
            self.transport.resume_reading()

    # --- httptools callbacks (no on_header: the contract needs no headers) ---

    def on_message_begin(self) -> None:
        self.url = b""
        self.in_head = True
        self.head_bytes = 0
        self.body_bytes = 0

    def on_url(self, part: bytes) -> None:
        self.url += part
        if len(self.url) > MAX_URL_BYTES:
            self.error = 414
            raise ValueError("request target too long")

    def on_headers_complete(self) -> None:
        self.in_head = False

    def on_body(self, body: bytes) -> None:
        # Request bodies mean nothing to this contract: counted, not kept.
        self.body_bytes += len(body)
        if self.body_bytes > MAX_BODY_BYTES:
            self.error = 413
            raise ValueError("request body too large")

    def on_message_complete(self) -> None:
        parser = self.parser
        # should_keep_alive covers HTTP/1.0 (close unless "Connection:
        # keep-alive") and HTTP/1.1 (keep-alive unless "Connection: close").
        self.pending.append(
            (
                parser.get_method(),
                self.url,
                parser.should_keep_alive(),
                parser.get_http_version() == "1.0",
            )
        )

    # --- responses ----------------------------------------------------------

    def flush(self) -> None:
        """Answer pending requests in order while the transport accepts data."""
        pending = self.pending
        while pending and not self.write_paused:
            method, url, keep_alive, http10 = pending.popleft()
            try:
                self.respond(method, url, keep_alive, http10)
            except Exception:
                traceback.print_exc()
                self.send_error(500)
                return
            if not keep_alive:
                self.close()
                return
        if not pending and self.error and not self.closing:
            self.send_error(self.error)

    def respond(self, method: bytes, url: bytes, keep_alive: bool, http10: bool) -> None:
        if url[:1] == b"/":  # origin-form, nearly every request
            path, _, query = url.partition(b"?")
        else:  # absolute-form (http://host/path) or asterisk-form (*)
            try:
                parsed = httptools.parse_url(url)
            except httptools.HttpParserInvalidURLError:
                self.send_error(400)
                return
            path, query = parsed.path or b"", parsed.query or b""
        response = self.router.respond(
            method.decode("latin-1"), path.decode("latin-1"), query.decode("latin-1")
        )
        head = [STATUS_LINES[response.status]]
        head += [f"{name}: {value}\r\n".encode("latin-1") for name, value in response.headers]
        head.append(Clock.date_line)
        if not keep_alive:
            head.append(b"Connection: close\r\n")
        elif http10:
            head.append(b"Connection: keep-alive\r\n")  # HTTP/1.0 needs it said
        head.append(b"\r\n")
        # One writev for head and body; the n-KB bodies are shared, not copied.
        self.transport.writelines((b"".join(head), response.body))

    def send_error(self, status: int) -> None:
        """A final error response, then close (the request stream is broken)."""
        body = ERROR_BODIES[status]
        self.transport.write(
            b"%sContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"
            b"%sConnection: close\r\n\r\n%s"
            % (STATUS_LINES[status], len(body), Clock.date_line, body)
        )
        self.close()

    def close(self) -> None:
        """Close after the buffered responses have been sent."""
        self.closing = True
        self.pending.clear()
        self.transport.close()

    # --- shutdown and idle connections --------------------------------------

    @classmethod
    def close_idle(cls, now: float) -> None:
        for conn in [c for c in cls.connections if now - c.last_active > IDLE_TIMEOUT_S]:
            if conn.closing:
                # Already closing but its client has not read for a whole
                # timeout: drop the unsent data instead of holding it forever.
                conn.transport.abort()
            else:
                conn.close()

    def shutdown(self) -> None:
        """Graceful stop: close now unless responses are still queued."""
        if not self.pending:
            self.close()
        else:
            # Answer what was received; the flush closes after the last one.
            self.pending[-1] = self.pending[-1][:2] + (False,) + self.pending[-1][3:]


# --- one worker: one process, one event loop --------------------------------


async def serve(config: Config) -> None:
    loop = asyncio.get_running_loop()
    stop = loop.create_future()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, lambda: stop.done() or stop.set_result(None))
    try:
        server = await loop.create_server(
            lambda: HttpProtocol(loop),
            config.host,
            config.port,
            reuse_port=True,  # every worker binds its own socket; the kernel balances
            backlog=BACKLOG,
        )
    except OSError as exc:
        print(f"cannot listen on {config.host}:{config.port}: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_CANNOT_LISTEN) from None
    Clock.start(loop)
    await stop

    server.close()  # stop accepting; then let open connections finish
    for conn in list(HttpProtocol.connections):
        conn.shutdown()
    deadline = loop.time() + SHUTDOWN_GRACE_S
    while HttpProtocol.connections and loop.time() < deadline:
        await asyncio.sleep(0.05)
    for conn in list(HttpProtocol.connections):
        conn.transport.abort()


def run_worker(config: Config) -> None:
    """Serve until SIGTERM/SIGINT; SystemExit(EXIT_CANNOT_LISTEN) if the bind fails."""
    uvloop.run(serve(config))


def main() -> int:
    config = config_or_exit(default_port=DEFAULT_PORT)
    # Built before forking, so that every worker inherits it: the only thing
    # a worker can then fail at before serving is the bind, which it reports.
    HttpProtocol.router = Router(DISPLAY_NAME, config.calendar)
    print(
        f"{DISPLAY_NAME}: http://{config.host}:{config.port}/ with {config.workers} worker "
        f"process(es); uvloop {uvloop.__version__}, httptools {httptools.__version__}",
        file=sys.stderr,
        flush=True,
    )
    if config.workers == 1:
        run_worker(config)  # no parent needed for one event loop
        return 0
    # The workers handle SIGTERM and SIGINT alike, so SIGTERM is forwarded for
    # both. boot_time=0: a worker that dies, however soon after it started, is
    # replaced (one killed right after a restart too); the one start-up failure
    # a worker can have, the bind, ends the server through EXIT_CANNOT_LISTEN.
    supervisor = Supervisor(
        config.workers,
        lambda: run_worker(config),
        stop_signal=signal.SIGTERM,
        boot_time=0,
        name=DISPLAY_NAME,
    )
    return supervisor.run()


if __name__ == "__main__":
    sys.exit(main())
