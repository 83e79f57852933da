"""A raw HTTP/1.1 client for the hostile-input cases (runners/hostile_cases.py).

It sends bytes exactly as given, to 127.0.0.1 on the port given, and reads
back what the server answers and how the connection ended (closed, reset, or
silent past the timeout), with a timeout on every socket operation: an
exchange always ends, and never raises for anything the server does.
"""

from __future__ import annotations

import contextlib
import errno
import resource
import socket
import time
from dataclasses import dataclass, field

from contracts.conformance.rawhttp import status_and_fields

HOST = "127.0.0.1"
TIMEOUT_S = 5.0  # per connection and per answer


@dataclass
class Response:
    status: int
    headers: dict  # lower-case name -> last value
    body: bytes

    @property
    def closes(self) -> bool:
        return "close" in self.headers.get("connection", "").lower()


@dataclass
class Exchange:
    """What one connection got back: answers in order, then how it ended."""

    responses: list = field(default_factory=list)
    closed: bool = False  # the server closed (FIN or RST) after the answers
    reset: bool = False
    timed_out: bool = False  # nothing more and no close within the timeout
    error: str = ""  # could not connect, or a malformed answer

    @property
    def statuses(self) -> list[int]:
        return [r.status for r in self.responses]

    def describe(self) -> str:
        parts = [",".join(map(str, self.statuses)) or "no answer"]
        if self.reset:
            parts.append("reset")
        elif self.closed:
            parts.append("closed")
        if self.timed_out:
            parts.append(f"no close within {TIMEOUT_S:g} s")
        if self.error:
            parts.append(self.error)
        return ", ".join(parts)


def connect(port: int, timeout: float | None = None) -> socket.socket:
    sock = socket.create_connection((HOST, port), timeout=timeout or TIMEOUT_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def connected(port: int, result: Exchange) -> socket.socket | None:
    """A connection for an exchange, or None with the reason in `result.error`."""
    try:
        return connect(port)
    except OSError as exc:
        result.error = f"connect: {exc.strerror or exc}"
        return None


class Reader:
    """Reads HTTP/1.1 responses from a socket, remembering how it ended."""

    def __init__(self, sock: socket.socket, deadline_s: float | None = None) -> None:
        self.sock = sock
        self.buffer = b""
        self.eof = False
        self.reset = False
        self.timed_out = False
        self.deadline_s = deadline_s or TIMEOUT_S

    def _fill(self) -> bool:
        if self.eof:
            return False
        self.sock.settimeout(self.deadline_s)
        try:
            chunk = self.sock.recv(262144)
        except TimeoutError:
            self.timed_out = True
            return False
        except ConnectionResetError:
            self.eof = self.reset = True
            return False
        except OSError as exc:
            if exc.errno in (errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED):
                self.eof = self.reset = True
                return False
            raise
        if not chunk:
            self.eof = True
            return False
        self.buffer += chunk
        return True

    def _take_until(self, marker: bytes) -> bytes | None:
        while marker not in self.buffer:
            if not self._fill():
                return None
        head, _, self.buffer = self.buffer.partition(marker)
        return head

    def _take(self, size: int) -> bytes | None:
        while len(self.buffer) < size:
            if not self._fill():
                return None
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def response(self, head_request: bool = False) -> Response | None:
        """The next response, or None at a close, a reset or the timeout."""
        head = self._take_until(b"\r\n\r\n")
        if head is None:
            return None
        status, headers = status_and_fields(head)
        if head_request or status in (204, 304) or 100 <= status < 200:
            return Response(status, headers, b"")
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._chunked()
        elif "content-length" in headers:
            body = self._take(int(headers["content-length"]))
        else:  # delimited by the close
            while self._fill():
                pass
            body, self.buffer = self.buffer, b""
        if body is None:
            raise ValueError(f"connection ended inside the body of a {status}")
        return Response(status, headers, body)

    def _chunked(self) -> bytes | None:
        body = b""
        while True:
            line = self._take_until(b"\r\n")
            if line is None:
                return None
            size = int(line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                return body if self._take_until(b"\r\n") is not None else None
            data = self._take(size + 2)
            if data is None:
                return None
            body += data[:size]


def exchange(
    port: int,
    payload: bytes | list[bytes],
    expect: int = 1,
    head_request: bool = False,
    pause_s: float = 0.0,
) -> Exchange:
    """Send `payload` (a list: one send per item, `pause_s` apart) and read up to `expect` answers.

    Reading stops after `expect` answers, at a close or reset, or when
    nothing arrives within the timeout (then `timed_out`).
    """
    result = Exchange()
    sock = connected(port, result)
    if sock is None:
        return result
    with sock:
        try:
            for piece in payload if isinstance(payload, list) else [payload]:
                sock.sendall(piece)
                if pause_s:
                    time.sleep(pause_s)
        except OSError:
            pass  # the server may close while we send (e.g. a huge URL); read what it said
        reader = Reader(sock)
        try:
            while len(result.responses) < expect:
                response = reader.response(head_request)
                if response is None:
                    break
                result.responses.append(response)
                if response.status >= 400:
                    break  # an error answer ends the exchange; what follows may be closed
        except ValueError as exc:
            result.error = str(exc)
        except OSError as exc:
            result.error = f"{type(exc).__name__}: {exc}"
        result.closed = reader.eof
        result.reset = reader.reset
        result.timed_out = reader.timed_out and not result.closed
    return result


def request(target: str, extra: str = "", version: str = "HTTP/1.1", method: str = "GET") -> bytes:
    return f"{method} {target} {version}\r\nHost: {HOST}\r\n{extra}\r\n".encode("latin-1")


def exchange_sequence(port: int, requests: list[bytes]) -> Exchange:
    """Requests one after another on one connection, each sent after the previous answer."""
    result = Exchange()
    sock = connected(port, result)
    if sock is None:
        return result
    with sock:
        reader = Reader(sock)
        try:
            for data in requests:
                if reader.eof:
                    break
                sock.sendall(data)
                response = reader.response()
                if response is None:
                    break
                result.responses.append(response)
        except ValueError as exc:
            result.error = str(exc)
        except OSError as exc:
            if exc.errno not in (errno.EPIPE, errno.ECONNRESET):
                result.error = f"{type(exc).__name__}: {exc}"
            reader.eof = True
        result.closed = reader.eof
        result.reset = reader.reset
        result.timed_out = reader.timed_out and not result.closed
    return result


def closed_by_peer(sock: socket.socket) -> bool:
    try:
        sock.setblocking(False)
        return sock.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def raise_file_limit(wanted: int) -> int:
    """Raise the soft RLIMIT_NOFILE towards `wanted` (within the hard limit); return it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
