"""The fast paths never disagree with the general path.

Every response the router and the WSGI application give (status, headers,
body) is compared with ``contract_reference`` (the per-request path as it was
before the fast paths) for every vector of contracts/vectors/ and for a
generated set of awkward query strings; the query fast path is compared with
the package's own general parser (``query_values``); the workday table with
the rule, for every day of the calendar's range and beyond it.
"""

import random
import time
from datetime import date, datetime, timezone

import contract_reference as reference
import pytest
from python_contract_data import CALENDAR_FILE, load_vectors

from serverlab_contract import (
    BadRequest,
    Hello,
    InvalidAt,
    InvalidN,
    Router,
    at_from_query,
    at_from_values,
    n_from_query,
    n_from_values,
    parse_at,
    parse_n,
    query_values,
    single_value,
)
from serverlab_contract.params import at_instant, query_value, valid_n
from serverlab_contract.wsgi import create_app

INPUTS = load_vectors("inputs.json")
WORKDAY = load_vectors("workday.json")
NAME = "Fast Path Stack"
CLOSED = reference.closed_ordinals(CALENDAR_FILE.read_text(encoding="utf-8"))
# 2019-05-05 02:00:00.090 UTC: a Sunday in Shanghai, during the May Day break.
NOW_MS = 1_557_021_600_090


def vector_queries():
    """Every raw query of inputs.json and workday.json."""
    groups = [INPUTS["n"][kind] for kind in ("valid", "hello", "invalid")]
    groups += [INPUTS["at"][kind] for kind in ("valid", "invalid")]
    queries = [case["raw"] for cases in groups for case in cases]
    return queries + ["at=" + case["at"] for case in WORKDAY["cases"]]


def awkward_queries(count=3000, seed=41):
    """Percent-escapes, '+', duplicates, empty values, unicode, very long, and random ones."""
    values = [
        "",
        "1",
        "01",
        "001",
        "0100",
        "100",
        "101",
        "0",
        "%31",
        "%31%30",
        "+1",
        "%2B1",
        "1+",
        " 1",
        "1 ",
        "%20",
        "%",
        "%Z",
        "%ZZ",
        "%FF",
        "%00",
        "1%00",
        "%D9%A5",
        "%EF%BC%95",
        "\u0665",
        "\uff11",
        "\u00b9",
        "\u00e9",
        "=",
        "==1",
        "1=",
        "2019-05-05T10:00",
        "2019-05-05T10%3A00",
        "2019-05-05T10:00:00",
        "2019-05-05T10:00+",
        "2019-05-05t10:00",
        "2019-02-29T10:00",
        "2000-02-29T10:00",
        "1969-12-31T23:59",
        "2199-12-31T23:59:59",
        "2019-05-05T24:00",
        "2019-05-05T10:60",
        "2019-05-05T10:00:60",
        "2019-05-05T10:00Z",
        "2019-05-05 10:00",
        "2019-05-05+10:00",
        "2019-5-5T10:00",
        "\uff12019-05-05T10:00",
        "1" * 5000,
        "2019-05-05T10:00" * 300,
    ]
    names = ["n", "at", "%6E", "%61t", "N", "AT", "a+t", "n+", "", "x", "\u00f1", "n%00"]
    queries = []
    for name in names:
        for value in values:
            queries += [f"{name}={value}", f"{name}{value}", f"x=1&{name}={value}"]
            queries += [f"{name}={value}&{name}={value}", f"{name}={value}&&", f"&{name}={value};x"]
    queries += ["n", "at", "n&at", "&", "&&", "=", "n=&n=", "at=&at=", "n=1&%6E=2", "n=1;n=2"]
    queries += ["x=" + "y" * 10000 + "&n=5", "&" * 1000 + "n=5", "n=5&" + "z&" * 1000]
    rng = random.Random(seed)
    alphabet = "nat=&%+;0123456789T:-ZF \u00e9\u0665\x00"
    for _ in range(count):
        queries.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24))))
    return queries


ALL_QUERIES = vector_queries() + awkward_queries()


@pytest.fixture(scope="module")
def router(calendar):
    return Router(NAME, calendar)


@pytest.fixture
def frozen_clock(monkeypatch):
    """Pins time.time and time.time_ns at NOW_MS for the router and the reference."""
    monkeypatch.setattr(time, "time_ns", lambda: NOW_MS * 1_000_000 + 123_456)
    monkeypatch.setattr(time, "time", lambda: NOW_MS / 1000)


