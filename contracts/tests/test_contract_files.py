"""The shared data and documents are well formed and agree with each other.

Standard library only (plus pytest); the OpenAPI validation runs where
PyYAML and openapi-spec-validator are installed and is skipped elsewhere.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from urllib.parse import parse_qsl

import pytest

from contracts.conformance import expect
from contracts.conformance.checks_content import HELLO_IDS
from contracts.conformance.tradingday import TradingCalendar
from contracts.tests.conftest import expected_ids

CONTRACTS = Path(__file__).resolve().parent.parent
CALENDAR = CONTRACTS / "calendar" / "xshg-non-trading-weekdays.txt"
WORKDAY = json.loads((CONTRACTS / "vectors" / "workday.json").read_text(encoding="utf-8"))
INPUTS = json.loads((CONTRACTS / "vectors" / "inputs.json").read_text(encoding="utf-8"))
AT_SHAPE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?")


def parse_at(text: str) -> dt.datetime:
    match = AT_SHAPE.fullmatch(text)
    assert match, text
    return dt.datetime(*(int(g) for g in match.groups() if g is not None))


# -- calendar -----------------------------------------------------------------


def test_calendar_header_names_source_and_range():
    lines = CALENDAR.read_text(encoding="utf-8").splitlines()
    header = [line for line in lines if line.startswith("#")]
    assert lines[: len(header)] == header, "comment lines come first"
    assert any(
        re.fullmatch(r"# source: exchange-calendars \d+\.\d+\.\d+ \(calendar XSHG\)", h)
        for h in header
    )
    assert "# range: 2007-01-01 2026-12-31" in header


def test_calendar_dates_are_ascending_weekdays_inside_the_range():
    lines = [
        line
        for line in CALENDAR.read_text(encoding="utf-8").splitlines()
        if not line.startswith("#")
    ]
    days = [dt.date.fromisoformat(line) for line in lines]
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", line) for line in lines)
    assert days == sorted(set(days)), "strictly ascending, no duplicates"
    assert all(day.weekday() < 5 for day in days)
    assert dt.date(2007, 1, 1) <= days[0] and days[-1] <= dt.date(2026, 12, 31)
    assert len(days) > 300  # about 18 non-trading weekdays a year
    for holiday in ("2019-05-01", "2019-10-01", "2019-10-07", "2026-02-16", "2026-02-23"):
        assert dt.date.fromisoformat(holiday) in days, holiday


# -- workday vectors ------------------------------------------------------------


def test_workday_vectors_are_many_and_well_formed():
    cases = WORKDAY["cases"]
    assert len(cases) >= 300
    assert len({c["at"] for c in cases}) == len(cases), "no duplicate at"
    calendar = TradingCalendar.load(CALENDAR)
    for case in cases:
        assert set(case) <= {"at", "expect", "kind", "note"}, case
        at = parse_at(case["at"])
        assert 1970 <= at.year <= 2199
        answer = dt.date.fromisoformat(case["expect"])
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", case["expect"])
        assert at.date() <= answer <= at.date() + dt.timedelta(days=20), case
        assert calendar.is_trading_day(answer), case
        if case.get("kind") == "famous":
            assert case.get("note"), case


@pytest.mark.parametrize(
    "at, expect",
    [
        ("2019-05-05T10:00", "2019-05-06"),  # the 2019 article's Sunday
        ("2019-04-30T15:00:00", "2019-04-30"),  # close: still the day
        ("2019-04-30T15:00:01", "2019-05-06"),  # one second later: next trading day
        ("2019-10-01T10:00", "2019-10-08"),  # National Day week 2019
        ("2019-10-12T10:00", "2019-10-14"),  # Saturday make-up day: exchange closed
        ("2026-02-17T00:00", "2026-02-24"),  # Spring Festival 2026
        ("2027-01-01T10:00", "2027-01-01"),  # outside the range: weekdays trade
        ("1970-01-01T00:00", "1970-01-01"),
        ("2199-12-31T23:59:59", "2200-01-01"),
    ],
)
def test_famous_workday_cases_are_present(at, expect):
    cases = {c["at"]: c for c in WORKDAY["cases"]}
    assert at in cases and cases[at]["expect"] == expect


def test_workday_vectors_cover_both_shapes_and_the_close_edges():
    ats = [c["at"] for c in WORKDAY["cases"]]
    assert any(len(at) == 16 for at in ats) and any(len(at) == 19 for at in ats)
    for suffix in ("T15:00", "T15:00:00", "T15:00:01", "T14:59:59", "T00:00", "T23:59:59"):
        assert sum(at.endswith(suffix) for at in ats) >= 20, suffix
    years = {parse_at(at).year for at in ats}
    assert min(years) < 2007 and max(years) > 2026, "cases outside the calendar range"


# -- input vectors --------------------------------------------------------------


def raws(group: str, kind: str) -> list:
    return [case["raw"] for case in INPUTS[group][kind]]


def test_input_vectors_are_wire_ready():
    for group in ("n", "at"):
        for cases in INPUTS[group].values():
            for case in cases:
                assert case["raw"].isascii() and not re.search(r"[\s#]", case["raw"]), case
    assert all(1 <= c["kb"] <= 100 for c in INPUTS["n"]["valid"])
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", c["expect"]) for c in INPUTS["at"]["valid"])


def test_input_vectors_cover_every_bad_input_the_contract_names():
    bad_n = raws("n", "invalid")
    for raw in (
        "n=-1",
        "n=+1",
        "n=%201",
        "n=1_0",
        "n=%D9%A5",
        "n=1.0",
        "n=0",
        "n=101",
        "n=1000",
        "n=1&n=2",
        "n=&n=",
    ):
        assert raw in bad_n, raw
    bad_at = raws("at", "invalid")
    for raw in (
        "at=",
        "at=2019-02-30T10:00",
        "at=2019-05-05T24:00",
        "at=2019-05-05T10:00:60",
        "at=1969-12-31T23:59:59",
        "at=2200-01-01T00:00",
        "at=2019-05-05T10:00:00.000",
        "at=2019-05-05T10:00Z",
        "at=2019-05-05T10:00&at=2019-05-06T10:00",
    ):
        assert raw in bad_at, raw
    assert {"", "n=", "n"} <= set(raws("n", "hello"))
    assert "at=2019-05-05T10:00" in raws("n", "hello")  # at is ignored on /
    assert any("&n=" in raw for raw in raws("at", "valid"))  # n is ignored on /workday


# -- documents ------------------------------------------------------------------


def test_openapi_and_readme_carry_the_exact_strings():
    openapi = (CONTRACTS / "openapi.yaml").read_text(encoding="utf-8")
    readme = (CONTRACTS / "README.md").read_text(encoding="utf-8")
    for text in (expect.N_ERROR, expect.AT_ERROR, expect.CONTENT_TYPE, "GET, HEAD"):
        assert text in openapi, text
        assert text in readme, text
    assert openapi.startswith("openapi: 3.1.")
    assert "Hello World, from <display_name>! <YYYY-MM-DD HH:MM:SS.mmm>" in readme


def test_readme_documents_every_check_id():
    readme = (CONTRACTS / "README.md").read_text(encoding="utf-8")
    table = set(re.findall(r"^\| `([^`]+)` \|", readme, flags=re.MULTILINE))
    documented = {re.sub(r"\[.*\]$", "[]", name) for name in table}
    produced = {re.sub(r"\[.*\]$", "[]", check_id) for check_id in expected_ids()}
    assert produced <= documented, produced - documented
    assert set(HELLO_IDS) <= table


def load_openapi() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((CONTRACTS / "openapi.yaml").read_text(encoding="utf-8"))


def test_openapi_is_valid_openapi_3_1():
    validator = pytest.importorskip("openapi_spec_validator")
    document = load_openapi()
    validator.validate(document)
    paths = document["paths"]
    assert set(paths) == {"/", "/workday"}
    for path in paths.values():
        # Other methods are left undeclared on purpose: a tool driven by the
        # document then expects 405, which is what the contract says.
        assert {"get", "head"} == set(path) & {"get", "head", "post", "put", "delete", "patch"}
        assert "405" in path["description"] and "Allow: GET, HEAD" in path["description"]
        for method in ("get", "head"):
            assert {"200", "400"} <= set(path[method]["responses"])
    responses = document["components"]["responses"]
    media = "text/plain; charset=utf-8"
    assert responses["BadN"]["content"][media]["schema"]["const"] == expect.N_ERROR
    assert responses["BadAt"]["content"][media]["schema"]["const"] == expect.AT_ERROR
    assert "Allow" in responses["MethodNotAllowed"]["headers"]
    assert "404" not in str(paths) and "NotFound" in responses


def decoded(raw: str, name: str) -> list:
    return [value for key, value in parse_qsl(raw, keep_blank_values=True) if key == name]


def test_openapi_patterns_accept_exactly_the_valid_values():
    parameters = load_openapi()["components"]["parameters"]
    n_pattern = re.compile(parameters["n"]["schema"]["pattern"])
    at_pattern = re.compile(parameters["at"]["schema"]["pattern"])
    for value in range(0, 1000):
        for text in {str(value), f"{value:02d}", f"{value:03d}"}:
            assert bool(n_pattern.search(text)) == (1 <= value <= 100), text
    assert n_pattern.search("") and not n_pattern.search("0100")
    for case in INPUTS["n"]["invalid"]:
        values = decoded(case["raw"], "n")
        assert len(values) > 1 or not n_pattern.search(values[0]), case
    for case in INPUTS["at"]["valid"]:
        assert at_pattern.search(decoded(case["raw"], "at")[0]), case
    for case in INPUTS["at"]["invalid"]:
        values = decoded(case["raw"], "at")
        assert len(values) > 1 or not at_pattern.search(values[0]), case
    assert all(at_pattern.search(c["at"]) for c in WORKDAY["cases"])
    day = dt.date(1960, 1, 1)
    while day < dt.date(2210, 1, 1):  # every real date, and its neighbours' shapes
        assert bool(at_pattern.search(f"{day}T10:00")) == (1970 <= day.year <= 2199), day
        day += dt.timedelta(days=1)
    for impossible in ("2019-02-29", "2100-02-29", "2019-04-31", "2019-13-01", "2019-00-10"):
        assert not at_pattern.search(f"{impossible}T10:00"), impossible
