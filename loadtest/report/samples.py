"""The requests/s samples behind a summary row's interval, and where they come from.

With two rounds or more, one figure per round: the rounds are interleaved and
shuffled, so they are independent measurements. With one round, the
quarter-second windows of that run: the loopback's bytes per window give the
shape (every request and answer crosses it), the tool's requests/s the level.
Windows of one run are not independent (a slow second drags its neighbours),
so their interval is narrower than a rounds' interval would be; every table
says which kind it shows.
"""

from __future__ import annotations

import statistics

from loadtest.measure.steady import active_span

ROUNDS = "rounds"
WINDOWS = "windows of one run"


def rps_samples(ok: list[dict]) -> tuple[list[float], str]:
    """(samples, source) for the successful records of one summary row."""
    if len(ok) >= 2:
        return [r["result"]["rps"] for r in ok], ROUNDS
    if not ok:
        return [], ROUNDS
    record = ok[0]
    rates = record.get("server", {}).get("loopback_bytes_per_s") or []
    start, end = active_span(rates)
    active = rates[start + 1 : end - 1]  # the edges are partly before or after the tool ran
    mean = statistics.fmean(active) if active else 0
    if len(active) < 3 or mean <= 0:
        return [record["result"]["rps"]], WINDOWS
    level = record["result"]["rps"]
    return [level * rate / mean for rate in active], WINDOWS
