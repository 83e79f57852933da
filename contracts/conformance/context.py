"""What every check gets (the Context) and what it gives back (Outcomes)."""

from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass, field

from .rawhttp import Client, Connection, ConnectionClosed, ProtocolError, Response, ResponseTimeout
from .tradingday import TradingCalendar
from .vectors import Inputs

# Everything a request to a broken or stalled server may raise.
NETWORK_ERRORS = (OSError, ProtocolError)


@dataclass(frozen=True)
class Outcome:
    id: str
    ok: bool
    detail: str


class Failure(Exception):
    """Raised inside a check to fail it with a message."""


def passed(check_id: str, detail: str) -> Outcome:
    return Outcome(check_id, True, detail)


def failed(check_id: str, detail: str) -> Outcome:
    return Outcome(check_id, False, detail)


def verdict(check_id: str, problems: list, detail: str) -> Outcome:
    """Pass with `detail` when there are no problems, else fail listing them."""
    if problems:
        return failed(check_id, "; ".join(problems))
    return passed(check_id, detail)


def describe_error(exc: BaseException) -> str:
    """A short reason for a failed request, naming what went wrong on the wire."""
    if isinstance(exc, ResponseTimeout):
        return f"timed out: {exc}"
    if isinstance(exc, ConnectionClosed):
        return str(exc)
    if isinstance(exc, ProtocolError):
        return f"malformed response: {exc}"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError):
        return "connection reset by the server"
    if isinstance(exc, BrokenPipeError):
        return "the server closed the connection while the request was sent"
    if isinstance(exc, socket.timeout):
        return "timed out"
    return f"network error: {exc}"


def guarded(check_id: str, func) -> Outcome:
    """Run `func()`, which returns a pass detail or raises Failure or a network error."""
    try:
        return passed(check_id, func())
    except Failure as exc:
        return failed(check_id, str(exc))
    except NETWORK_ERRORS as exc:
        return failed(check_id, describe_error(exc))


def require(problems: list) -> None:
    if problems:
        raise Failure("; ".join(problems))


@dataclass
class Context:
    """The server under test and the data it is judged against."""

    base_url: str
    host: str
    port: int
    host_header: str  # the Host header value, as a browser would send it
    display_name: str
    timeout: float
    seed: int
    calendar: TradingCalendar
    workday_cases: tuple
    inputs: Inputs
    tls: ssl.SSLContext | None = None  # set for https:// base URLs
    observed: dict = field(default_factory=dict)

    def connect(self) -> Connection:
        return Connection(self.host, self.port, self.timeout, self.tls)

    def client(self) -> Client:
        return Client(self.host, self.port, self.host_header, self.timeout, self.tls)

    def fetch(self, target: str, method: str = "GET", headers: tuple = ()) -> Response:
        """One request on a connection of its own, closed afterwards."""
        with self.connect() as conn:
            return conn.request(method, target, self.host_header, headers)
