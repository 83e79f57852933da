"""The requests/s samples behind a summary row's interval, and where they come from.

With two rounds or more, one figure per round: the rounds are interleaved and
shuffled, so they are independent measurements. With one round, the
quarter-second windows of that run: the loopback's bytes per window give the
shape (every request and answer crosses it), the tool's requests/s the level.
Windows of one run are not independent (a slow second drags its neighbours),
so their interval is narrower than a rounds' interval would be; every table
says which kind it shows.

Each interval is of the statistic that is the figure: the median of the
rounds, or, for one run, the run's own rate, which is the mean of its windows
(the median of skewed windows lies above it, and an interval of the median
then excluded its own figure: WebFlux 44,912 req/s with 45,005 - 50,807).
"""

from __future__ import annotations

import statistics

from loadtest.measure.steady import window_rates

ROUNDS = "rounds"
WINDOWS = "windows of one run"


def figure_statistic(source: str):
    """How the figure is computed from its samples: the median of rounds, the mean of windows."""
    return statistics.fmean if source == WINDOWS else statistics.median


def rps_samples(ok: list[dict]) -> tuple[list[float], str]:
    """(samples, source) for the successful records of one summary row."""
    if len(ok) >= 2:
        return [r["result"]["rps"] for r in ok], ROUNDS
    if not ok:
        return [], ROUNDS
    record = ok[0]
    loopback = record.get("server", {}).get("loopback_bytes_per_s") or []
    return window_rates(record["result"]["rps"], loopback), WINDOWS