def general_or_error(function, *args):
    try:
        return function(*args)
    except BadRequest as exc:
        return type(exc)


def test_query_fast_path_agrees_with_parse_qsl():
    for query in ALL_QUERIES + ["a+b=1", "a b=1", "a%20b=1&a+b=2", "x=%C3%B1&\u00f1=2"]:
        for name in ("n", "at", "x", "a b", "\u00f1", ""):
            general = general_or_error(single_value, query_values(query).get(name), BadRequest)
            assert general_or_error(query_value, query, name) == general, (query, name)
        general_n = general_or_error(lambda q: n_from_values(query_values(q).get("n")), query)
        general_at = general_or_error(lambda q: at_from_values(query_values(q).get("at")), query)
        assert general_or_error(n_from_query, query) == general_n, query
        assert general_or_error(at_from_query, query) == general_at, query


def escaped_queries():
    """Every escape %00..%FF in both hex cases, alone, around digits, twice, cut short."""
    escapes = {f"%{code:02X}" for code in range(256)} | {f"%{code:02x}" for code in range(256)}
    escapes |= {"%", "%3", "%G1", "%3G", "%%31", "%3%31"}
    values = []
    for escape in sorted(escapes):
        values += [escape, "1" + escape, escape + "0", escape + escape, "%31" + escape]
    values += ["%31%30%30", "%30%31", "2019-05-05T10%3A00", "2019%2D05%2D05T10%3a00%3A01"]
    values += ["%31%C3%A9", "%E2%82%AC1", "%C3%311"]
    queries = []
    for value in values:
        queries += [f"n={value}", f"at={value}", f"%6E={value}", f"n{value}", f"x={value}"]
    return queries


def test_escaped_query_fast_path_agrees_with_parse_qsl():
    for query in escaped_queries():
        for name in ("n", "at"):
            general = general_or_error(single_value, query_values(query).get(name), BadRequest)
            assert general_or_error(query_value, query, name) == general, (query, name)


@pytest.mark.usefixtures("frozen_clock")
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_escaped_queries_answer_as_before(router, method):
    for query in escaped_queries():
        for path in ("/", "/workday"):
            got = router.respond(method, path, query)
            want = reference.respond(NAME, CLOSED, method, path, query, NOW_MS)
            assert (got.status, got.headers, got.body) == want, (method, path, query)


@pytest.mark.usefixtures("frozen_clock")
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_router_answers_as_before(router, method):
    for query in ALL_QUERIES:
        for path in ("/", "/workday"):
            got = router.respond(method, path, query)
            want = reference.respond(NAME, CLOSED, method, path, query, NOW_MS)
            assert (got.status, got.headers, got.body) == want, (method, path, query)


@pytest.mark.usefixtures("frozen_clock")
def test_router_routes_and_methods_as_before(router):
    for path in ("/", "/workday", "/nope", "/workday/", "", "//", "/index.html"):
        for method in ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "get"):
            for query in ("", "n=1", "n=0", "at=2019-05-05T10:00", "at="):
                got = router.respond(method, path, query)
                want = reference.respond(NAME, CLOSED, method, path, query, NOW_MS)
                assert (got.status, got.headers, got.body) == want, (method, path, query)


@pytest.mark.usefixtures("frozen_clock")
@pytest.mark.parametrize("add_date", [False, True])
def test_wsgi_answers_as_before(calendar, add_date):
    app = create_app(NAME, calendar, add_date=add_date)
    for query in vector_queries() + awkward_queries(count=300):
        for method, path in (("GET", "/"), ("GET", "/workday"), ("HEAD", "/"), ("POST", "/")):
            captured = {}

            def start_response(status, headers, exc_info=None):
                captured.update(status=status, headers=headers)

            environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query}
            body = b"".join(app(environ, start_response))
            status, headers, want_body = reference.respond(
                NAME, CLOSED, method, path, query, NOW_MS
            )
            assert captured["status"] == reference.status_line(status), (method, path, query)
            got_headers = captured["headers"]
            if add_date:
                assert got_headers[-1][0] == "Date"
                got_headers = got_headers[:-1]
            assert got_headers == list(headers), (method, path, query)
            assert body == want_body, (method, path, query)


