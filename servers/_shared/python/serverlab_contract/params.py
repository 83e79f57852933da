"""Strict parsing of the query parameters ``n`` and ``at``.

Query strings are decoded as application/x-www-form-urlencoded
(``urllib.parse.parse_qsl``): ``+`` is a space, percent-escapes are decoded
as UTF-8 (invalid sequences become U+FFFD), a name without ``=`` has an empty
value, and a malformed escape such as ``%ZZ`` stays as it is. None of those
odd results is a valid value, so they all end up as 400.

Digits are checked against ``[0-9]`` explicitly: ``str.isdigit`` and ``int``
also accept non-ASCII digits (``int("\\u0665") == 5``).
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence
from urllib.parse import parse_qsl

from .workday import LocalTime

N_ERROR = "n must be an integer between 1 and 100"
AT_ERROR = "at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]"
N_ERROR_BODY = N_ERROR.encode("ascii")
AT_ERROR_BODY = AT_ERROR.encode("ascii")

MIN_YEAR = 1970
MAX_YEAR = 2199

_N = re.compile(r"[0-9]{1,3}")
_AT = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?")
_DAYS_IN_MONTH = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class BadRequest(ValueError):
    """An invalid parameter; ``body`` is the exact 400 response body."""

    body: bytes = b"Bad Request"

    def __str__(self) -> str:
        return self.body.decode("ascii")


class InvalidN(BadRequest):
    body = N_ERROR_BODY


class InvalidAt(BadRequest):
    body = AT_ERROR_BODY


def parse_n(value: str) -> int:
    """A decoded ``n`` value: 1 to 3 ASCII digits with value 1..100."""
    if _N.fullmatch(value) is None:
        raise InvalidN()
    n = int(value)
    if not 1 <= n <= 100:
        raise InvalidN()
    return n


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def parse_at(value: str) -> LocalTime:
    """A decoded ``at`` value: ``YYYY-MM-DDTHH:MM`` or ``YYYY-MM-DDTHH:MM:SS``.

    Exactly that shape (no offset, no fraction), a real date, year
    1970..2199, hour 0..23, minute and second 0..59.
    """
    match = _AT.fullmatch(value)
    if match is None:
        raise InvalidAt()
    year, month, day, hour, minute = (int(part) for part in match.groups()[:5])
    second = int(match.group(6) or 0)
    if not (MIN_YEAR <= year <= MAX_YEAR and 1 <= month <= 12 and day >= 1):
        raise InvalidAt()
    days = 29 if month == 2 and _is_leap(year) else _DAYS_IN_MONTH[month]
    if day > days or hour > 23 or minute > 59 or second > 59:
        raise InvalidAt()
    return LocalTime(year, month, day, hour, minute, second)


def query_values(raw_query: str) -> Dict[str, List[str]]:
    """Decode a raw query string (without ``?``) into name -> list of values."""
    params: Dict[str, List[str]] = {}
    if raw_query:
        for name, value in parse_qsl(raw_query, keep_blank_values=True):
            params.setdefault(name, []).append(value)
    return params


def single_value(values: Optional[Sequence[str]], error: type = BadRequest) -> Optional[str]:
    """The one value of a parameter, None when absent; ``error`` if repeated."""
    if not values:
        return None
    if len(values) > 1:
        raise error()
    return values[0]


def n_from_values(values: Optional[Sequence[str]]) -> Optional[int]:
    """``n`` from its decoded values; None means hello (absent or empty)."""
    value = single_value(values, InvalidN)
    if not value:
        return None
    return parse_n(value)


def at_from_values(values: Optional[Sequence[str]]) -> Optional[LocalTime]:
    """``at`` from its decoded values; None means now. An empty ``at`` is 400."""
    value = single_value(values, InvalidAt)
    if value is None:
        return None
    return parse_at(value)


def n_from_query(raw_query: str) -> Optional[int]:
    """``n`` from a raw query string; None means hello. Raises InvalidN."""
    if not raw_query:
        return None
    return n_from_values(query_values(raw_query).get("n"))


def at_from_query(raw_query: str) -> Optional[LocalTime]:
    """``at`` from a raw query string; None means now. Raises InvalidAt."""
    if not raw_query:
        return None
    return at_from_values(query_values(raw_query).get("at"))
