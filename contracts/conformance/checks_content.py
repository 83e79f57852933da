"""Checks of what the bodies say: hello, n-KB bodies and the workday rule."""

from __future__ import annotations

import datetime as dt
import random
import time
from concurrent.futures import ThreadPoolExecutor

from . import expect
from .context import (
    NETWORK_ERRORS,
    Context,
    Failure,
    Outcome,
    describe_error,
    failed,
    guarded,
    passed,
    verdict,
)
from .tradingday import shanghai_now

HELLO_CLOCK_TOLERANCE = dt.timedelta(seconds=2)  # contract: within 2 s of the checker
HELLO_SAMPLES = 50  # a server trimming trailing zeros (".12" for ".120") shows in ~10%
RANDOM_N_COUNT = 20
VECTOR_WORKERS = 4  # keep-alive connections shared by the workday vectors


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


# -- hello ------------------------------------------------------------------

HELLO_IDS = ("hello-status", "hello-content-type", "hello-body", "hello-clock")


def check_hello(ctx: Context) -> list:
    """GET /: status, Content-Type, exact body and a timestamp close to our clock."""
    before = utc_now()
    try:
        response = ctx.fetch("/")
    except NETWORK_ERRORS as exc:
        return [failed(check_id, describe_error(exc)) for check_id in HELLO_IDS]
    after = utc_now()
    return [
        verdict("hello-status", expect.status_problems(response, 200), "200"),
        verdict(
            "hello-content-type",
            expect.content_type_problems(response),
            repr(expect.CONTENT_TYPE),
        ),
        verdict(
            "hello-body",
            expect.hello_body_problems(response.body, ctx.display_name),
            expect.show(response.body, 80),
        ),
        _hello_clock(response.text, before, after),
    ]


def _hello_clock(body: str, before: dt.datetime, after: dt.datetime) -> Outcome:
    stamp = expect.parse_hello_time(body)
    if stamp is None:
        return failed(
            "hello-clock",
            "expected a YYYY-MM-DD HH:MM:SS.mmm time at the end of the body, "
            f"got {expect.show(body)}",
        )
    # The stamp is truncated to milliseconds; the window covers the request.
    if stamp < before - HELLO_CLOCK_TOLERANCE or stamp > after + HELLO_CLOCK_TOLERANCE:
        offset = (stamp - before).total_seconds()
        return failed(
            "hello-clock",
            f"expected UTC time within 2 s of the checker's clock ({before:%Y-%m-%d %H:%M:%S}), "
            f"got {stamp:%Y-%m-%d %H:%M:%S.%f} ({offset:+.3f} s)",
        )
    return passed(
        "hello-clock", f"{(stamp - before).total_seconds():+.3f} s from the checker's clock"
    )


def check_hello_millis(ctx: Context) -> list:
    """Many hellos: the millisecond field always has 3 digits.

    One hello says little: a server printing ".12" for ".120" is right 90% of
    the time (the 2017 original used .NET's "FFF", which does just that).
    """

    def run() -> str:
        bad = []
        with ctx.client() as client:
            for _ in range(HELLO_SAMPLES):
                stamp = client.get("/").text.rpartition("! ")[2]
                if not expect.HELLO_TIME.fullmatch(stamp):
                    bad.append(stamp)
        if bad:
            raise Failure(
                f"expected every time as YYYY-MM-DD HH:MM:SS.mmm (3-digit milliseconds), "
                f"got {bad[0]!r} in {len(bad)} of {HELLO_SAMPLES} hellos"
            )
        return f"{HELLO_SAMPLES} hellos, all with 3-digit milliseconds"

    return [guarded("hello-millis", run)]


def check_hello_not_cached(ctx: Context) -> list:
    """Two hellos 50 ms apart carry advancing timestamps."""

    def run() -> str:
        with ctx.client() as client:
            first = client.get("/").text
            time.sleep(0.05)
            second = client.get("/").text
        t1, t2 = expect.parse_hello_time(first), expect.parse_hello_time(second)
        if t1 is None or t2 is None:
            raise Failure(
                f"expected two hellos with timestamps, "
                f"got {expect.show(first)} and {expect.show(second)}"
            )
        if t2 <= t1:
            raise Failure(
                "expected the second hello (50 ms later) to carry a later time, "
                f"got {first!r} then {second!r}"
            )
        return f"timestamps advanced by {(t2 - t1).total_seconds() * 1000:.0f} ms"

    return [guarded("hello-not-cached", run)]


# -- n-KB bodies ----------------------------------------------------------------


def _target(path: str, raw_query: str) -> str:
    return f"{path}?{raw_query}" if raw_query else path


def _run_cases(ctx: Context, cases: list) -> list:
    """Run (check_id, target, judge, pass_detail) cases on one keep-alive client."""
    outcomes = []
    with ctx.client() as client:
        for check_id, target, judge, detail in cases:
            try:
                response = client.get(target)
            except NETWORK_ERRORS as exc:
                outcomes.append(failed(check_id, f"GET {target}: {describe_error(exc)}"))
                continue
            outcomes.append(verdict(check_id, judge(response), detail))
    return outcomes


