"""The rule that calls a change (report/change.py), broken one part at a time, and its
false-alarm rate and power on runs drawn from the noise A/A runs measured here.

The noise model: each run of a case lands at the case's true rate times a
run-to-run factor, and each of its rounds at that times a round-to-round factor
(both log-normal). RUN_SPREAD and ROUND_SPREAD are the spreads measured in the
A/A runs of docs/measurements/aa-false-alarms.md: rounds of one run agree more
closely than two runs do, which is what fooled a test over rounds alone.
"""

from __future__ import annotations

import math
import random

import pytest

from loadtest.core.stats import benjamini_hochberg, t_quantile, t_two_sided_p, welch_log_test
from loadtest.report.change import (
    CANNOT_TELL,
    IMPROVEMENT,
    MIN_EFFECT,
    NO_CHANGE,
    NOT_TESTED,
    REGRESSION,
    Samples,
    judge_all,
    rounds_to_tell,
)

# sd of a run's mean log requests/s between runs (median case, all of it taken as run-level)
RUN_SPREAD = 0.035
ROUND_SPREAD = 0.05  # sd of log requests/s between rounds of one run (median case)
CASES = 20  # cases in one comparison, as in the A/A runs


def run(rng: random.Random, rate: float, rounds: int) -> list[float]:
    level = rate * math.exp(rng.gauss(0, RUN_SPREAD))
    return [level * math.exp(rng.gauss(0, ROUND_SPREAD)) for _ in range(rounds)]


def test_student_t_and_the_correction_match_their_tables():
    assert t_two_sided_p(2.776445, 4) == pytest.approx(0.05, abs=1e-5)
    assert t_two_sided_p(12.7062, 1) == pytest.approx(0.05, abs=1e-5)
    assert t_quantile(0.975, 4) == pytest.approx(2.776445, abs=1e-5)
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    shift, se, df, p = welch_log_test([100, 102, 98], [80, 81, 79])
    assert math.exp(shift) == pytest.approx(0.8, abs=0.005) and p < 0.001 and 2 < df < 4
    assert welch_log_test([100], [80, 81]) is None


def test_a_clear_change_is_called_and_its_interval_holds_its_ratio():
    (slower,) = judge_all([Samples([1000, 1010, 990], [700, 705, 695])])
    assert slower.verdict == REGRESSION and slower.detail.startswith("q")
    low, high = slower.interval
    assert low <= slower.ratio <= high < 1
    (faster,) = judge_all([Samples([700, 705, 695], [1000, 1010, 990])])
    assert faster.verdict == IMPROVEMENT


def test_a_significant_change_under_the_floor_is_no_change():
    # 4% apart, rounds so tight that the test alone would call it.
    (small,) = judge_all([Samples([1000, 1001, 999], [960, 961, 959])])
    assert small.verdict == NO_CHANGE and f"{MIN_EFFECT:.0%} noise floor" in small.detail
    (raised,) = judge_all([Samples([1000, 1001, 999], [850, 851, 849])], floor=0.2)
    assert raised.verdict == NO_CHANGE


def test_beyond_the_floor_but_unconfirmed_says_how_many_rounds_would_tell():
    (unsure,) = judge_all([Samples([1000, 1400, 800], [800, 1100, 650])])
    assert unsure.verdict == CANNOT_TELL and "rounds a side would tell" in unsure.detail
    needed = rounds_to_tell(math.log(0.8), 0.1, 3, 3)
    assert needed > 3
    assert rounds_to_tell(math.log(0.8), 0.01, 3, 3) == 4  # never fewer than one more


def test_windows_of_one_run_are_shown_not_tested():
    (shown,) = judge_all([Samples([1000, 1010, 990, 1005], [500, 505, 495, 502], rounds=False)])
    assert shown.verdict == NOT_TESTED and shown.interval is None
    assert shown.ratio == pytest.approx(0.5, rel=1e-3)


def test_the_correction_counts_every_case_of_the_comparison():
    # One case at p ~ 0.01 is a change alone, and not among 19 unchanged cases.
    rng = random.Random(3)
    borderline = Samples([1000, 1040, 960], [850, 880, 820])
    (alone,) = judge_all([borderline])
    assert alone.verdict == REGRESSION
    same = [Samples(run(rng, 1000, 3), run(rng, 1000, 3)) for _ in range(19)]
    with_others = judge_all([borderline, *same])
    assert with_others[0].q > alone.q


def test_a_a_false_alarms_stay_under_one_in_twenty():
    rng = random.Random(20261128)
    comparisons = 400
    called = sum(
        d.is_change
        for _ in range(comparisons)
        for d in judge_all([Samples(run(rng, 1000, 3), run(rng, 1000, 3)) for _ in range(CASES)])
    )
    assert called / (comparisons * CASES) < 0.05


def test_a_thirty_percent_slowdown_is_called_at_five_rounds():
    # One stack slowed in its six cases, fourteen other cases unchanged.
    rng = random.Random(7)
    comparisons, slowed = 200, 6
    found = 0
    for _ in range(comparisons):
        cases = [Samples(run(rng, 1000, 5), run(rng, 700, 5)) for _ in range(slowed)]
        cases += [Samples(run(rng, 1000, 5), run(rng, 1000, 5)) for _ in range(CASES - slowed)]
        found += sum(d.verdict == REGRESSION for d in judge_all(cases)[:slowed])
    assert found / (comparisons * slowed) > 0.95
