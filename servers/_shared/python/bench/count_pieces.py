"""Instructions per call of each piece of the per-request path, the old way and the new way.

The old way is ``tests/contract_reference.py`` (the per-request path before
the fast paths, kept as the test oracle), the new way the package. Like
``count_steps.py``: one process under callgrind (``scripts/count_instructions.py``'s
``callgrind_steps``), a dump before each ``os.getppid()`` between the pieces,
2,000 calls each, hash seed fixed; the last piece (an empty lambda) is the
loop's and the call's own cost.

    $(pyenv root)/versions/3.13.0/bin/python3.13 servers/_shared/python/bench/count_pieces.py
"""

from __future__ import annotations

import gc
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[3]
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent / "tests"),
                str(REPO_ROOT / "scripts")]  # fmt: skip

import contract_reference as old  # noqa: E402
from serverlab_contract import DateCache, Hello, InvalidAt, InvalidN, Router, load_calendar  # noqa: E402
from serverlab_contract.params import at_instant, query_value, valid_n  # noqa: E402
from serverlab_contract.responses import STATUS_LINES, _response  # noqa: E402

import contract_bench  # noqa: E402
from count_instructions import callgrind_steps  # noqa: E402 (scripts/)
from count_steps import MARKER  # noqa: E402

CALLS = 2000
CALENDAR = contract_bench.calendar_path()
SUNDAY = 737184  # 2019-05-05, during the May Day break


def pieces():
    """(old way, new way) pairs, then the empty piece."""
    calendar = load_calendar(CALENDAR)
    with open(CALENDAR, encoding="utf-8") as handle:
        closed = old.closed_ordinals(handle.read())
    router = Router("Python bjoern", calendar)
    hello = Hello("Python bjoern")
    dates = DateCache()
    response = router.respond("GET", "/workday", "")

    def old_bad_n():
        try:
            old.parse_n("0")
        except old.Invalid as exc:
            return exc.body

    def old_wrap(r):
        headers = list(r.headers)
        headers.append(("Date", dates.value()))
        return f"{r.status} {old.REASONS[r.status]}", headers, [r.body]

    def new_wrap(r):
        status, headers, body = r
        return STATUS_LINES[status], [*headers, ("Date", dates.value())], [body]

    at = "2019-05-05T10:00"
    return [
        ("query n=1: parse_qsl + dict of lists", lambda: old.n_from_query("n=1")),
        ("query_value", lambda: valid_n(query_value("n=1", "n", InvalidN))),
        ("query n=%31: parse_qsl + dict of lists", lambda: old.n_from_query("n=%31")),
        ("query_value, ASCII escape table", lambda: valid_n(query_value("n=%31", "n", InvalidN))),
        ("query at=: parse_qsl + dict of lists", lambda: old.query_values("at=" + at).get("at")),
        ("query_value", lambda: query_value("at=" + at, "at", InvalidAt)),
        ("n '1': regex + int", lambda: old.parse_n("1")),
        ("isdigit/isascii + int", lambda: valid_n("1")),
        ("bad n '0': raise + catch", old_bad_n),
        ("None, no exception", lambda: valid_n("0")),
        ("at: regex + int() + checks", lambda: old.parse_at(at)),
        ("fixed-width table lookups", lambda: at_instant(at)),
        ("workday: the rule + isoformat", lambda: old.trading_day(closed, SUNDAY, 36000)),
        ("the table", lambda: calendar.day_of(SUNDAY, 36000)),
        ("hello body: gmtime + format", lambda: old.hello_body("x", time.time_ns() // 1_000_000)),
        ("per-second prefix + millis", lambda: hello.body()),
        ("200 response: headers built", lambda: _response(200, b"2019-05-06", False)),
        ("prebuilt, looked up", lambda: router._day_responses.get("2019-05-06")[False]),
        ("WSGI wrap: list + append + f-string status", lambda: old_wrap(response)),
        ("list display + STATUS_LINES", lambda: new_wrap(response)),
        ("empty lambda (loop + call)", lambda: None),
    ]


def run_steps() -> None:
    found = pieces()
    gc.collect()
    gc.disable()  # as in count_steps.py
    for _, piece in found:
        os.getppid()
        for _ in range(CALLS):
            piece()
    os.getppid()


def main() -> None:
    if sys.argv[1:] == ["--run"]:
        run_steps()
        return
    names = [name for name, _ in pieces()]
    command = [sys.executable, __file__, "--run"]
    _, counts = callgrind_steps(command, MARKER, env={"PYTHONHASHSEED": "0"})
    per_call = [count / CALLS for count in counts[1 : 1 + len(names)]]
    empty = per_call[-1]
    print(
        f"# {sys.version.split()[0]}, instructions per call, loop and call ({empty:.0f}) taken off"
    )
    for i in range(0, len(names) - 1, 2):
        before, after = per_call[i] - empty, per_call[i + 1] - empty
        print(f"{names[i]}\t{names[i + 1]}\t{before:.0f}\t{after:.0f}\t{before - after:.0f}")


if __name__ == "__main__":
    main()
