"""A small, strict HTTP/1.x client over raw sockets.

http.client would hide exactly what the contract judges: it de-chunks bodies
silently, accepts responses without a length, pools and reopens connections
on its own and cannot send a request without a Host header. This client
sends the bytes it is given and reports what came back: the header block as
sent (and its size), whether the body was chunked, and whether the server
closed the connection.

Every socket operation runs under a timeout, and reading one response is
bounded by a deadline, so a server that stalls or trickles bytes cannot hang
the checker.
"""

from __future__ import annotations

import re
import socket
import ssl
import time
from dataclasses import dataclass

# Generous limits: the largest contract body is 100,000 bytes.
MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 4 * 1024 * 1024
RECV_SIZE = 65536

STATUS_LINE = re.compile(r"HTTP/(\d)\.(\d) (\d{3})(?: (.*))?")
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
USER_AGENT = "serverlab-conformance/1"


class ProtocolError(Exception):
    """The server's bytes are not a well-formed HTTP/1.x response."""


class ConnectionClosed(ProtocolError):
    """The server closed the connection before a complete response.

    `partial` tells whether any byte of the response had arrived; a client
    may only retry a request on a new connection when none had.
    """

    def __init__(self, message: str, partial: bool) -> None:
        super().__init__(message)
        self.partial = partial


class ResponseTimeout(ProtocolError):
    """No complete response arrived before the deadline."""


