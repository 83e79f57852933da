from __future__ import annotations

import math
import statistics

import pytest

from loadtest.core.stats import (
    bootstrap_ci,
    coefficient_of_variation,
    mid_mean,
    summarize,
)


def test_mid_mean_drops_highest_and_lowest():
    # The 2016 rule: 4 rounds, drop the extremes, average the middle two.
    assert mid_mean([10, 100, 20, 30]) == 25
    assert mid_mean([1, 2, 3]) == 2
    assert mid_mean([4, 6]) == 5  # too few to drop anything
    assert mid_mean([]) is None


def test_summary_median_cv_and_never_best_of_n():
    summary = summarize([100, 110, 90, 1000])
    assert summary.n == 4
    assert summary.median == 105
    assert summary.mid_mean == 105
    assert summary.max == 1000  # kept, but no headline figure uses it
    assert summary.cv == pytest.approx(statistics.stdev([100, 110, 90, 1000]) / 325)


def test_missing_values_are_ignored():
    summary = summarize([None, 5.0, float("nan"), 7.0])
    assert summary.n == 2 and summary.median == 6.0


def test_cv_edge_cases():
    assert coefficient_of_variation([5.0]) is None
    assert coefficient_of_variation([0.0, 0.0]) is None
    assert coefficient_of_variation([2.0, 2.0]) == 0
    assert summarize([]).median is None
    assert not math.isnan(summarize([3.0]).median)


def test_bootstrap_interval_holds_the_median_and_is_repeatable():
    rounds = [100.0, 104.0, 98.0, 101.0, 103.0]
    low, high = bootstrap_ci(rounds)
    assert low <= statistics.median(rounds) <= high
    assert 98.0 <= low and high <= 104.0  # a median never leaves the data's range
    assert bootstrap_ci(rounds) == (low, high)  # seeded: a regenerated report agrees
    assert bootstrap_ci([100.0]) is None  # one round has no interval


def test_bootstrap_interval_narrows_with_more_agreeing_rounds():
    few = bootstrap_ci([90.0, 100.0, 110.0])
    many = bootstrap_ci([90.0, 100.0, 110.0] + [100.0] * 12)
    assert (many[1] - many[0]) < (few[1] - few[0])
