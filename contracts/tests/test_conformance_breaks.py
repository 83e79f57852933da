"""Each rule broken on purpose: the checker fails exactly the checks for it.

Every break switch of the reference server is run against the checker (all
groups but the 2 s Date-freshness wait unless the break is about Date, or
the groups named when a break garbles every response), and the set of
failing check ids must equal the expected set: the right checks fail, and
nothing else does.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import pytest

from contracts.conformance import run_checks
from contracts.conformance.checks import GROUPS
from contracts.conformance.runner import DEFAULT_CALENDAR, DEFAULT_VECTORS
from contracts.conformance.tradingday import TradingCalendar
from contracts.conformance.vectors import load_inputs, load_workday
from contracts.tests.conftest import DISPLAY_NAME, REPO_ROOT
from contracts.tests.reference_server import BREAKS, VARIATIONS, ReferenceServer

pytestmark = pytest.mark.e2e

WITHOUT_WAIT = [g.name for g in GROUPS if g.name != "date-fresh"]
INPUTS = load_inputs(DEFAULT_VECTORS / "inputs.json")
WORKDAY = load_workday(DEFAULT_VECTORS / "workday.json")
HEADS = {"head[/]", "head[/?n=10]", "head[/workday]"}


def parse_at(text: str) -> dt.datetime:
    return dt.datetime.strptime(
        text, "%Y-%m-%dT%H:%M:%S" if text.count(":") == 2 else "%Y-%m-%dT%H:%M"
    )


def workday_failures(wrong_answer) -> set:
    """Ids of workday and at vectors that a server answering `wrong_answer(at)` fails."""
    ids = {f"workday-vector[{c.at}]" for c in WORKDAY if wrong_answer(parse_at(c.at)) != c.expect}
    for case in INPUTS.at_valid:
        at = case.raw.split("&")[0][len("at=") :].replace("%3A", ":")
        if wrong_answer(parse_at(at)) != case.expect:
            ids.add(f"at-valid[{case.raw}]")
    return ids | ({"workday-vectors"} if ids else set())


def close_off_by_one(at: dt.datetime) -> str:
    right = TradingCalendar.load(DEFAULT_CALENDAR).workday(at)
    if at.time() == dt.time(15, 0) and right == at.date():
        return "moved to the next trading day"
    return right.isoformat()


def weekends_only(at: dt.datetime) -> str:
    calendar = TradingCalendar.load(DEFAULT_CALENDAR)
    return TradingCalendar(set(), calendar.first, calendar.last).workday(at).isoformat()


HELLO_VECTORS = {f"n-hello[{c.raw}]" for c in INPUTS.n_hello}
LENIENT = {"n=0100", "n=+1", "n=%2B1", "n=%201", "n=1%20", "n=1_0", "n=%D9%A5", "n=%EF%BC%95"}

# (break switch, groups to run or None for WITHOUT_WAIT, failing check ids)
CASES = [
    (
        "wrong-name",
        None,
        {"hello-body", "header-no-compression", "keep-alive", "http10-no-host", "concurrent"}
        | HELLO_VECTORS,
    ),
    ("short-millis", ["hello"], {"hello-body", "hello-clock", "hello-millis", "hello-not-cached"}),
    ("slow-clock", None, {"hello-clock"}),
    ("cached-hello", None, {"hello-not-cached"}),
    # Every vector also judges Content-Type, so run the two checks that own it.
    (
        "wrong-content-type",
        ["hello-get", "header-rules"],
        {"hello-content-type", "header-content-type"},
    ),
    ("chunked", None, {"header-content-length", "header-no-chunked", "http10"} | HEADS),
    # An extra body byte garbles the next response on a keep-alive connection.
    ("wrong-length", ["header-rules"], {"header-content-length"}),
    ("no-date", ["header-rules"], {"header-date"}),
    ("stale-date", ["headers"], {"header-date", "header-date-fresh"}),
    ("frozen-date", ["headers"], {"header-date-fresh"}),
    ("set-cookie", None, {"header-no-cookie"}),
    ("gzip", None, {"header-no-compression"}),
    ("accept-n-zero", None, {"n-invalid[n=0]", "n-invalid[n=000]", "concurrent"}),
    ("lenient-n", None, {f"n-invalid[{raw}]" for raw in LENIENT}),
    ("duplicate-n-ok", None, {"n-invalid[n=1&n=2]", "n-invalid[n=1&n=1]", "n-invalid[n=&n=]"}),
    ("empty-at-now", None, {"at-invalid[at=]"}),
    ("close-off-by-one", ["workday-vectors", "at-vectors"], workday_failures(close_off_by_one)),
    ("weekends-only", ["workday-vectors", "at-vectors"], workday_failures(weekends_only)),
    ("frozen-workday", None, {"workday-now"}),
    ("trailing-slash", None, {"not-found[/workday/]"}),
    (
        "no-allow",
        None,
        {
            f"method-not-allowed[{m}:{p}]"
            for p in ("/", "/workday")
            for m in ("POST", "PUT", "DELETE", "PATCH")
        },
    ),
    ("head-body", None, HEADS),
    ("ignore-close", ["connection-close"], {"connection-close"}),
    # HEAD is still proved body-less when the server closes as announced.
    ("keepalive-off", None, {"keep-alive"}),
    ("reject-http10", None, {"http10", "http10-no-host"}),
]


def test_every_break_switch_has_a_case():
    assert sorted(name for name, _, _ in CASES) == sorted(BREAKS)


def test_vector_derived_expectations_are_not_empty():
    close = dict((name, ids) for name, _, ids in CASES)["close-off-by-one"]
    assert "workday-vector[2019-04-30T15:00:00]" in close
    assert "at-valid[at=2019-04-30T15:00:00&n=5]" in close
    assert "workday-vector[2019-04-30T15:00:01]" not in close
    weekends = dict((name, ids) for name, _, ids in CASES)["weekends-only"]
    assert "workday-vector[2019-10-01T10:00]" in weekends
    assert "workday-vector[2027-01-01T10:00]" not in weekends


@pytest.mark.parametrize("name, only, expected", CASES, ids=[c[0] for c in CASES])
def test_break_fails_exactly_its_checks(name, only, expected):
    with ReferenceServer(DISPLAY_NAME, breaks={name}) as server:
        # ignore-close makes the checker wait out the timeout; keep it short.
        timeout = 1.0 if name == "ignore-close" else 3.0
        report = run_checks(
            server.url, DISPLAY_NAME, seed=1, timeout=timeout, only=only or WITHOUT_WAIT
        )
    failing = {c["id"] for c in report["checks"] if not c["ok"]}
    assert failing == expected, {
        "unexpected failures": {
            c["id"]: c["detail"] for c in report["checks"] if c["id"] in failing - expected
        },
        "missed": sorted(expected - failing),
    }
    assert report["failed"] == len(expected)
    for check in report["checks"]:
        if not check["ok"]:
            assert "expected" in check["detail"], check


def test_allowed_variations_pass_every_check():
    """Behaviour real servers show and the contract allows is not failed."""
    with ReferenceServer(DISPLAY_NAME, variations=set(VARIATIONS)) as server:
        report = run_checks(server.url, DISPLAY_NAME, timeout=2.0)
    assert [c for c in report["checks"] if not c["ok"]] == []
    assert report["observed"]["server_header"] is None
    assert report["passed"] == len(report["checks"]) > 100


def test_failures_name_the_case_and_the_difference():
    with ReferenceServer(DISPLAY_NAME, breaks={"close-off-by-one", "lenient-n"}) as server:
        report = run_checks(server.url, DISPLAY_NAME, only=["workday-vectors", "n-vectors"])
    details = {c["id"]: c["detail"] for c in report["checks"]}
    assert details["workday-vector[2019-04-30T15:00:00]"].startswith(
        "expected body '2019-04-30', got '2019-05-06'"
    )
    assert (
        "close of the last day before May Day 2019"
        in details["workday-vector[2019-04-30T15:00:00]"]
    )
    assert details["n-invalid[n=%D9%A5]"].startswith("expected status 400, got 200")
    assert details["workday-vectors"].startswith("expected 450/450 right, got ")


def test_cli_exits_1_and_prints_fail_lines():
    with ReferenceServer(DISPLAY_NAME, breaks={"gzip"}) as server:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "contracts.conformance",
                "--base-url",
                server.url,
                "--display-name",
                DISPLAY_NAME,
                "--only",
                "hello-get,no-compression",
            ],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert "PASS hello-status  200" in lines
    assert any(
        line.startswith(
            "FAIL header-no-compression  /?n=100: expected no Content-Encoding, got 'gzip'"
        )
        for line in lines
    )
    assert lines[-1] == "4 passed, 1 failed"


def test_unknown_break_switch_is_refused():
    with pytest.raises(ValueError, match="unknown break"):
        ReferenceServer(breaks={"nonsense"})
