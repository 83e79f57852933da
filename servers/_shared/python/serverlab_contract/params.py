"""Strict parsing of the query parameters ``n`` and ``at``.

Query strings are decoded as application/x-www-form-urlencoded
(``urllib.parse.parse_qsl``): ``+`` is a space, percent-escapes are decoded
as UTF-8 (invalid sequences become U+FFFD), a name without ``=`` has an empty
value, and a malformed escape such as ``%ZZ`` stays as it is. None of those
odd results is a valid value, so they all end up as 400.

Digits are checked against ``[0-9]`` explicitly: ``str.isdigit`` and ``int``
also accept non-ASCII digits (``int("\\u0665") == 5``).

Per-request cost: a query with nothing to decode (no ``%``, no ``+``), which
is every query a benchmark sends, is split with ``str.partition`` instead of
going through ``parse_qsl``, and so is one pair whose escapes are all of
ASCII characters (``n=%31``); anything else takes the general path. ``at`` is
checked field by field at fixed positions against tables of every valid
spelling, built at import, instead of a regular expression.
``tests/test_contract_fast_paths.py`` holds both paths to the same answers.
"""

from __future__ import annotations

from datetime import date
from typing import Dict, List, Optional, Sequence, Tuple
from urllib.parse import parse_qsl

from .workday import LocalTime

__all__ = [
    "AT_ERROR",
    "AT_ERROR_BODY",
    "N_ERROR",
    "N_ERROR_BODY",
    "BadRequest",
    "InvalidAt",
    "InvalidN",
    "at_from_query",
    "at_from_values",
    "n_from_query",
    "n_from_values",
    "parse_at",
    "parse_n",
    "query_values",
    "single_value",
]

N_ERROR = "n must be an integer between 1 and 100"
AT_ERROR = "at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]"
N_ERROR_BODY = N_ERROR.encode("ascii")
AT_ERROR_BODY = AT_ERROR.encode("ascii")

MIN_YEAR = 1970
MAX_YEAR = 2199


class BadRequest(ValueError):
    """An invalid parameter; ``body`` is the exact 400 response body."""

    body: bytes = b"Bad Request"

    def __str__(self) -> str:
        return self.body.decode("ascii")


class InvalidN(BadRequest):
    body = N_ERROR_BODY


class InvalidAt(BadRequest):
    body = AT_ERROR_BODY


def valid_n(value: str) -> Optional[int]:
    """A decoded ``n`` value as an int, or None unless it is 1 to 3 ASCII digits with value 1..100.

    The router's fast path: a bad ``n`` is answered without raising an exception
    (``n=0`` on CPython 3.13: 10,547 -> 1,877 instructions).
    """
    # Fast path: isdigit() and isascii() together are exactly [0-9]+ (the
    # only ASCII characters isdigit() accepts), cheaper than a regex fullmatch
    # (3,449 -> 1,983 instructions on CPython 3.13).
    if len(value) <= 3 and value.isdigit() and value.isascii():
        n = int(value)
        if 1 <= n <= 100:
            return n
    return None


def parse_n(value: str) -> int:
    """A decoded ``n`` value: 1 to 3 ASCII digits with value 1..100, else InvalidN."""
    n = valid_n(value)
    if n is None:
        raise InvalidN()
    return n


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_in_month(year: int, month: int) -> int:
    return (31, 29 if _is_leap(year) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]


# The fixed-width fields of ``at`` (``YYYY-MM-DDTHH:MM`` or ``YYYY-MM-DDTHH:MM:SS``)
# and every valid spelling of each, built once at import. Looking a field up
# both checks it (digits, range, separator) and converts it, so parsing is
# four slices and four dict lookups instead of a regex match and int() calls
# (18,038 -> 6,471 instructions on CPython 3.13, docs/measurements/python-contract.md).
# "2019-05" -> (year, month, ordinal of the day before the 1st, days in month)
_YEAR_MONTHS: Dict[str, Tuple[int, int, int, int]] = {
    f"{year:04d}-{month:02d}": (
        year,
        month,
        date(year, month, 1).toordinal() - 1,
        _days_in_month(year, month),
    )
    for year in range(MIN_YEAR, MAX_YEAR + 1)
    for month in range(1, 13)
}
# "-05" -> 5 (checked against the month's length afterwards)
_DAYS: Dict[str, int] = {f"-{day:02d}": day for day in range(1, 32)}
# "T10:00" -> (hour, minute, seconds since midnight)
_CLOCKS: Dict[str, Tuple[int, int, int]] = {
    f"T{hour:02d}:{minute:02d}": (hour, minute, hour * 3600 + minute * 60)
    for hour in range(24)
    for minute in range(60)
}
# "" (no seconds) or ":SS" -> seconds
_SECONDS: Dict[str, int] = {"": 0, **{f":{second:02d}": second for second in range(60)}}


