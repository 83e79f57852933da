"""The per-request path as it was before the fast paths, kept as the oracle.

``test_contract_fast_paths.py`` holds the package to these answers: the same
status, headers and body for every input. This is the straightforward
version of each rule (``parse_qsl``, regular expressions, the workday rule
applied per request, headers built per response); change it only when the
contract changes.
"""

import re
from datetime import date
from urllib.parse import parse_qsl

from serverlab_contract import (
    ALLOW,
    AT_ERROR_BODY,
    CONTENT_TYPE,
    METHOD_NOT_ALLOWED_BODY,
    N_ERROR_BODY,
    NOT_FOUND_BODY,
    REASONS,
    hello_text,
)

_N = re.compile(r"[0-9]{1,3}")
_AT = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?")
_DAYS_IN_MONTH = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
CLOSE_SECONDS = 15 * 3600


class Invalid(Exception):
    def __init__(self, body):
        super().__init__(body)
        self.body = body


def query_values(raw_query):
    params = {}
    if raw_query:
        for name, value in parse_qsl(raw_query, keep_blank_values=True):
            params.setdefault(name, []).append(value)
    return params


def single_value(values, body):
    if not values:
        return None
    if len(values) > 1:
        raise Invalid(body)
    return values[0]


def parse_n(value):
    if _N.fullmatch(value) is None:
        raise Invalid(N_ERROR_BODY)
    n = int(value)
    if not 1 <= n <= 100:
        raise Invalid(N_ERROR_BODY)
    return n


def parse_at(value):
    """(year, month, day, hour, minute, second) of a valid ``at``."""
    match = _AT.fullmatch(value)
    if match is None:
        raise Invalid(AT_ERROR_BODY)
    year, month, day, hour, minute = (int(part) for part in match.groups()[:5])
    second = int(match.group(6) or 0)
    if not (1970 <= year <= 2199 and 1 <= month <= 12 and day >= 1):
        raise Invalid(AT_ERROR_BODY)
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = 29 if month == 2 and leap else _DAYS_IN_MONTH[month]
    if day > days or hour > 23 or minute > 59 or second > 59:
        raise Invalid(AT_ERROR_BODY)
    return year, month, day, hour, minute, second


def n_from_query(raw_query):
    """n, or None for hello; raises Invalid."""
    value = single_value(query_values(raw_query).get("n"), N_ERROR_BODY)
    return parse_n(value) if value else None


def at_from_query(raw_query):
    """parse_at's fields, or None for now; raises Invalid."""
    value = single_value(query_values(raw_query).get("at"), AT_ERROR_BODY)
    return None if value is None else parse_at(value)


def closed_ordinals(calendar_text):
    """The listed non-trading weekdays of a calendar file, as date ordinals."""
    return frozenset(
        date.fromisoformat(line.strip()).toordinal()
        for line in calendar_text.splitlines()
        if line.strip() and not line.startswith("#")
    )


def trading_day(closed, ordinal, seconds_of_day):
    """The workday rule applied per request, as the calendar did before its table."""

    def trading(o):
        return (o + 6) % 7 < 5 and o not in closed

    if not (trading(ordinal) and seconds_of_day <= CLOSE_SECONDS):
        ordinal += 1
        while not trading(ordinal):
            ordinal += 1
    return date.fromordinal(ordinal).isoformat()


def trading_day_now(closed, epoch_seconds):
    days, seconds = divmod(int(epoch_seconds) + 8 * 3600, 86400)
    return trading_day(closed, 719163 + days, seconds)


def hello_body(display_name, epoch_ms):
    # The package's own straightforward path, formatted on every call (its format is
    # pinned by test_contract_responses.py); the fast path is Hello.
    return hello_text(display_name, epoch_ms).encode("ascii")


def response(status, body, head, *extra):
    """(status, headers, body) with headers built for this response."""
    headers = (("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(body)))) + extra
    return status, headers, b"" if head else body


def respond(display_name, closed, method, path, raw_query, now_ms):
    """The router's answer at the instant ``now_ms`` (milliseconds since the epoch)."""
    if path not in ("/", "/workday"):
        return response(404, NOT_FOUND_BODY, method == "HEAD")
    if method not in ("GET", "HEAD"):
        return response(405, METHOD_NOT_ALLOWED_BODY, False, ("Allow", ALLOW))
    head = method == "HEAD"
    try:
        if path == "/":
            n = n_from_query(raw_query)
            body = hello_body(display_name, now_ms) if n is None else b"X" * (n * 1000)
        else:
            at = at_from_query(raw_query)
            if at is None:
                day = trading_day_now(closed, now_ms // 1000)
            else:
                year, month, day_of_month, hour, minute, second = at
                ordinal = date(year, month, day_of_month).toordinal()
                day = trading_day(closed, ordinal, hour * 3600 + minute * 60 + second)
            body = day.encode("ascii")
    except Invalid as exc:
        return response(400, exc.body, head)
    return response(200, body, head)


def status_line(status):
    return f"{status} {REASONS[status]}"
