"""Statistics over repeated measurements of one case.

Repetitions are interleaved across stacks in a shuffled order, so slow drift
of the host (thermal, neighbours) spreads over every stack instead of
favouring one. Per case we report the median, the mean of the middle runs
after dropping the highest and the lowest (the 2016 rule; with fewer than
three runs, the plain mean) and the coefficient of variation. Never best-of-N:
the best run is the one where the noise happened to help.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections import Counter
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Summary:
    n: int
    median: float | None
    mid_mean: float | None  # mean after dropping the highest and lowest (n >= 3)
    mean: float | None
    cv: float | None  # sample stdev / mean; None below two values or at mean 0
    min: float | None
    max: float | None

    def to_dict(self) -> dict:
        return asdict(self)


EMPTY = Summary(0, None, None, None, None, None, None)


def clean(values) -> list[float]:
    """Drop missing values (None, NaN): a run without latencies has none to average."""
    return [float(v) for v in values if v is not None and not math.isnan(float(v))]


def mid_mean(values: list[float]) -> float | None:
    """Mean after dropping one highest and one lowest value (when n >= 3)."""
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) >= 3:
        ordered = ordered[1:-1]
    return statistics.fmean(ordered)


def coefficient_of_variation(values: list[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    if mean == 0:
        return None
    return statistics.stdev(values) / mean


def summarize(values) -> Summary:
    data = clean(values)
    if not data:
        return EMPTY
    return Summary(
        n=len(data),
        median=statistics.median(data),
        mid_mean=mid_mean(data),
        mean=statistics.fmean(data),
        cv=coefficient_of_variation(data),
        min=min(data),
        max=max(data),
    )


def nearest_rank(ordered: list[float], percent: float) -> float:
    """The percentile of sorted samples by nearest rank: always an observed value."""
    rank = max(1, math.ceil(percent / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


# Resamples for a bootstrap interval: the interval's ends move by well under
# 1% between seeds at this count, and it costs milliseconds per case.
BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95
# Samples up to this total are compared by the exact Mann-Whitney distribution
# (every split enumerated: C(20, 10) = 184,756); beyond, the normal approximation.
EXACT_U_MAX = 20


def bootstrap_ci(
    values, level: float = CONFIDENCE, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0,
    statistic=statistics.median,
) -> tuple[float, float] | None:
    """Percentile-bootstrap interval of `statistic` (the median unless told); None below
    two values.

    Seeded, so a report regenerated from the same results shows the same
    interval. With three rounds the interval is wide, as it should be.
    """
    data = clean(values)
    if len(data) < 2:
        return None
    rng = random.Random(seed)
    estimates = sorted(statistic(rng.choices(data, k=len(data))) for _ in range(resamples))
    return _percentile_pair(estimates, level)


def ratio_ci(
    old, new, level: float = CONFIDENCE, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> tuple[float, float] | None:
    """Bootstrap interval of median(new) / median(old), each side resampled alone."""
    before, after = clean(old), clean(new)
    if len(before) < 2 or len(after) < 2:
        return None
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        base = statistics.median(rng.choices(before, k=len(before)))
        if base > 0:
            ratios.append(statistics.median(rng.choices(after, k=len(after))) / base)
    return _percentile_pair(sorted(ratios), level) if ratios else None


def _percentile_pair(ordered: list[float], level: float) -> tuple[float, float]:
    tail = (1 - level) / 2
    low = ordered[int(tail * (len(ordered) - 1))]
    high = ordered[int(math.ceil((1 - tail) * (len(ordered) - 1)))]
    return low, high


def mann_whitney_p(a, b) -> float | None:
    """Two-sided p-value of the Mann-Whitney U test; None when a side is empty.

    Exact for small samples (ties broken by mid-ranks, every split counted),
    normal approximation with tie correction beyond EXACT_U_MAX values. Note
    that 3 rounds against 3 can never give p < 0.1: that is the data's limit.
    """
    x, y = clean(a), clean(b)
    if not x or not y:
        return None
    ranks = _midranks(x + y)
    observed = sum(ranks[: len(x)])
    if len(x) + len(y) <= EXACT_U_MAX:
        return _exact_rank_sum_p(ranks, len(x), observed)
    n1, n2 = len(x), len(y)
    n = n1 + n2
    mean = n1 * (n + 1) / 2
    ties = sum(c**3 - c for c in Counter(ranks).values())
    variance = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if variance <= 0:
        return 1.0
    z = (abs(observed - mean) - 0.5) / math.sqrt(variance)
    return min(1.0, math.erfc(max(z, 0) / math.sqrt(2)))


def _midranks(values: list[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _exact_rank_sum_p(ranks: list[float], n1: int, observed: float) -> float:
    mean = n1 * (len(ranks) + 1) / 2
    distance = abs(observed - mean) - 1e-9
    sums = [sum(pick) for pick in itertools.combinations(ranks, n1)]
    return sum(1 for s in sums if abs(s - mean) >= distance) / len(sums)
