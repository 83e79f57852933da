"""The sustainable-rate search (loadtest/core/slo.py) on servers of known capacity.

A modelled server here passes every step up to its capacity and fails above
it, as a queue does when arrivals outpace service; the real-process tests
of the same search are in test_bench_slo.py.
"""

from __future__ import annotations

import pytest

from loadtest.core.slo import FLOOR_SHARE, PRECISION, Step, search, step_seconds


def server(capacity: float, tail_ms: float = 2.0, client_limit: float | None = None):
    calls = []

    def probe(rate: float) -> Step:
        calls.append(rate)
        # A load tool short of CPU falls behind its schedule, whatever the server does.
        busy_client = client_limit is not None and rate > client_limit
        if rate <= capacity:
            return Step(rate, rate, tail_ms, 0, client_bound=busy_client)
        # Above capacity the backlog grows for the whole step: the tail explodes
        # and fewer requests are answered than were sent.
        return Step(rate, capacity, 500.0, 0, client_bound=busy_client)

    return probe, calls


@pytest.mark.parametrize("capacity", [1000.0, 3700.0, 9500.0])
def test_search_lands_within_its_precision_below_the_capacity(capacity):
    probe, calls = server(capacity)
    result = search(10_000.0, probe, objective_ms=10, percentile=99)
    assert capacity - PRECISION * 10_000 <= result.slo_rps <= capacity
    assert result.percentile_ms == 2.0
    assert len(calls) <= 8  # the peak, about five halvings, one confirmation
    assert calls[-1] == pytest.approx(result.slo_rps, abs=0.1)  # confirmed by a second run


def test_a_stack_within_the_objective_at_its_peak_is_sustainable_at_the_peak():
    probe, calls = server(capacity=20_000)
    result = search(10_000.0, probe, objective_ms=10, percentile=99)
    assert result.slo_rps == 10_000
    assert result.to_record()["slo_share_of_peak"] == 1.0
    assert len(calls) == 2  # the peak, and its confirmation


def test_a_tail_above_the_objective_at_any_rate_gives_no_rate_and_says_why():
    probe, calls = server(capacity=10_000, tail_ms=25.0)  # e.g. a periodic 25 ms stall
    result = search(10_000.0, probe, objective_ms=10, percentile=99)
    assert result.slo_rps is None
    assert "every rate" in result.reason
    assert min(calls) >= FLOOR_SHARE * 10_000  # never probes below the floor


def test_errors_fail_a_step():
    assert Step(100, 100, 1.0, errors=1, client_bound=False).outcome(10) == "fail"
    assert Step(100, 97, 1.0, errors=0, client_bound=False).outcome(10) == "fail"  # fell behind
    assert Step(100, 99, 1.0, errors=0, client_bound=False).outcome(10) == "pass"


def test_rates_the_client_cannot_keep_are_skipped_and_the_answer_is_a_lower_bound():
    probe, calls = server(capacity=9000, client_limit=6000)
    result = search(10_000.0, probe, objective_ms=10, percentile=99)
    assert result.steps[0][3] == "client"
    assert 6000 - PRECISION * 10_000 <= result.slo_rps <= 6000  # as high as the tool reaches
    assert "lower bound" in result.reason and "load tool" in result.reason
    assert all(step[0] > 6000 for step in result.steps if step[3] == "client")


def test_a_client_that_keeps_no_rate_gives_no_answer_and_says_why():
    probe, _ = server(capacity=9000, client_limit=10)
    result = search(10_000.0, probe, objective_ms=10, percentile=99)
    assert result.slo_rps is None and "load tool" in result.reason


def test_a_lucky_pass_is_not_the_answer_and_the_search_resumes_below_it():
    lucky = {"left": 1}

    def probe(rate: float) -> Step:
        good = rate <= 7000
        if not good and lucky["left"]:  # one run above capacity happens to pass
            lucky["left"], good = 0, True
        return Step(rate, rate, 2.0 if good else 50.0, 0, False)

    result = search(10_000.0, probe, objective_ms=10, percentile=99)
    assert result.steps[0][3] == "pass" and result.steps[1] == [10_000.0, 10_000.0, 50.0, "fail"]
    assert 7000 - PRECISION * 10_000 <= result.slo_rps <= 7000


def test_passes_that_never_repeat_give_no_answer():
    seen = set()

    def probe(rate: float) -> Step:
        first = rate not in seen
        seen.add(rate)
        return Step(rate, rate, 2.0 if first else 50.0, 0, False)

    result = search(10_000.0, probe, objective_ms=10, percentile=99)
    assert result.slo_rps is None
    assert "did not repeat" in result.reason


def test_slow_rates_run_long_enough_for_the_percentile():
    assert step_seconds(10_000, 5) == 5
    assert step_seconds(100, 5) == 20  # 2,000 requests
    assert step_seconds(10, 5) == 30  # capped