def _vector_cases(label: str, path: str, vectors, judge, detail) -> list:
    """One (check_id, target, judge, pass_detail) case per vector of inputs.json.

    `judge(response, vector)` returns the problems; `detail` is the pass
    detail, or a function of the vector that returns it.
    """
    return [
        (
            f"{label}[{vector.raw}]",
            _target(path, vector.raw),
            lambda r, vector=vector: judge(r, vector),
            detail(vector) if callable(detail) else detail,
        )
        for vector in vectors
    ]


def check_n_vectors(ctx: Context) -> list:
    """Every `n` vector of inputs.json: valid sizes, hello cases, each bad input."""
    name = ctx.display_name
    inputs = ctx.inputs
    cases = (
        _vector_cases(
            "n-valid",
            "/",
            inputs.n_valid,
            lambda r, v: expect.kb_problems(r, v.kb),
            lambda v: f"200, {v.kb * 1000} bytes of X",
        )
        + _vector_cases(
            "n-hello",
            "/",
            inputs.n_hello,
            lambda r, v: expect.hello_problems(r, name),
            "200, hello",
        )
        + _vector_cases(
            "n-invalid",
            "/",
            inputs.n_invalid,
            lambda r, v: expect.n_error_problems(r),
            f"400 {expect.N_ERROR!r}",
        )
    )
    return _run_cases(ctx, cases)


def check_n_random(ctx: Context) -> list:
    """20 random sizes in 1..100 (seeded, so a failure can be replayed)."""
    values = random.Random(ctx.seed).sample(range(1, 101), RANDOM_N_COUNT)
    cases = [
        (f"n-random[n={n}]", f"/?n={n}", lambda r, n=n: expect.kb_problems(r, n), "")
        for n in values
    ]
    failures = [o for o in _run_cases(ctx, cases) if not o.ok]
    if failures:
        summary = (
            f"expected {RANDOM_N_COUNT}/{RANDOM_N_COUNT} random n right (seed {ctx.seed}), "
            f"got {len(failures)} wrong, each listed as n-random[n=...]"
        )
        return [failed("n-random", summary)] + failures
    return [
        passed(
            "n-random",
            f"{RANDOM_N_COUNT}/{RANDOM_N_COUNT} (seed {ctx.seed}): {', '.join(map(str, values))}",
        )
    ]


# -- workday ----------------------------------------------------------------


def _workday_case(client, case) -> list:
    target = f"/workday?at={case.at}"
    try:
        response = client.get(target)
    except NETWORK_ERRORS as exc:
        return [f"GET {target}: {describe_error(exc)}"]
    problems = expect.text_problems(response, 200, case.expect)
    if problems and case.note:
        problems.append(f"({case.note})")
    return problems


def _workday_chunk(ctx: Context, numbered: list) -> list:
    with ctx.client() as client:
        return [(index, case, _workday_case(client, case)) for index, case in numbered]


def check_workday_vectors(ctx: Context) -> list:
    """All of workday.json; one summary line, plus one line per wrong case.

    A few keep-alive connections in parallel keep the 450 requests quick.
    """
    cases = list(ctx.workday_cases)
    numbered = list(enumerate(cases))
    chunks = [numbered[i::VECTOR_WORKERS] for i in range(VECTOR_WORKERS)]
    with ThreadPoolExecutor(max_workers=VECTOR_WORKERS) as pool:
        results = sorted(
            (
                item
                for chunk in pool.map(lambda c: _workday_chunk(ctx, c), chunks)
                for item in chunk
            ),
            key=lambda item: item[0],
        )
    wrong = [
        failed(f"workday-vector[{case.at}]", "; ".join(problems))
        for _, case, problems in results
        if problems
    ]
    total = len(cases)
    if wrong:
        summary = failed(
            "workday-vectors",
            f"expected {total}/{total} right, got {len(wrong)} wrong, "
            "each listed as workday-vector[...]",
        )
        return [summary] + wrong
    return [passed("workday-vectors", f"{total}/{total}")]


def check_at_vectors(ctx: Context) -> list:
    """Every `at` vector of inputs.json: valid times and each bad input."""
    cases = _vector_cases(
        "at-valid",
        "/workday",
        ctx.inputs.at_valid,
        lambda r, v: expect.text_problems(r, 200, v.expect),
        lambda v: f"200 {v.expect!r}",
    ) + _vector_cases(
        "at-invalid",
        "/workday",
        ctx.inputs.at_invalid,
        lambda r, v: expect.at_error_problems(r),
        f"400 {expect.AT_ERROR!r}",
    )
    return _run_cases(ctx, cases)


def check_workday_now(ctx: Context) -> list:
    """GET /workday equals our own answer for now, computed before or after it."""

    def run() -> str:
        before = ctx.calendar.workday(shanghai_now())
        response = ctx.fetch("/workday")
        after = ctx.calendar.workday(shanghai_now())
        # The request may straddle 15:00:00 or midnight: either answer is right.
        accepted = sorted({before.isoformat(), after.isoformat()})
        problems = expect.status_problems(response, 200) + expect.content_type_problems(response)
        if response.status == 200 and response.text not in accepted:
            problems.append(
                f"expected body {' or '.join(map(repr, accepted))}, "
                f"got {expect.show(response.body)}"
            )
        if problems:
            raise Failure("; ".join(problems))
        return f"{response.text} (Shanghai time {shanghai_now():%Y-%m-%d %H:%M:%S})"

    return [guarded("workday-now", run)]