@dataclass
class Response:
    version: str  # "HTTP/1.1"
    status: int
    reason: str
    headers: list  # [(name, value)] in the order sent, names as sent
    body: bytes
    head_bytes: int  # status line + header lines + blank line, in bytes
    chunked: bool  # the body arrived with Transfer-Encoding: chunked

    def header_values(self, name: str) -> list:
        wanted = name.lower()
        return [value for key, value in self.headers if key.lower() == wanted]

    def header(self, name: str) -> str | None:
        values = self.header_values(name)
        return values[0] if values else None

    def header_names(self) -> set:
        return {key.lower() for key, _ in self.headers}

    def connection_tokens(self) -> set:
        tokens = set()
        for value in self.header_values("Connection"):
            tokens.update(t.strip().lower() for t in value.split(",") if t.strip())
        return tokens

    @property
    def will_close(self) -> bool:
        """Whether the server announced it closes the connection after this."""
        tokens = self.connection_tokens()
        if "close" in tokens:
            return True
        return self.version == "HTTP/1.0" and "keep-alive" not in tokens

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def build_request(
    method: str,
    target: str,
    host: str | None,
    headers: tuple = (),
    version: str = "HTTP/1.1",
) -> bytes:
    """Serialise a request; `host=None` sends no Host header at all."""
    lines = [f"{method} {target} {version}"]
    if host is not None:
        lines.append(f"Host: {host}")
    lines.append(f"User-Agent: {USER_AGENT}")
    lines.extend(f"{name}: {value}" for name, value in headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def tls_context(cafile: str | None = None) -> ssl.SSLContext:
    """A client TLS context that verifies the server: against `cafile` (a
    self-signed test certificate) when given, else the system trust store.

    It offers only HTTP/1.1 in ALPN, since this client speaks nothing else.
    """
    context = ssl.create_default_context(cafile=cafile)
    context.set_alpn_protocols(["http/1.1"])
    return context


class Connection:
    """One TCP (or TLS) connection; requests and responses are exchanged by hand."""

    def __init__(
        self, host: str, port: int, timeout: float, tls: ssl.SSLContext | None = None
    ) -> None:
        self.timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=timeout)
        # Requests are small and sent whole; Nagle would only add delay.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls is not None:
            try:
                self.sock = tls.wrap_socket(self.sock, server_hostname=host)
            except BaseException:
                self.sock.close()
                raise
        self.buffer = bytearray()
        self.eof = False

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, data: bytes) -> None:
        self.sock.settimeout(self.timeout)
        self.sock.sendall(data)

    def request(
        self,
        method: str,
        target: str,
        host: str | None,
        headers: tuple = (),
        version: str = "HTTP/1.1",
    ) -> Response:
        self.send(build_request(method, target, host, headers, version))
        return self.read_response(head_request=(method == "HEAD"))

    # -- reading ---------------------------------------------------------

    def _fill(self, deadline: float) -> bool:
        """Receive more bytes into the buffer; False once the peer closed."""
        if self.eof:
            return False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout("deadline passed")
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(RECV_SIZE)
        except ssl.SSLEOFError:  # closed without close_notify: an EOF all the same
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self.buffer += chunk
        return True

    def _take(self, count: int) -> bytes:
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data

    def _read_until(self, marker: bytes, deadline: float, limit: int, what: str) -> bytes:
        """Bytes up to and including `marker`."""
        while True:
            index = self.buffer.find(marker)
            if index >= 0:
                return self._take(index + len(marker))
            if len(self.buffer) > limit:
                raise ProtocolError(f"{what} longer than {limit} bytes")
            if not self._fill(deadline):
                raise ConnectionClosed(
                    f"connection closed by the server while reading the {what}",
                    partial=bool(self.buffer),
                )

    def _read_exactly(self, count: int, deadline: float, what: str) -> bytes:
        while len(self.buffer) < count:
            if not self._fill(deadline):
                raise ConnectionClosed(
                    f"connection closed by the server after {len(self.buffer)} of "
                    f"{count} {what} bytes",
                    partial=True,
                )
        return self._take(count)

    def read_response(self, head_request: bool = False) -> Response:
        """Read one response; the body is framed as RFC 9112 section 6 says."""
        deadline = time.monotonic() + self.timeout
        try:
            head = self._read_until(b"\r\n\r\n", deadline, MAX_HEAD_BYTES, "response head")
            response = parse_head(head)
            response.body, response.chunked = self._read_body(response, head_request, deadline)
        except socket.timeout:
            raise ResponseTimeout(f"no complete response within {self.timeout:g} s") from None
        return response

    def _read_body(self, response: Response, head_request: bool, deadline: float) -> tuple:
        if head_request or response.status < 200 or response.status in (204, 304):
            return b"", False
        if response.header_values("Transfer-Encoding"):
            codings = ",".join(response.header_values("Transfer-Encoding")).lower()
            if codings.split(",")[-1].strip() == "chunked":
                return self._read_chunked(deadline), True
            return self._read_to_eof(deadline), False
        length = content_length(response)
        if length is None:
            return self._read_to_eof(deadline), False
        if length > MAX_BODY_BYTES:
            raise ProtocolError(f"Content-Length {length} is implausibly large")
        return self._read_exactly(length, deadline, "body"), False

    def _read_chunked(self, deadline: float) -> bytes:
        body = bytearray()
        while True:
            size_line = self._read_until(b"\r\n", deadline, 1024, "chunk size line")
            size_text = size_line[:-2].split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise ProtocolError(f"bad chunk size line {size_line!r}") from None
            if size == 0:
                break
            if len(body) + size > MAX_BODY_BYTES:
                raise ProtocolError("chunked body is implausibly large")
            body += self._read_exactly(size, deadline, "chunk")
            if self._read_exactly(2, deadline, "chunk") != b"\r\n":
                raise ProtocolError("chunk data not followed by CRLF")
        # Trailer section: header lines up to an empty line.
        while self._read_until(b"\r\n", deadline, MAX_HEAD_BYTES, "trailer") != b"\r\n":
            pass
        return bytes(body)

    def _read_to_eof(self, deadline: float) -> bytes:
        """A body delimited by the server closing the connection."""
        try:
            while self._fill(deadline):
                if len(self.buffer) > MAX_BODY_BYTES:
                    raise ProtocolError("close-delimited body is implausibly large")
        except socket.timeout:
            raise ProtocolError(
                "response has neither Content-Length nor Transfer-Encoding and the "
                "server kept the connection open"
            ) from None
        return self._take(len(self.buffer))

    def read_response_until_close(self, grace: float) -> tuple:
        """Read a response head, then every byte until the server closes.

        Meant for requests sent with `Connection: close`: the body is then
        whatever the server sent, so Content-Length can be compared with the
        bytes actually sent. Once Content-Length bytes are in, wait at most
        `grace` seconds more (judging the close itself is another check's job).
        Returns (response with body = all bytes after the head, closed).
        """
        deadline = time.monotonic() + self.timeout
        try:
            head = self._read_until(b"\r\n\r\n", deadline, MAX_HEAD_BYTES, "response head")
        except socket.timeout:
            raise ResponseTimeout(f"no response head within {self.timeout:g} s") from None
        response = parse_head(head)
        response.chunked = bool(response.header_values("Transfer-Encoding"))
        try:
            length = None if response.chunked else content_length(response)
        except ProtocolError:
            length = None
        try:
            while length is None or len(self.buffer) < length:
                if not self._fill(deadline):
                    response.body = self._take(len(self.buffer))
                    return response, True
                if len(self.buffer) > MAX_BODY_BYTES:
                    raise ProtocolError("body is implausibly large")
        except socket.timeout:
            response.body = self._take(len(self.buffer))
            return response, False
        closed, response.body = self.drain_until_close(grace)
        return response, closed

    def drain_until_close(self, wait: float) -> tuple:
        """Wait up to `wait` seconds for the server to close the connection.

        Returns (closed, extra): whether it closed, and any bytes that came
        before (a correct server sends none after a complete response).
        """
        deadline = time.monotonic() + wait
        try:
            while self._fill(deadline):
                if len(self.buffer) > MAX_BODY_BYTES:
                    break
        except socket.timeout:
            return False, self._take(len(self.buffer))
        except OSError:
            # A reset also ends the connection.
            return True, self._take(len(self.buffer))
        return True, self._take(len(self.buffer))