def test_workday_table_agrees_with_the_rule(calendar):
    first = calendar.first.toordinal() - 400
    last = calendar.last.toordinal() + 400
    for ordinal in range(first, last + 1):
        for seconds in (0, 9 * 3600 + 30 * 60, 15 * 3600, 15 * 3600 + 1, 86399):
            want = reference.trading_day(CLOSED, ordinal, seconds)
            assert calendar.day_of(ordinal, seconds) == want, (date.fromordinal(ordinal), seconds)


def test_workday_now_agrees_with_the_rule(calendar):
    start = datetime(2006, 12, 1, tzinfo=timezone.utc).timestamp()
    for hours in range(0, 20 * 366 * 24, 7):  # every 7 hours: all times of day over 20 years
        for offset in (0, 0.999, 1):
            instant = start + hours * 3600 + offset
            want = reference.trading_day_now(CLOSED, instant)
            assert calendar.trading_day_at(instant) == want, instant


def at_mutations():
    """Valid ``at`` values with one character replaced, dropped or added, at every position."""
    seeds = ["2019-05-05T10:00", "2019-04-30T15:00:01", "2000-02-29T23:59:59", "2199-12-31T00:00"]
    alphabet = "0123456789-T:tZ +.\u0665\uff10"
    found = list(seeds)
    for seed in seeds:
        for i in range(len(seed) + 1):
            found.append(seed[:i] + seed[i + 1 :])
            for char in alphabet:
                found.append(seed[:i] + char + seed[i + 1 :])
                found.append(seed[:i] + char + seed[i:])
    for year in (1969, 1970, 1999, 2000, 2100, 2199, 2200, 9999):
        for month in range(0, 14):
            for day in (0, 1, 28, 29, 30, 31, 32):
                found.append(f"{year:04d}-{month:02d}-{day:02d}T12:00")
    for hour in range(0, 26):
        for minute in (0, 59, 60, 99):
            found.append(f"2019-05-06T{hour:02d}:{minute:02d}:{minute:02d}")
    return found


def reference_or_refused(value, parse_reference, parse, error, fast_check):
    """The reference's reading of `value`; None where the reference refuses it, and then
    the package's parser raises `error` and its fast check gives None too."""
    try:
        return parse_reference(value)
    except reference.Invalid:
        with pytest.raises(error):
            parse(value)
        assert fast_check(value) is None, value
        return None


def test_at_fixed_width_check_agrees_with_the_regex():
    for value in at_mutations():
        want = reference_or_refused(value, reference.parse_at, parse_at, InvalidAt, at_instant)
        if want is None:
            continue
        assert tuple(parse_at(value)) == want, value
        year, month, day, hour, minute, second = want
        ordinal = date(year, month, day).toordinal()
        assert at_instant(value) == (ordinal, hour * 3600 + minute * 60 + second), value


def test_n_check_agrees_with_the_regex():
    alphabet = ["0", "1", "5", "9", " ", "+", "-", "_", ".", "\u0665", "\u00b9", "\uff11", "\n"]
    values = [""] + alphabet
    for _ in range(3):
        values = sorted({v + c for v in values for c in alphabet if len(v) < 4} | set(values))
    for value in values:
        want = reference_or_refused(value, reference.parse_n, parse_n, InvalidN, valid_n)
        if want is not None:
            assert parse_n(value) == valid_n(value) == want, value


def test_hello_body_agrees_with_formatting_every_call():
    hello = Hello(NAME)
    rng = random.Random(41)
    instants = [0, 999, 1000, 1_557_021_600_090, 4_102_444_799_999, 253_402_300_799_999]
    start = 1_767_225_599_000  # 2025-12-31 23:59:59.000 UTC: seconds, days and years roll over
    instants += [start + step for step in range(0, 2500, 7)]
    instants += [rng.randrange(0, 253_402_300_800_000) for _ in range(2000)]
    instants += instants[::-1]  # backwards too: the per-second prefix must follow
    for epoch_ms in instants:
        assert hello.body(epoch_ms) == reference.hello_body(NAME, epoch_ms), epoch_ms
    assert hello.length == len(reference.hello_body(NAME, 0))


def test_hello_body_takes_the_time_at_the_call(monkeypatch):
    hello = Hello(NAME)
    for now_ms in (NOW_MS, NOW_MS + 1, NOW_MS + 910, NOW_MS + 1000, NOW_MS - 5000):
        monkeypatch.setattr(time, "time_ns", lambda: now_ms * 1_000_000 + 999_999)
        assert hello.body() == reference.hello_body(NAME, now_ms)
