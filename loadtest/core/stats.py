"""Statistics over repeated measurements of one case.

Repetitions are interleaved across stacks in a shuffled order, so slow drift
of the host (thermal, neighbours) spreads over every stack instead of
favouring one. Per case we report the median, the mean of the middle runs
after dropping the highest and the lowest (the 2016 rule; with fewer than
three runs, the plain mean) and the coefficient of variation. Never best-of-N:
the best run is the one where the noise happened to help.
"""

from __future__ import annotations

import math
import statistics
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