def parse_head(head: bytes) -> Response:
    """Parse the status line and header fields (the head ends with CRLFCRLF)."""
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes any byte
        raise ProtocolError("undecodable response head") from None
    lines = text[:-4].split("\r\n")
    match = STATUS_LINE.fullmatch(lines[0])
    if not match:
        stray = lines[0].find("HTTP/1.")
        if stray > 0:
            raise ProtocolError(
                f"{stray} stray bytes {lines[0][: min(stray, 40)]!r} before the status line "
                "(the previous response sent more body bytes than its Content-Length?)"
            )
        raise ProtocolError(f"expected an HTTP/1.x status line, got {lines[0][:80]!r}")
    headers = []
    for line in lines[1:]:
        if line[:1] in (" ", "\t"):
            raise ProtocolError(f"obsolete header line folding: {line[:80]!r}")
        name, colon, value = line.partition(":")
        if not colon or not TOKEN.fullmatch(name):
            raise ProtocolError(f"malformed header line {line[:80]!r}")
        headers.append((name, value.strip(" \t")))
    return Response(
        version=f"HTTP/{match.group(1)}.{match.group(2)}",
        status=int(match.group(3)),
        reason=match.group(4) or "",
        headers=headers,
        body=b"",
        head_bytes=len(head),
        chunked=False,
    )


def content_length(response: Response) -> int | None:
    """The Content-Length value, or None when absent; conflicting values are an error."""
    values = set()
    for raw in response.header_values("Content-Length"):
        for part in raw.split(","):
            part = part.strip()
            if not part.isdigit() or not part.isascii():
                raise ProtocolError(f"invalid Content-Length {raw!r}")
            values.add(int(part))
    if len(values) > 1:
        raise ProtocolError(f"conflicting Content-Length values {sorted(values)}")
    return values.pop() if values else None


class Client:
    """Sends requests one after another over a reused keep-alive connection.

    A new connection is opened when the server closed the previous one, as
    any HTTP client does; a request is retried once on a new connection only
    when a reused connection closed before any response byte (the server may
    drop idle connections). Checks that judge connection handling itself use
    Connection directly instead.
    """

    def __init__(
        self,
        host: str,
        port: int,
        host_header: str,
        timeout: float,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.host_header = host_header
        self.timeout = timeout
        self.tls = tls
        self.conn: Connection | None = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def request(self, method: str, target: str, headers: tuple = ()) -> Response:
        for _attempt in range(2):
            fresh = self.conn is None
            if fresh:
                self.conn = Connection(self.host, self.port, self.timeout, self.tls)
            try:
                response = self.conn.request(method, target, self.host_header, headers)
            except (ConnectionClosed, ConnectionResetError, BrokenPipeError) as exc:
                self.close()
                if fresh or getattr(exc, "partial", False):
                    raise
                continue
            except BaseException:
                self.close()
                raise
            if response.will_close:
                self.close()
            return response
        raise AssertionError("unreachable")  # pragma: no cover

    def get(self, target: str, headers: tuple = ()) -> Response:
        return self.request("GET", target, headers)


def status_and_fields(head: bytes) -> tuple[int, dict[str, str]]:
    """A lenient read of a response head (without its CRLFCRLF): the status and the
    fields, names lower-cased, the last of a repeated name winning.

    For the harness's own probes (response sizes, hostile input), which must
    read what a server sends rather than judge it; `parse_head` judges.
    """
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split(" ", 2)[1])
    except (IndexError, ValueError):
        raise ValueError(f"malformed status line {lines[0][:80]!r}") from None
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return status, fields
