"""Generate contracts/vectors/workday.json from exchange-calendars.

The expected answers come straight from the `exchange-calendars` XSHG
calendar, never from a server's code or from the committed calendar file,
so a bug shared by the calendar file and every stack still shows up.

Inside the calendar range (2007-01-01..2026-12-31) a trading day is an
exchange-calendars session; outside it, any Monday to Friday (the contract
rule). Run through `make vectors`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
from importlib.metadata import version
from pathlib import Path

FIRST = dt.date(2007, 1, 1)
LAST = dt.date(2026, 12, 31)
CLOSE = dt.time(15, 0, 0)
SEED = 20190505
DEFAULT_OUTPUT = Path(__file__).with_name("workday.json")

# Hand-annotated cases: why each one is famous or tricky. Their answers are
# still computed from exchange-calendars, so a wrong note cannot slip in.
FAMOUS = [
    ("2019-05-05T10:00", "Sunday; the 2019 article's own example"),
    ("2019-04-30T15:00:00", "close of the last day before May Day 2019: still that day"),
    ("2019-04-30T15:00:01", "one second after close before May Day 2019"),
    ("2019-05-01T09:30", "May Day 2019 holiday (Wednesday)"),
    ("2019-09-30T15:00:01", "after close on the eve of National Day week 2019"),
    ("2019-10-01T10:00", "National Day 2019 (Tuesday), golden week"),
    ("2019-10-04T12:00", "golden week 2019, Friday"),
    ("2019-10-06T23:59:59", "Sunday at the end of golden week 2019"),
    ("2019-10-07T10:00", "Monday still closed: golden week 2019 ran to 7 October"),
    ("2019-10-12T10:00", "Saturday make-up working day 2019: exchange still closed"),
    ("2026-02-13T15:00:01", "after close on the last Friday before Spring Festival 2026"),
    ("2026-02-16T10:00", "Spring Festival 2026 holiday (Monday)"),
    ("2026-02-17T00:00", "Chinese New Year's Day 2026 (Year of the Horse)"),
    ("2026-02-20T15:00", "Spring Festival 2026 holiday, Friday at close"),
    ("2026-02-23T10:00", "Monday after Spring Festival 2026: still closed"),
    ("2020-01-31T10:00", "Spring Festival 2020, extended for COVID-19"),
    ("2020-02-02T10:00", "Sunday before the 2020 reopening"),
    ("2020-02-29T12:00", "leap day 2020 (Saturday)"),
    ("2024-02-29T15:00:01", "leap day 2024 (Thursday) after close"),
    ("2007-01-01T00:00", "first day of the calendar file: New Year 2007"),
    ("2006-12-29T15:00:01", "before the calendar range, Friday after close"),
    ("2006-12-31T10:00", "Sunday before the range; next days are New Year holidays"),
    ("2026-12-31T15:00:00", "last day of the calendar range, at close"),
    ("2026-12-31T15:00:01", "after close on the last day of the range: the next day is outside it"),
    ("2027-01-01T10:00", "outside the calendar range: only weekends are non-trading"),
    ("1970-01-01T00:00", "earliest year the contract accepts"),
    ("2199-12-31T23:59:59", "latest instant the contract accepts"),
]


def load_calendar():
    import exchange_calendars

    calendar = exchange_calendars.get_calendar(
        "XSHG", start=FIRST.isoformat(), end=LAST.isoformat()
    )
    return {ts.date() for ts in calendar.sessions}


def is_trading_day(day: dt.date, sessions: set[dt.date]) -> bool:
    if FIRST <= day <= LAST:
        return day in sessions
    return day.weekday() < 5


def expected(at: dt.datetime, sessions: set[dt.date]) -> dt.date:
    day = at.date()
    if is_trading_day(day, sessions) and at.time() <= CLOSE:
        return day
    day += dt.timedelta(days=1)
    while not is_trading_day(day, sessions):
        day += dt.timedelta(days=1)
    return day


def parse_at(text: str) -> dt.datetime:
    shape = "%Y-%m-%dT%H:%M:%S" if text.count(":") == 2 else "%Y-%m-%dT%H:%M"
    return dt.datetime.strptime(text, shape)


def edge_times(day: dt.date) -> list[str]:
    """The instants around midnight and the close, in both accepted shapes."""
    d = day.isoformat()
    return [
        f"{d}T00:00",
        f"{d}T00:00:00",
        f"{d}T09:30",
        f"{d}T14:59:59",
        f"{d}T15:00",
        f"{d}T15:00:00",
        f"{d}T15:00:01",
        f"{d}T15:01",
        f"{d}T23:59:59",
    ]


def interesting_days(sessions: set[dt.date]) -> list[dt.date]:
    """Days on either side of each holiday block, plus ordinary weeks."""
    days: set[dt.date] = set()
    day = FIRST
    while day <= LAST:
        holiday = day.weekday() < 5 and day not in sessions
        if holiday:
            days.update({day, day - dt.timedelta(days=1), day + dt.timedelta(days=1)})
        day += dt.timedelta(days=1)
    return sorted(days)


def build_cases(sessions: set[dt.date]) -> list[dict]:
    rng = random.Random(SEED)
    cases: list[dict] = []
    seen: set[str] = set()

    def add(at: str, kind: str, note: str | None = None) -> None:
        if at in seen:
            return
        seen.add(at)
        case = {"at": at, "expect": expected(parse_at(at), sessions).isoformat()}
        case["kind"] = kind
        if note:
            case["note"] = note
        cases.append(case)

    for at, note in FAMOUS:
        add(at, "famous", note)

    # An ordinary week (Monday 2019-05-06 to Sunday 2019-05-12) at every edge.
    for offset in range(7):
        for at in edge_times(dt.date(2019, 5, 6) + dt.timedelta(days=offset)):
            add(at, "week-edges")

    # Around holiday blocks: a sample of them, each at every edge.
    around = interesting_days(sessions)
    for day in sorted(rng.sample(around, 24)):
        for at in edge_times(day):
            add(at, "holiday-edges")

    # Uniformly random instants inside the range and a few outside it.
    span = (dt.datetime(2027, 1, 1) - dt.datetime(2007, 1, 1)).total_seconds()
    for _ in range(120):
        instant = dt.datetime(2007, 1, 1) + dt.timedelta(seconds=rng.randrange(int(span)))
        add(instant.strftime("%Y-%m-%dT%H:%M:%S"), "random")
    for year in (1970, 1999, 2006, 2027, 2100, 2199):
        for _ in range(4):
            instant = dt.datetime(year, 1, 1) + dt.timedelta(seconds=rng.randrange(365 * 86400))
            add(instant.strftime("%Y-%m-%dT%H:%M:%S"), "outside-range")
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()
    sessions = load_calendar()
    cases = build_cases(sessions)
    document = {
        "description": (
            "Workday test vectors: GET /workday?at=AT must answer EXPECT. "
            "'at' is Asia/Shanghai local time; answers come from exchange-calendars "
            "(XSHG) inside the calendar range and from the weekend rule outside it."
        ),
        "source": f"exchange-calendars {version('exchange-calendars')} (calendar XSHG)",
        "calendar_range": [FIRST.isoformat(), LAST.isoformat()],
        "generated_by": "make vectors (contracts/vectors/generate.py)",
        "seed": SEED,
        "cases": cases,
    }
    args.output.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {args.output}")


if __name__ == "__main__":
    main()