def _at_fields(
    value: str,
) -> Optional[Tuple[Tuple[int, int, int, int], int, Tuple[int, int, int], int]]:
    """The table entries of a valid ``at``'s fields; None for anything else."""
    year_month = _YEAR_MONTHS.get(value[:7])
    day = _DAYS.get(value[7:10])
    clock = _CLOCKS.get(value[10:16])
    second = _SECONDS.get(value[16:])
    if year_month is None or day is None or clock is None or second is None:
        return None
    _, _, _, days_in_month = year_month
    if day > days_in_month:
        return None  # 2019-02-29, 2019-04-31
    return year_month, day, clock, second


def parse_at(value: str) -> LocalTime:
    """A decoded ``at`` value: ``YYYY-MM-DDTHH:MM`` or ``YYYY-MM-DDTHH:MM:SS``.

    Exactly that shape (no offset, no fraction), a real date, year
    1970..2199, hour 0..23, minute and second 0..59; else InvalidAt.
    """
    fields = _at_fields(value)
    if fields is None:
        raise InvalidAt()
    (year, month, _, _), day, (hour, minute, _), second = fields
    return LocalTime(year, month, day, hour, minute, second)


def at_instant(value: str) -> Optional[Tuple[int, int]]:
    """A decoded ``at`` as (date ordinal, seconds since local midnight), None when invalid.

    The router's fast path: what the workday table is indexed by, with no
    LocalTime, no ``date`` and, for a bad ``at``, no exception per request.
    The lookups of :func:`_at_fields`, inline: a call and a tuple fewer.
    """
    year_month = _YEAR_MONTHS.get(value[:7])
    day = _DAYS.get(value[7:10])
    clock = _CLOCKS.get(value[10:16])
    second = _SECONDS.get(value[16:])
    if year_month is None or day is None or clock is None or second is None:
        return None
    _, _, day_before_first, days_in_month = year_month
    if day > days_in_month:
        return None
    return day_before_first + day, clock[2] + second


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


# "%31" -> "1", "%3a" and "%3A" -> ":": every escape of an ASCII character
# (00-7F), in both hex cases. An ASCII byte decodes to itself in UTF-8
# whatever its neighbours are, so these need no UTF-8 decoder.
_ASCII_ESCAPES: Dict[str, str] = {
    f"%{high}{low}": chr(int(high + low, 16))
    for high in "01234567"
    for low in "0123456789abcdefABCDEF"
}


def _unquote_ascii(value: str) -> Optional[str]:
    """``value`` with its escapes of ASCII characters decoded; None if it has any other ``%``.

    The same as ``unquote`` for such a value. A non-ASCII escape (a UTF-8
    sequence, an invalid byte) or a malformed one (``%ZZ``, a trailing
    ``%3``) gives None and is left to ``unquote``.
    """
    decoded = ""
    start = 0
    at = value.find("%")
    while at >= 0:
        char = _ASCII_ESCAPES.get(value[at : at + 3])
        if char is None:
            return None
        decoded += value[start:at] + char
        start = at + 3
        at = value.find("%", start)
    return decoded + value[start:]


def query_value(raw_query: str, name: str, error: type = BadRequest) -> Optional[str]:
    """The one decoded value of ``name`` in a raw query; None when absent; ``error`` if repeated.

    The same answer as ``single_value(query_values(raw_query).get(name), error)``.
    """
    if "%" in raw_query:
        if "+" not in raw_query and "&" not in raw_query:
            # Fast path: one pair whose escapes are all of ASCII characters
            # (n=%31). A value that is one escape is one table lookup, any
            # other goes through _unquote_ascii. Inline rather than a
            # function of its own: the call alone cost a third of the path.
            # (?n=%31 with parse_qsl and a dict of lists: 39,382 -> 4,893
            # instructions on CPython 3.13, docs/measurements/python-contract.md.)
            key, _, value = raw_query.partition("=")
            decoded = _ASCII_ESCAPES.get(value) or _unquote_ascii(value)
            if decoded is not None and "%" not in key:
                return decoded if key == name else None
        # An escaped name, several pairs, '+', a non-ASCII or malformed escape.
        return single_value(query_values(raw_query).get(name), error)
    if "+" in raw_query:
        # Something to decode: the general form parser.
        return single_value(query_values(raw_query).get(name), error)
    # Fast path: with no escapes and no '+', form-decoding is only splitting
    # on '&' and the first '=' (parse_qsl skips empty pairs). It saves
    # parse_qsl's per-pair unquote calls and the dict of lists
    # (?at=...: 17,351 -> 3,013 instructions on CPython 3.13).
    if "&" not in raw_query:
        key, _, value = raw_query.partition("=")
        return value if key == name and raw_query else None
    found = None
    for pair in raw_query.split("&"):
        key, _, value = pair.partition("=")
        if key == name and pair:
            if found is not None:
                raise error()
            found = value
    return found


def n_from_query(raw_query: str) -> Optional[int]:
    """``n`` from a raw query string; None means hello. Raises InvalidN."""
    if not raw_query:
        return None
    value = query_value(raw_query, "n", InvalidN)
    return parse_n(value) if value else None


def at_from_query(raw_query: str) -> Optional[LocalTime]:
    """``at`` from a raw query string; None means now. Raises InvalidAt."""
    if not raw_query:
        return None
    value = query_value(raw_query, "at", InvalidAt)
    return None if value is None else parse_at(value)
