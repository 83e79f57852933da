"""What a correct response looks like, as functions returning problems.

Each judge returns a list of human-readable problems ("expected X, got Y");
an empty list means the response is right. Checks combine them, so a wrong
status and a wrong body are both reported at once.
"""

from __future__ import annotations

import datetime as dt
import re

from .rawhttp import Response

CONTENT_TYPE = "text/plain; charset=utf-8"
N_ERROR = "n must be an integer between 1 and 100"
AT_ERROR = "at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]"

HELLO_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}")
HELLO_TIME_LENGTH = len("YYYY-MM-DD HH:MM:SS.mmm")
DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
IMF_FIXDATE = re.compile(
    r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), ([0-9]{2}) "
    r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ([0-9]{4}) "
    r"([0-9]{2}):([0-9]{2}):([0-9]{2}) GMT"
)


def show(data: bytes | str, limit: int = 60) -> str:
    """A short printable form of a body for messages."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(data)} bytes)"


def status_problems(response: Response, status: int) -> list:
    if response.status == status:
        return []
    return [f"expected status {status}, got {response.status} (body {show(response.body)})"]


def content_type_problems(response: Response) -> list:
    values = response.header_values("Content-Type")
    if values == [CONTENT_TYPE]:
        return []
    if not values:
        return [f"expected Content-Type {CONTENT_TYPE!r}, got none"]
    return [f"expected Content-Type {CONTENT_TYPE!r}, got {', '.join(map(repr, values))}"]


def hello_prefix(display_name: str) -> str:
    return f"Hello World, from {display_name}! "


def hello_body_problems(body: bytes, display_name: str) -> list:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return [f"expected a UTF-8 hello body, got {show(body)}"]
    prefix = hello_prefix(display_name)
    if not text.startswith(prefix):
        return [f"expected body {prefix + 'YYYY-MM-DD HH:MM:SS.mmm'!r}, got {show(text, 80)}"]
    stamp = text[len(prefix) :]
    if not HELLO_TIME.fullmatch(stamp) or parse_hello_time(stamp) is None:
        return [f"expected UTC time as YYYY-MM-DD HH:MM:SS.mmm after the name, got {stamp!r}"]
    return []


def parse_hello_time(text: str) -> dt.datetime | None:
    """The UTC time of a hello body (or of the bare stamp), None if malformed."""
    stamp = text[-HELLO_TIME_LENGTH:]
    if not HELLO_TIME.fullmatch(stamp):
        return None
    try:
        moment = dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f")
    except ValueError:
        return None
    return moment.replace(tzinfo=dt.timezone.utc)


def hello_problems(response: Response, display_name: str) -> list:
    problems = status_problems(response, 200) + content_type_problems(response)
    if response.status == 200:
        problems += hello_body_problems(response.body, display_name)
    return problems


def kb_problems(response: Response, kb: int) -> list:
    problems = status_problems(response, 200) + content_type_problems(response)
    if response.status != 200:
        return problems
    size = kb * 1000
    if len(response.body) != size:
        problems.append(f"expected a body of {size} bytes, got {len(response.body)}")
    if response.body.strip(b"X"):
        problems.append(f"expected only ASCII 'X' in the body, got {show(response.body)}")
    return problems


def text_problems(response: Response, status: int, expected: str) -> list:
    problems = status_problems(response, status) + content_type_problems(response)
    if response.status == status and response.body != expected.encode("utf-8"):
        problems.append(f"expected body {expected!r}, got {show(response.body)}")
    return problems


def n_error_problems(response: Response) -> list:
    return text_problems(response, 400, N_ERROR)


def at_error_problems(response: Response) -> list:
    return text_problems(response, 400, AT_ERROR)


def status_only_problems(status: int):
    def judge(response: Response) -> list:
        return status_problems(response, status)

    return judge


def parse_imf_fixdate(value: str) -> dt.datetime | None:
    """Parse an IMF-fixdate (RFC 9110 section 5.6.7); None unless exact and consistent."""
    match = IMF_FIXDATE.fullmatch(value)
    if not match:
        return None
    weekday, day, month, year, hour, minute, second = match.groups()
    try:
        moment = dt.datetime(
            int(year),
            MONTH_NAMES.index(month) + 1,
            int(day),
            int(hour),
            int(minute),
            int(second),
            tzinfo=dt.timezone.utc,
        )
    except ValueError:
        return None
    if DAY_NAMES[moment.weekday()] != weekday:
        return None
    return moment


def format_imf_fixdate(moment: dt.datetime) -> str:
    moment = moment.astimezone(dt.timezone.utc)
    return (
        f"{DAY_NAMES[moment.weekday()]}, {moment.day:02d} {MONTH_NAMES[moment.month - 1]} "
        f"{moment.year:04d} {moment:%H:%M:%S} GMT"
    )
