import pytest
from python_contract_data import load_vectors

from serverlab_contract import (
    AT_ERROR,
    N_ERROR,
    BadRequest,
    InvalidAt,
    InvalidN,
    LocalTime,
    at_from_query,
    at_from_values,
    n_from_query,
    n_from_values,
    parse_at,
    parse_n,
    query_values,
    single_value,
)

INPUTS = load_vectors("inputs.json")


def ids(case):
    return case["raw"] or "<empty>"


@pytest.mark.parametrize("case", INPUTS["n"]["valid"], ids=ids)
def test_n_valid(case):
    assert n_from_query(case["raw"]) == case["kb"]


@pytest.mark.parametrize("case", INPUTS["n"]["hello"], ids=ids)
def test_n_hello(case):
    assert n_from_query(case["raw"]) is None


@pytest.mark.parametrize("case", INPUTS["n"]["invalid"], ids=ids)
def test_n_invalid(case):
    with pytest.raises(InvalidN) as info:
        n_from_query(case["raw"])
    assert info.value.body == N_ERROR.encode()


@pytest.mark.parametrize("case", INPUTS["at"]["valid"], ids=ids)
def test_at_valid(calendar, case):
    assert calendar.trading_day(at_from_query(case["raw"])) == case["expect"]


@pytest.mark.parametrize("case", INPUTS["at"]["invalid"], ids=ids)
def test_at_invalid(case):
    with pytest.raises(InvalidAt) as info:
        at_from_query(case["raw"])
    assert info.value.body == AT_ERROR.encode()
    assert isinstance(info.value, BadRequest)


def test_at_absent_means_now():
    assert at_from_query("") is None
    assert at_from_query("n=5&foo") is None


@pytest.mark.parametrize(
    "value", ["\u0665", "1\u0660", "\uff11", "\u00b9", "\u2460", "1\n", " 1", "+1", "１"]
)
def test_n_rejects_what_isdigit_or_int_accept(value):
    with pytest.raises(InvalidN):
        parse_n(value)


def test_n_bounds():
    assert [parse_n(v) for v in ("1", "001", "100", "050")] == [1, 1, 100, 50]
    for value in ("", "0", "00", "101", "0001", "1000"):
        with pytest.raises(InvalidN):
            parse_n(value)


def test_at_shapes():
    assert parse_at("2019-05-05T10:00") == LocalTime(2019, 5, 5, 10, 0, 0)
    assert parse_at("2019-05-05T23:59:59") == LocalTime(2019, 5, 5, 23, 59, 59)
    assert parse_at("1970-01-01T00:00") == LocalTime(1970, 1, 1, 0, 0, 0)
    assert parse_at("2199-12-31T23:59:59") == LocalTime(2199, 12, 31, 23, 59, 59)
    assert parse_at("2024-02-29T00:00") == LocalTime(2024, 2, 29, 0, 0, 0)
    for value in (
        "2019-05-05T10:00\n",
        "2019-05-05T10:00:0",
        "2019-05-05T10:00:",
        "2019-05-05T10:00:00:00",
        "2019-05-05 10:00",
        "2019-05-05T10:0\u0660",
        "1900-02-29T10:00",
    ):
        with pytest.raises(InvalidAt):
            parse_at(value)


def test_query_values_follow_form_urlencoding():
    assert query_values("") == {}
    assert query_values("n") == {"n": [""]}
    assert query_values("n=1&n=2&x") == {"n": ["1", "2"], "x": [""]}
    assert query_values("%6E=5&a+b=c+d") == {"n": ["5"], "a b": ["c d"]}
    assert query_values("n=%ZZ") == {"n": ["%ZZ"]}
    assert query_values("n=%FF") == {"n": ["\ufffd"]}
    assert query_values("&&n=1&") == {"n": ["1"]}


def test_encoded_name_counts_as_the_same_parameter():
    with pytest.raises(InvalidN):
        n_from_query("n=1&%6E=2")


def test_values_helpers_for_framework_parsed_queries():
    assert n_from_values(None) is None
    assert n_from_values([]) is None
    assert n_from_values([""]) is None
    assert n_from_values(["42"]) == 42
    with pytest.raises(InvalidN):
        n_from_values(["", ""])
    assert at_from_values(None) is None
    with pytest.raises(InvalidAt):
        at_from_values([""])
    assert single_value(["a"]) == "a"
    with pytest.raises(BadRequest):
        single_value(["a", "b"])
