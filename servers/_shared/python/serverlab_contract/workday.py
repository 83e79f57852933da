"""The trading-calendar file and the workday rule.

The calendar file (``contracts/calendar/xshg-non-trading-weekdays.txt``) has
``#`` comment lines, one of them ``# range: FIRST LAST``, then one
``YYYY-MM-DD`` a line: the non-trading weekdays inside that range. Outside
the range only weekends are non-trading.

Exchange time is Asia/Shanghai, a fixed UTC+08:00 (no DST since 1991, so no
tz database is needed). Dates are handled as proleptic Gregorian ordinals
(``date.toordinal()``). Inside the file's range the answer of every day is
computed once, at load, into a table indexed by ordinal, so a request costs
one index; outside it the rule is applied as written (integer arithmetic and
one set lookup per day).
"""

from __future__ import annotations

import re
import sys
import time
from datetime import date
from typing import FrozenSet, NamedTuple, Optional, Tuple

__all__ = [
    "CalendarError",
    "LocalTime",
    "TradingCalendar",
    "load_calendar",
    "parse_calendar",
]

# Asia/Shanghai is UTC+08:00 all year.
UTC_OFFSET_SECONDS = 8 * 3600
# The market closes at 15:00:00 local time; that second still belongs to D.
CLOSE_SECONDS = 15 * 3600
# date(1970, 1, 1).toordinal()
EPOCH_ORDINAL = 719163
SECONDS_PER_DAY = 86400

_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_RANGE = re.compile(r"#\s*range:\s*(\S+)\s+(\S+)\s*")


class CalendarError(ValueError):
    """The calendar file is missing, unreadable or malformed."""


class LocalTime(NamedTuple):
    """A validated exchange-local time (Asia/Shanghai), whole seconds."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int


def _weekday(ordinal: int) -> int:
    """Monday is 0, as date.weekday(); ordinal 1 (0001-01-01) was a Monday."""
    return (ordinal + 6) % 7


def _parse_date(text: str) -> Optional[date]:
    match = _DATE.fullmatch(text)
    if match is None:
        return None
    try:
        return date(*(int(part) for part in match.groups()))
    except ValueError:
        return None


class TradingCalendar:
    """Non-trading weekdays of one exchange plus the weekend rule.

    Build it with :func:`load_calendar` (from a file) or directly from dates.
    """

    __slots__ = ("first", "last", "_closed", "_table_first", "_until_close", "_after_close")

    def __init__(self, first: date, last: date, non_trading: set[date] | FrozenSet[date]):
        if first > last:
            raise CalendarError(f"range starts after it ends: {first} > {last}")
        self.first = first
        self.last = last
        self._closed = frozenset(d.toordinal() for d in non_trading)
        self._build_table()

    def _build_table(self) -> None:
        """The answer of every day of the range, at or before the close and after it.

        Fast path: a request inside the range costs one tuple index instead of
        the weekday arithmetic, the set lookups of the rule's loop and
        ``date.fromordinal().isoformat()`` (10,292 -> 1,697 instructions on
        CPython 3.13, docs/measurements/python-contract.md).
        The answers come from :meth:`_answer_by_rule`, so table and rule cannot differ.
        """
        self._table_first = self.first.toordinal()
        ordinals = range(self._table_first, self.last.toordinal() + 1)
        # Interned: the ~7,300 days of a 20-year file share ~4,900 answer strings.
        self._until_close = tuple(
            sys.intern(self._answer_by_rule(o, CLOSE_SECONDS)) for o in ordinals
        )
        self._after_close = tuple(
            sys.intern(self._answer_by_rule(o, CLOSE_SECONDS + 1)) for o in ordinals
        )

    def table_days(self) -> FrozenSet[str]:
        """Every answer the table holds, for callers that build their responses once."""
        return frozenset(self._until_close + self._after_close)

    @property
    def range(self) -> Tuple[date, date]:
        return self.first, self.last

    def __len__(self) -> int:
        """Number of listed non-trading weekdays."""
        return len(self._closed)

    def is_trading_day(self, day: date) -> bool:
        return self._is_trading(day.toordinal())

    def _is_trading(self, ordinal: int) -> bool:
        return _weekday(ordinal) < 5 and ordinal not in self._closed

    def _answer_by_rule(self, ordinal: int, seconds_of_day: int) -> str:
        """The rule as written: D if trading and not after the close, else the next trading day."""
        if not (self._is_trading(ordinal) and seconds_of_day <= CLOSE_SECONDS):
            ordinal += 1
            while not self._is_trading(ordinal):
                ordinal += 1
        return date.fromordinal(ordinal).isoformat()

    def day_of(self, ordinal: int, seconds_of_day: int) -> str:
        """The trading day of a local date (as an ordinal) and second of that day."""
        index = ordinal - self._table_first
        if 0 <= index < len(self._until_close):
            if seconds_of_day <= CLOSE_SECONDS:
                return self._until_close[index]
            return self._after_close[index]
        return self._answer_by_rule(ordinal, seconds_of_day)

    def trading_day(self, local: LocalTime) -> str:
        """The trading day (``YYYY-MM-DD``) that a local time belongs to.

        Let D be the date of t: if D is a trading day and t <= D 15:00:00 the
        answer is D, otherwise the first trading day after D.
        """
        ordinal = date(local.year, local.month, local.day).toordinal()
        return self.day_of(ordinal, local.hour * 3600 + local.minute * 60 + local.second)

    def trading_day_at(self, epoch_seconds: float) -> str:
        """The trading day an instant belongs to (seconds since the Unix epoch)."""
        # Whole seconds: 15:00:00.999 is still 15:00:00.
        days, seconds_of_day = divmod(int(epoch_seconds) + UTC_OFFSET_SECONDS, SECONDS_PER_DAY)
        return self.day_of(EPOCH_ORDINAL + days, seconds_of_day)

    def trading_day_now(self) -> str:
        """The trading day the current instant belongs to."""
        return self.trading_day_at(time.time())


def parse_calendar(text: str, source: str = "<calendar>") -> TradingCalendar:
    """Parse calendar text; errors name ``source`` and the line number."""
    first = last = None
    dates = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        where = f"{source}, line {number}"
        if line.startswith("#"):
            match = _RANGE.fullmatch(line)
            if match is None:
                continue
            if first is not None:
                raise CalendarError(f"{where}: a second '# range:' line")
            first, last = (_parse_date(part) for part in match.groups())
            if first is None or last is None:
                raise CalendarError(f"{where}: '# range: FIRST LAST' needs two dates YYYY-MM-DD")
            if first > last:
                raise CalendarError(f"{where}: range starts after it ends")
            continue
        day = _parse_date(line)
        if day is None:
            raise CalendarError(f"{where}: expected a date YYYY-MM-DD, got {line[:40]!r}")
        if day.weekday() >= 5:
            raise CalendarError(f"{where}: {day} is a weekend day; the file lists weekdays only")
        if day in dates:
            raise CalendarError(f"{where}: {day} is listed twice (first on line {dates[day]})")
        dates[day] = number
    if first is None or last is None:
        raise CalendarError(f"{source}: no '# range: FIRST LAST' comment line")
    outside = [d for d in dates if not first <= d <= last]
    if outside:
        day = min(outside)
        raise CalendarError(
            f"{source}, line {dates[day]}: {day} is outside the file's range {first}..{last}"
        )
    return TradingCalendar(first, last, set(dates))


def load_calendar(path: str) -> TradingCalendar:
    """Read and parse a calendar file (once, at start-up)."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise CalendarError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CalendarError(f"{path}: not UTF-8 text ({exc.reason})") from None
    return parse_calendar(text, path)
