from datetime import date, datetime, timedelta, timezone

import pytest
from python_contract_data import CALENDAR_FILE, load_vectors

from serverlab_contract import (
    CalendarError,
    LocalTime,
    TradingCalendar,
    load_calendar,
    parse_at,
    parse_calendar,
)

WORKDAY = load_vectors("workday.json")
SHANGHAI = timezone(timedelta(hours=8))


@pytest.mark.parametrize("case", WORKDAY["cases"], ids=lambda c: c["at"])
def test_workday_vectors(calendar, case):
    assert calendar.trading_day(parse_at(case["at"])) == case["expect"]


def test_vectors_are_many():
    assert len(WORKDAY["cases"]) >= 300


def test_calendar_file_loads(calendar):
    assert (str(calendar.first), str(calendar.last)) == tuple(WORKDAY["calendar_range"])
    listed = [
        line
        for line in CALENDAR_FILE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert len(calendar) == len(listed)


def epoch(*fields, micro=0):
    return datetime(*fields, microsecond=micro, tzinfo=SHANGHAI).timestamp()


def test_now_uses_whole_seconds_and_close_belongs_to_the_day(calendar):
    # 2019-04-30 (Tuesday) is the last trading day before the May Day break.
    assert calendar.trading_day_at(epoch(2019, 4, 30, 15, 0, 0)) == "2019-04-30"
    assert calendar.trading_day_at(epoch(2019, 4, 30, 15, 0, 0, micro=999999)) == "2019-04-30"
    assert calendar.trading_day_at(epoch(2019, 4, 30, 15, 0, 1)) == "2019-05-06"
    assert calendar.trading_day_at(epoch(2019, 5, 5, 10, 0)) == "2019-05-06"


def test_now_agrees_with_at_around_midnight_utc(calendar):
    # 16:00 UTC is midnight in Shanghai: the local date has already changed.
    instant = datetime(2019, 5, 5, 16, 0, tzinfo=timezone.utc).timestamp()
    assert calendar.trading_day_at(instant) == calendar.trading_day(LocalTime(2019, 5, 6, 0, 0, 0))


def test_now_is_a_trading_day(calendar):
    day = date.fromisoformat(calendar.trading_day_now())
    assert calendar.is_trading_day(day)


def test_outside_the_range_only_weekends_are_non_trading(calendar):
    # 2027-01-01 is a Friday: a holiday in China, but outside the file's range.
    assert calendar.trading_day(LocalTime(2027, 1, 1, 10, 0, 0)) == "2027-01-01"
    assert calendar.trading_day(LocalTime(2027, 1, 1, 15, 0, 1)) == "2027-01-04"
    assert calendar.trading_day(LocalTime(1970, 1, 1, 0, 0, 0)) == "1970-01-01"
    # 2199-12-31 is a Tuesday; the answer may lie in year 2200.
    assert calendar.trading_day(LocalTime(2199, 12, 31, 23, 59, 59)) == "2200-01-01"


def test_a_calendar_built_from_dates():
    cal = TradingCalendar(date(2020, 1, 1), date(2020, 12, 31), {date(2020, 1, 1)})
    assert cal.trading_day(LocalTime(2019, 12, 31, 15, 0, 1)) == "2020-01-02"
    assert not cal.is_trading_day(date(2020, 1, 1))


GOOD_HEADER = "# a comment\n# range: 2020-01-01 2020-12-31\n"


def test_parse_calendar_accepts_comments_and_blank_lines():
    cal = parse_calendar(GOOD_HEADER + "\n2020-01-01\n# note\n2020-10-01\n")
    assert len(cal) == 2
    assert cal.range == (date(2020, 1, 1), date(2020, 12, 31))


@pytest.mark.parametrize(
    "text, message",
    [
        ("2020-01-01\n", "no '# range: FIRST LAST'"),
        ("# range: 2020-01-01\n", "no '# range: FIRST LAST'"),
        ("# range: 2020-01-01 2020-13-01\n", "line 1: '# range: FIRST LAST' needs two dates"),
        ("# range: 2020-12-31 2020-01-01\n", "line 1: range starts after it ends"),
        (GOOD_HEADER + "# range: 2020-01-01 2020-12-31\n", "line 3: a second '# range:' line"),
        (GOOD_HEADER + "2020-1-2\n", "line 3: expected a date YYYY-MM-DD, got '2020-1-2'"),
        (GOOD_HEADER + "2020-02-30\n", "line 3: expected a date YYYY-MM-DD"),
        (GOOD_HEADER + "2020-01-02 holiday\n", "line 3: expected a date YYYY-MM-DD"),
        (GOOD_HEADER + "\uff12020-01-02\n", "line 3: expected a date YYYY-MM-DD"),
        (GOOD_HEADER + "2020-01-04\n", "line 3: 2020-01-04 is a weekend day"),
        (GOOD_HEADER + "2020-01-02\n2020-01-02\n", "line 4: 2020-01-02 is listed twice"),
        (GOOD_HEADER + "2021-01-01\n", "line 3: 2021-01-01 is outside the file's range"),
    ],
)
def test_parse_calendar_errors(text, message):
    with pytest.raises(CalendarError) as info:
        parse_calendar(text, "cal.txt")
    assert str(info.value).startswith("cal.txt")
    assert message in str(info.value)


def test_load_calendar_missing_file(tmp_path):
    missing = tmp_path / "missing.txt"
    with pytest.raises(CalendarError, match=f"cannot read {missing}: No such file"):
        load_calendar(str(missing))


def test_load_calendar_directory(tmp_path):
    with pytest.raises(CalendarError, match="cannot read"):
        load_calendar(str(tmp_path))


def test_load_calendar_not_utf8(tmp_path):
    path = tmp_path / "cal.txt"
    path.write_bytes(b"# range: 2020-01-01 2020-12-31\n\xff\n")
    with pytest.raises(CalendarError, match="not UTF-8"):
        load_calendar(str(path))
