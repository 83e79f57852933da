"""The shared WSGI application, checked for PEP 3333 with wsgiref.validate."""

import re
import time
from email.utils import parsedate_to_datetime
from wsgiref.util import setup_testing_defaults
from wsgiref.validate import validator

import pytest
from python_contract_data import CALENDAR_FILE, load_vectors

from serverlab_contract import AT_ERROR_BODY, N_ERROR_BODY
from serverlab_contract.wsgi import application_from_env, create_app

INPUTS = load_vectors("inputs.json")
WORKDAY = load_vectors("workday.json")
NAME = "Test WSGI"
HELLO = re.compile(rb"Hello World, from Test WSGI! \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}")
IMF_FIXDATE = re.compile(
    r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT"
)


class Result:
    def __init__(self, status, headers, body):
        self.status = status
        self.code = int(status.split(" ", 1)[0])
        self.headers = headers
        self.body = body

    def values(self, name):
        return [v for k, v in self.headers if k.lower() == name.lower()]

    def header(self, name):
        values = self.values(name)
        assert len(values) == 1, f"{name}: {values}"
        return values[0]


def call(app, method="GET", path="/", query=""):
    """One request through wsgiref.validate, which asserts PEP 3333 on both sides."""
    environ = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": query,
    }
    setup_testing_defaults(environ)
    captured = {}

    def start_response(status, headers, exc_info=None):
        captured["status"], captured["headers"] = status, headers
        return lambda data: pytest.fail("the application must not use write()")

    result = validator(app)(environ, start_response)
    try:
        body = b"".join(result)
    finally:
        result.close()
    return Result(captured["status"], captured["headers"], body)


@pytest.fixture(scope="module", params=[True, False], ids=["add_date", "server_date"])
def app(request, calendar):
    application = create_app(NAME, calendar, add_date=request.param)
    application.adds_date = request.param
    return application


def check_plain(result, code, body):
    assert result.code == code
    assert result.body == body
    assert result.header("Content-Type") == "text/plain; charset=utf-8"
    assert result.header("Content-Length") == str(len(body))
    assert not result.values("Transfer-Encoding")


def test_hello(app):
    result = call(app)
    assert result.status == "200 OK"
    assert HELLO.fullmatch(result.body)
    check_plain(result, 200, result.body)


@pytest.mark.parametrize("case", INPUTS["n"]["hello"], ids=lambda c: c["raw"] or "<empty>")
def test_hello_inputs(app, case):
    assert HELLO.fullmatch(call(app, query=case["raw"]).body)


@pytest.mark.parametrize("case", INPUTS["n"]["valid"], ids=lambda c: c["raw"])
def test_n_valid(app, case):
    check_plain(call(app, query=case["raw"]), 200, b"X" * (case["kb"] * 1000))


@pytest.mark.parametrize("case", INPUTS["n"]["invalid"], ids=lambda c: c["raw"])
def test_n_invalid(app, case):
    result = call(app, query=case["raw"])
    assert result.status == "400 Bad Request"
    check_plain(result, 400, N_ERROR_BODY)


@pytest.mark.parametrize("case", INPUTS["at"]["valid"], ids=lambda c: c["raw"])
def test_at_valid(app, case):
    check_plain(call(app, path="/workday", query=case["raw"]), 200, case["expect"].encode())


@pytest.mark.parametrize("case", INPUTS["at"]["invalid"], ids=lambda c: c["raw"])
def test_at_invalid(app, case):
    check_plain(call(app, path="/workday", query=case["raw"]), 400, AT_ERROR_BODY)


def test_workday_vectors(calendar):
    app = create_app(NAME, calendar, add_date=False)
    for case in WORKDAY["cases"]:
        result = call(app, path="/workday", query="at=" + case["at"])
        assert (result.code, result.body.decode()) == (200, case["expect"]), case


def test_workday_now(app, calendar):
    before = calendar.trading_day_now()
    result = call(app, path="/workday")
    assert result.code == 200
    assert result.body.decode() in (before, calendar.trading_day_now())


def test_query_string_is_read_raw_and_decoded_as_a_form(app):
    # Percent-escapes, '+' and repeated names are the application's to decode.
    assert call(app, query="n=%31%30").body == b"X" * 10_000
    assert call(app, path="/workday", query="at=2019-05-05T10%3A00").body == b"2019-05-06"
    assert call(app, query="n=1&n=2").code == 400
    assert call(app, query="n=+1").code == 400
    assert call(app, query="x=1&n=2&at=zzz").body == b"X" * 2000


def test_head_has_get_headers_and_no_body(app):
    for path, query in (("/", "n=3"), ("/", ""), ("/workday", "at=2019-05-05T10:00")):
        get, head = call(app, "GET", path, query), call(app, "HEAD", path, query)
        assert (head.status, head.body) == (get.status, b"")
        assert head.header("Content-Length") == str(len(get.body))
        assert [k for k, _ in head.headers] == [k for k, _ in get.headers]
    bad = call(app, "HEAD", "/workday", "at=")
    assert (bad.code, bad.body) == (400, b"")
    assert bad.header("Content-Length") == str(len(AT_ERROR_BODY))


@pytest.mark.parametrize("path", ["/", "/workday"])
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_method_not_allowed(app, method, path):
    result = call(app, method, path)
    assert result.status == "405 Method Not Allowed"
    assert result.header("Allow") == "GET, HEAD"
    assert result.header("Content-Length") == str(len(result.body))


@pytest.mark.parametrize("path", ["/nope", "/workday/", "/index.html", "", "//"])
def test_not_found(app, path):
    result = call(app, "GET", path)
    assert result.status == "404 Not Found"
    assert result.header("Content-Length") == str(len(result.body))
    assert call(app, "HEAD", path).body == b""


def test_date_header(app):
    for path, query in (("/", ""), ("/", "n=0"), ("/nope", ""), ("/workday", "")):
        result = call(app, path=path, query=query)
        if not app.adds_date:
            assert result.values("Date") == []  # the server adds its own
            continue
        value = result.header("Date")
        assert IMF_FIXDATE.fullmatch(value)
        assert abs(parsedate_to_datetime(value).timestamp() - time.time()) < 2


def test_headers_are_a_fresh_list_per_response(calendar):
    # Servers may append their own headers to the list they are given.
    app = create_app(NAME, calendar, add_date=False)
    first = call(app, query="n=1")
    first.headers.append(("Server", "test"))
    assert call(app, query="n=1").values("Server") == []


def test_application_from_env(monkeypatch, capsys):
    app = application_from_env(
        NAME, add_date=True, environ={"WORKDAY_CALENDAR": str(CALENDAR_FILE)}
    )
    assert call(app, path="/workday", query="at=2019-05-05T10:00").body == b"2019-05-06"
    with pytest.raises(SystemExit) as exited:
        application_from_env(NAME, add_date=True, environ={})
    assert exited.value.code == 2
    assert "WORKDAY_CALENDAR" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        application_from_env(NAME, add_date=True, environ={"WORKDAY_CALENDAR": "/no/such/file"})
    assert "/no/such/file" in capsys.readouterr().err
