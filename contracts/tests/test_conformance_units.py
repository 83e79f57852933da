"""Unit tests of the checker's parts: raw HTTP reader, judges, trading-day rule."""

from __future__ import annotations

import datetime as dt
import socket
import threading

import pytest

from contracts.conformance import expect
from contracts.conformance.checks import CATEGORIES, GROUP_NAMES, select
from contracts.conformance.rawhttp import (
    Client,
    Connection,
    ConnectionClosed,
    ProtocolError,
    ResponseTimeout,
    build_request,
)
from contracts.conformance.runner import (
    DEFAULT_CALENDAR,
    DEFAULT_VECTORS,
    UsageError,
    parse_base_url,
)
from contracts.conformance.tradingday import CalendarError, TradingCalendar
from contracts.conformance.vectors import VectorError, load_workday


class Scripted:
    """A one-connection server that answers each request with canned bytes."""

    def __init__(self, *answers: bytes, close_after: bool = True) -> None:
        self.answers = list(answers)
        self.close_after = close_after
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        self.listener.settimeout(5)
        conn, _ = self.listener.accept()
        conn.settimeout(5)
        with conn, conn.makefile("rb") as request:
            for answer in self.answers:
                # The request head: its lines up to the empty one.
                for line in iter(request.readline, b"\r\n"):
                    if not line:
                        return  # the client went away
                conn.sendall(answer)
            if not self.close_after:
                conn.recv(1)  # hold the connection open until the client goes

    def exchange(self, timeout: float = 2.0, method: str = "GET"):
        with Connection("127.0.0.1", self.port, timeout) as conn:
            return conn.request(method, "/", "h")

    def close(self) -> None:
        self.thread.join(6)
        self.listener.close()


@pytest.fixture
def scripted():
    servers = []

    def make(*answers: bytes, **kwargs) -> Scripted:
        servers.append(Scripted(*answers, **kwargs))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def test_reads_content_length_body_and_counts_head_bytes(scripted):
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\nx-a: 2\r\n\r\n"
    response = scripted(head + b"hello").exchange()
    assert (response.version, response.status, response.reason) == ("HTTP/1.1", 200, "OK")
    assert response.body == b"hello"
    assert response.head_bytes == len(head)
    assert response.header_values("X-A") == ["1", "2"]
    assert not response.chunked and not response.will_close


def test_decodes_chunked_bodies_with_extensions_and_trailers(scripted):
    raw = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n"
    )
    response = scripted(raw).exchange()
    assert response.body == b"abcde" and response.chunked


def test_body_until_close_when_no_length(scripted):
    response = scripted(b"HTTP/1.0 200 OK\r\n\r\nsome body").exchange()
    assert response.body == b"some body" and response.will_close


def test_head_request_reads_no_body(scripted):
    response = scripted(
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", close_after=False
    ).exchange(method="HEAD")
    assert response.body == b"" and response.header("content-length") == "10"


@pytest.mark.parametrize(
    "raw, message",
    [
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            "conflicting Content-Length",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "invalid Content-Length"),
        (b"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n", "obsolete header line folding"),
        (b"HTTP/1.1 200 OK\r\nBad Header: a\r\n\r\n", "malformed header line"),
        (b"ICY 200 OK\r\n\r\n", "expected an HTTP/1.x status line"),
        (b"XXHTTP/1.1 200 OK\r\n\r\n", "2 stray bytes 'XX' before the status line"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size line"),
    ],
)
def test_malformed_responses_raise_protocol_errors(scripted, raw, message):
    with pytest.raises(ProtocolError, match=message):
        scripted(raw).exchange()


def test_short_body_and_silence_are_reported(scripted):
    with pytest.raises(ConnectionClosed, match="after 2 of 5 body bytes"):
        scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab").exchange()
    with pytest.raises(ResponseTimeout, match="no complete response within 0.2 s"):
        scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", close_after=False).exchange(
            timeout=0.2
        )


