import re
import time
from email.utils import parsedate_to_datetime

import pytest
from python_contract_data import load_vectors

from serverlab_contract import (
    AT_ERROR_BODY,
    KB_BODIES,
    N_ERROR_BODY,
    DateCache,
    Hello,
    Router,
    format_hello_time,
    hello_text,
    http_date,
    kb_body,
)

INPUTS = load_vectors("inputs.json")
NAME = "Test Stack"
HELLO = re.compile(r"Hello World, from Test Stack! \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}")


@pytest.mark.parametrize(
    "epoch_ms, text",
    [
        (0, "1970-01-01 00:00:00.000"),
        (5, "1970-01-01 00:00:00.005"),
        (1_234_567_890_123, "2009-02-13 23:31:30.123"),
        (1_557_021_600_090, "2019-05-05 02:00:00.090"),
        (951_782_399_999, "2000-02-28 23:59:59.999"),
        (4_102_444_800_500, "2100-01-01 00:00:00.500"),
    ],
)
def test_hello_time_format(epoch_ms, text):
    assert format_hello_time(epoch_ms) == text


def test_hello_text_and_body():
    assert hello_text(NAME, 0) == "Hello World, from Test Stack! 1970-01-01 00:00:00.000"
    assert Hello(NAME).body(1_234_567_890_123) == (
        b"Hello World, from Test Stack! 2009-02-13 23:31:30.123"
    )


def test_hello_uses_the_current_utc_time():
    before = time.time()
    text = Hello(NAME).body().decode()
    after = time.time()
    assert HELLO.fullmatch(text)
    stamp = text.rsplit("! ", 1)[1]
    seconds = time.mktime(time.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S")) - time.timezone
    seconds += int(stamp[20:]) / 1000
    assert before - 0.001 <= seconds <= after + 0.001


def test_kb_bodies():
    assert len(KB_BODIES) == 101
    for n in (1, 7, 99, 100):
        assert kb_body(n) == b"X" * (n * 1000)


def test_http_date():
    assert http_date(784111777) == "Sun, 06 Nov 1994 08:49:37 GMT"
    assert http_date(0) == "Thu, 01 Jan 1970 00:00:00 GMT"
    now = time.time()
    assert abs(parsedate_to_datetime(http_date()).timestamp() - now) < 2


def test_date_cache_is_current():
    cache = DateCache()
    assert cache.current == cache.value()
    assert abs(parsedate_to_datetime(cache.value()).timestamp() - time.time()) < 2


@pytest.fixture(scope="module")
def router(calendar):
    return Router(NAME, calendar)


def header(response, name):
    values = [v for k, v in response.headers if k.lower() == name.lower()]
    assert len(values) <= 1
    return values[0] if values else None


def check_plain(response, status, body):
    assert response.status == status
    assert response.body == body
    assert header(response, "Content-Type") == "text/plain; charset=utf-8"
    assert header(response, "Content-Length") == str(len(body))


@pytest.mark.parametrize("case", INPUTS["n"]["valid"], ids=lambda c: c["raw"])
def test_router_n_valid(router, case):
    check_plain(router.respond("GET", "/", case["raw"]), 200, b"X" * (case["kb"] * 1000))


@pytest.mark.parametrize("case", INPUTS["n"]["hello"], ids=lambda c: c["raw"] or "<empty>")
def test_router_hello(router, case):
    response = router.respond("GET", "/", case["raw"])
    assert response.status == 200
    assert HELLO.fullmatch(response.body.decode())
    check_plain(response, 200, response.body)


@pytest.mark.parametrize("case", INPUTS["n"]["invalid"], ids=lambda c: c["raw"])
def test_router_n_invalid(router, case):
    check_plain(router.respond("GET", "/", case["raw"]), 400, N_ERROR_BODY)


@pytest.mark.parametrize("case", INPUTS["at"]["valid"], ids=lambda c: c["raw"])
def test_router_at_valid(router, case):
    check_plain(router.respond("GET", "/workday", case["raw"]), 200, case["expect"].encode())


@pytest.mark.parametrize("case", INPUTS["at"]["invalid"], ids=lambda c: c["raw"])
def test_router_at_invalid(router, case):
    check_plain(router.respond("GET", "/workday", case["raw"]), 400, AT_ERROR_BODY)


def test_router_workday_now(router, calendar):
    before = calendar.trading_day_now()
    body = router.respond("GET", "/workday", "").body.decode()
    assert body in (before, calendar.trading_day_now())  # the day may roll over meanwhile


def test_router_head_has_headers_but_no_body(router):
    get, head = router.respond("GET", "/", "n=3"), router.respond("HEAD", "/", "n=3")
    assert (head.status, head.body) == (200, b"")
    assert head.headers == get.headers
    assert header(head, "Content-Length") == "3000"
    bad = router.respond("HEAD", "/workday", "at=")
    assert (bad.status, bad.body) == (400, b"")
    assert header(bad, "Content-Length") == str(len(AT_ERROR_BODY))
    missing = router.respond("HEAD", "/nope", "")
    assert (missing.status, missing.body) == (404, b"")


@pytest.mark.parametrize("path", ["/workday/", "/index.html", "//", "", "/Workday", "/%77orkday"])
def test_router_not_found(router, path):
    response = router.respond("GET", path, "")
    assert response.status == 404
    assert response.status_line == "404 Not Found"
    check_plain(response, 404, b"Not Found")


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS", "PATCH", "get", "FOO"])
@pytest.mark.parametrize("path", ["/", "/workday"])
def test_router_method_not_allowed(router, method, path):
    response = router.respond(method, path, "n=5")
    check_plain(response, 405, b"Method Not Allowed")
    assert header(response, "Allow") == "GET, HEAD"
    assert response.status_line == "405 Method Not Allowed"


def test_router_status_line(router):
    assert router.respond("GET", "/", "").status_line == "200 OK"
    assert router.respond("GET", "/", "n=0").status_line == "400 Bad Request"
