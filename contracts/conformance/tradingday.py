"""The workday rule, written independently of every server, for `/workday`
without `at` (the checker needs its own answer for "now").

Rule (contract v1): exchange local time is Asia/Shanghai, a fixed UTC+08:00.
Let D be the date of t. If D is a trading day and t <= D 15:00:00, the answer
is D; otherwise it is the first trading day after D. A trading day is Monday
to Friday and not listed in the calendar file; outside the file's range only
weekends are non-trading.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

CLOSE = dt.time(15, 0, 0)
SHANGHAI = dt.timezone(dt.timedelta(hours=8), "Asia/Shanghai")
DATE_LINE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
RANGE_LINE = re.compile(
    r"#\s*range:\s*([0-9]{4}-[0-9]{2}-[0-9]{2})\s+([0-9]{4}-[0-9]{2}-[0-9]{2})\s*"
)


class CalendarError(ValueError):
    """The calendar file is missing or malformed."""


class TradingCalendar:
    def __init__(self, closed: set, first: dt.date, last: dt.date) -> None:
        self.closed = frozenset(closed)  # non-trading weekdays inside [first, last]
        self.first = first
        self.last = last

    @classmethod
    def load(cls, path: str | Path) -> TradingCalendar:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CalendarError(f"cannot read calendar file {path}: {exc}") from None
        return cls.parse(text, str(path))

    @classmethod
    def parse(cls, text: str, name: str = "calendar") -> TradingCalendar:
        span = None
        days = []
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            where = f"{name} line {number}"
            if line.startswith("#"):
                match = RANGE_LINE.fullmatch(line)
                if match:
                    span = (_date(match.group(1), where), _date(match.group(2), where))
                continue
            if not line:
                continue
            if not DATE_LINE.fullmatch(line):
                raise CalendarError(f"{where}: expected YYYY-MM-DD, got {raw!r}")
            days.append(_date(line, where))
        if span is None:
            raise CalendarError(f"{name}: no '# range: FIRST LAST' line")
        first, last = span
        for day in days:
            if not first <= day <= last:
                raise CalendarError(f"{name}: {day} lies outside the range {first}..{last}")
            if day.weekday() >= 5:
                raise CalendarError(f"{name}: {day} is a weekend day; only weekdays are listed")
        return cls(set(days), first, last)

    def is_trading_day(self, day: dt.date) -> bool:
        if day.weekday() >= 5:
            return False
        if self.first <= day <= self.last:
            return day not in self.closed
        return True

    def workday(self, local: dt.datetime) -> dt.date:
        """The trading day that the exchange-local time `local` belongs to."""
        day = local.date()
        if self.is_trading_day(day) and local.time() <= CLOSE:
            return day
        day += dt.timedelta(days=1)
        while not self.is_trading_day(day):
            day += dt.timedelta(days=1)
        return day


def _date(text: str, where: str) -> dt.date:
    try:
        return dt.date(int(text[0:4]), int(text[5:7]), int(text[8:10]))
    except ValueError:
        raise CalendarError(f"{where}: {text!r} is not a real date") from None


def shanghai_now() -> dt.datetime:
    """Exchange-local wall time now, in whole seconds (the contract's resolution)."""
    now = dt.datetime.now(SHANGHAI).replace(microsecond=0)
    return now.replace(tzinfo=None)