def test_client_reconnects_after_a_close(scripted):
    first = scripted(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\na")
    with Client("127.0.0.1", first.port, "h", 2.0) as client:
        assert client.get("/").body == b"a"
        assert client.conn is None  # the server said close; the next request opens anew


def test_read_until_close_sees_every_byte_sent(scripted):
    server = scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabc")
    with Connection("127.0.0.1", server.port, 2.0) as conn:
        conn.send(build_request("GET", "/", "h", (("Connection", "close"),)))
        response, closed = conn.read_response_until_close(0.3)
    assert response.body == b"abc" and closed


def test_build_request_without_host():
    assert build_request("GET", "/", None, version="HTTP/1.0").startswith(
        b"GET / HTTP/1.0\r\nUser-Agent:"
    )
    assert b"\r\nHost: a:1\r\n" in build_request("HEAD", "/x", "a:1")


def test_imf_fixdate_is_strict():
    moment = dt.datetime(1994, 11, 6, 8, 49, 37, tzinfo=dt.timezone.utc)
    assert expect.parse_imf_fixdate("Sun, 06 Nov 1994 08:49:37 GMT") == moment
    assert expect.format_imf_fixdate(moment) == "Sun, 06 Nov 1994 08:49:37 GMT"
    for bad in (
        "Mon, 06 Nov 1994 08:49:37 GMT",  # wrong weekday
        "Sunday, 06-Nov-94 08:49:37 GMT",  # RFC 850
        "Sun Nov  6 08:49:37 1994",  # asctime
        "Sun, 6 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 +0000",
        "Sun, 31 Nov 1994 08:49:37 GMT",
    ):
        assert expect.parse_imf_fixdate(bad) is None, bad


def test_hello_body_judge():
    good = b"Hello World, from A B! 2026-01-02 03:04:05.060"
    assert expect.hello_body_problems(good, "A B") == []
    assert expect.parse_hello_time(good.decode()) == dt.datetime(
        2026, 1, 2, 3, 4, 5, 60000, tzinfo=dt.timezone.utc
    )
    assert expect.hello_body_problems(good, "A") != []
    assert expect.hello_body_problems(good + b"\n", "A B") != []
    assert expect.hello_body_problems(b"Hello World, from A B! 2026-01-02 03:04:05.06", "A B") != []
    assert (
        expect.hello_body_problems(b"Hello World, from A B! 2026-02-30 03:04:05.060", "A B") != []
    )


def test_checker_calendar_reproduces_every_workday_vector():
    """The checker's own rule (used for /workday without at) agrees with
    exchange-calendars on all generated vectors."""
    calendar = TradingCalendar.load(DEFAULT_CALENDAR)
    for case in load_workday(DEFAULT_VECTORS / "workday.json"):
        shape = "%Y-%m-%dT%H:%M:%S" if case.at.count(":") == 2 else "%Y-%m-%dT%H:%M"
        at = dt.datetime.strptime(case.at, shape)
        assert calendar.workday(at).isoformat() == case.expect, case


def test_calendar_range_semantics():
    calendar = TradingCalendar.parse("# range: 2019-01-01 2019-12-31\n2019-10-01\n")
    assert not calendar.is_trading_day(dt.date(2019, 10, 1))
    assert calendar.is_trading_day(dt.date(2019, 10, 2))
    assert not calendar.is_trading_day(dt.date(2019, 10, 5))  # Saturday
    assert calendar.workday(dt.datetime(2019, 9, 30, 15, 0, 0)) == dt.date(2019, 9, 30)
    assert calendar.workday(dt.datetime(2019, 9, 30, 15, 0, 1)) == dt.date(2019, 10, 2)
    assert calendar.workday(dt.datetime(2019, 12, 31, 23, 0)) == dt.date(
        2020, 1, 1
    )  # outside: weekday


@pytest.mark.parametrize(
    "text, message",
    [
        ("2019-10-01\n", "no '# range: FIRST LAST' line"),
        ("# range: 2019-01-01 2019-12-31\n2019/10/01\n", "expected YYYY-MM-DD"),
        ("# range: 2019-01-01 2019-12-31\n2019-02-30\n", "not a real date"),
        ("# range: 2019-01-01 2019-12-31\n2019-10-05\n", "weekend day"),
        ("# range: 2019-01-01 2019-12-31\n2020-01-01\n", "outside the range"),
    ],
)
def test_calendar_errors(text, message):
    with pytest.raises(CalendarError, match=message):
        TradingCalendar.parse(text)


def test_vector_loader_refuses_bad_cases(tmp_path):
    path = tmp_path / "workday.json"
    path.write_text('{"cases": [{"at": "2019-05-05 10:00", "expect": "2019-05-06"}]}')
    with pytest.raises(VectorError, match="'at' must be"):
        load_workday(path)


def test_group_selection():
    assert not set(GROUP_NAMES) & set(CATEGORIES)
    assert [g.name for g in select(["workday"])] == ["workday-vectors", "at-vectors", "workday-now"]
    assert [g.name for g in select(["head-requests", "hello"])] == [
        "hello-get",
        "hello-millis",
        "hello-not-cached",
        "head-requests",
    ]
    with pytest.raises(ValueError, match="unknown"):
        select(["nope"])


def test_base_url_parsing():
    assert parse_base_url("http://127.0.0.1:8101") == (
        "http",
        "127.0.0.1",
        8101,
        "127.0.0.1:8101",
    )
    assert parse_base_url("http://[::1]:8101/") == ("http", "::1", 8101, "[::1]:8101")
    assert parse_base_url("http://localhost") == ("http", "localhost", 80, "localhost")
    assert parse_base_url("https://localhost") == ("https", "localhost", 443, "localhost")
    for bad in ("127.0.0.1:8101", "ftp://h:1", "http://h:1/x", "http://h:1?q", "http://h:99999"):
        with pytest.raises(UsageError):
            parse_base_url(bad)
