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
import random
import statistics
from dataclasses import asdict, dataclass
from statistics import NormalDist


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


def _percentile_pair(ordered: list[float], level: float) -> tuple[float, float]:
    tail = (1 - level) / 2
    low = ordered[int(tail * (len(ordered) - 1))]
    high = ordered[int(math.ceil((1 - tail) * (len(ordered) - 1)))]
    return low, high


def welch_log_test(old, new, extra_variance: float = 0.0) -> tuple[float, float, float, float] | None:
    """Welch's t-test on the logarithms: (log ratio, its standard error, degrees of
    freedom, two-sided p); None below two values a side.

    Throughput varies by a share of itself, so its logarithm has one spread
    whatever the level; the log ratio is the difference of the sides' mean
    logs (the ratio of their geometric means). `extra_variance` is variance of
    the log ratio that the values cannot show (two runs' own offsets, taken as
    known): it widens the standard error, not the degrees of freedom. The
    degrees of freedom are estimated from the same values (Satterthwaite), so
    with three values a side the p-value is approximate, not exact; a rank test
    cannot go below p = 0.1 there. Two sides without any spread differ with p 0 or 1.
    """
    a, b = log_values(old), log_values(new)
    if len(a) < 2 or len(b) < 2:
        return None
    shift = statistics.fmean(b) - statistics.fmean(a)
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se = math.sqrt(va + vb + extra_variance)
    if se == 0:
        return shift, 0.0, math.inf, (1.0 if shift == 0 else 0.0)
    df = welch_degrees_of_freedom(va, vb, len(a), len(b))
    return shift, se, df, t_two_sided_p(shift / se, df)


def log_values(values) -> list[float]:
    """The logarithms of the positive values (a failed round's 0 has none)."""
    return [math.log(v) for v in clean(values) if v > 0]


def welch_degrees_of_freedom(va: float, vb: float, na: int, nb: int) -> float:
    """Satterthwaite's degrees of freedom for two variances of means (va, vb) from na and
    nb values; infinite when neither side varies."""
    if va + vb == 0:
        return math.inf
    return (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with `df` degrees of freedom (df may be fractional)."""
    if math.isinf(df):
        return math.erfc(abs(t) / math.sqrt(2))
    return regularized_beta(df / (df + t * t), df / 2, 0.5)


def t_quantile(probability: float, df: float) -> float:
    """The t value with P(T <= t) = probability (0.5 < probability < 1): Newton's steps
    from the normal quantile, kept inside a bracket that bisection shrinks when a step
    leaves it (the heavy tails of a few degrees of freedom). Called for every case of a
    comparison, so it converges in a few steps rather than a fixed two hundred."""
    low, high = 0.0, 1e6
    t = NormalDist().inv_cdf(probability)
    for _ in range(100):
        error = 1 - t_two_sided_p(t, df) / 2 - probability
        if abs(error) < 1e-13:
            break
        low, high = (t, high) if error < 0 else (low, t)
        step = t - error / t_density(t, df)
        t = step if low < step < high else (low + high) / 2
        if high - low < 1e-12 * max(1.0, high):
            break
    return t


def t_density(t: float, df: float) -> float:
    """Student's t density (the normal's at infinite degrees of freedom)."""
    if math.isinf(df):
        return math.exp(-t * t / 2) / math.sqrt(2 * math.pi)
    scale = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(scale - (df + 1) / 2 * math.log1p(t * t / df))


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b) by its continued fraction (Numerical Recipes' betacf, modified Lentz)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x)
    )
    if x > (a + 1) / (a + b + 2):
        return 1 - regularized_beta(1 - x, b, a)
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1) < 1e-14:
            break
    return front * fraction / a


def benjamini_hochberg(p_values: list[float]) -> list[float]:
    """Adjusted p-values (q) controlling the false discovery rate over one family of
    tests: a case is a discovery at level q when its adjusted value is below q."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 1.0
    for rank in range(len(order), 0, -1):
        index = order[rank - 1]
        running = min(running, p_values[index] * len(order) / rank)
        adjusted[index] = running
    return adjusted
