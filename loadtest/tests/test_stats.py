from __future__ import annotations

import math
import statistics

import pytest

from loadtest.core.stats import coefficient_of_variation, mid_mean, summarize


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
