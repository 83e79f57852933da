"""Steady-state rules on window rates: when a warm-up stops, what drift is."""

from __future__ import annotations

import pytest

from loadtest.core.verdict import DRIFT_BOUND
from loadtest.measure import steady


def test_warm_up_stops_once_two_windows_agree():
    # spring-webflux's kb10 from the recorded quick run: a cold first window.
    rates = iter([7000.0, 23600.0, 23500.0, 26900.0])
    warmed = steady.warm_up(lambda: next(rates), bound_s=10)
    assert warmed.steady and warmed.curve == [7000.0, 23600.0, 23500.0]
    assert warmed.to_dict()["warmup_s"] == 3


def test_a_declared_prime_counts_in_the_warm_up():
    rates = iter([5000.0, 5100.0])
    warmed = steady.warm_up(lambda: next(rates), bound_s=30, primed_s=20)
    assert warmed.steady and warmed.seconds == 22 and warmed.to_dict()["warmup_primed_s"] == 20


def test_warm_up_stops_at_its_bound_and_says_so():
    climbing = iter(float(1000 * 1.2**i) for i in range(100))
    warmed = steady.warm_up(lambda: next(climbing), bound_s=6)
    assert not warmed.steady and len(warmed.curve) == 6


def test_a_failed_window_ends_the_warm_up():
    rates = iter([100.0, None])
    warmed = steady.warm_up(lambda: next(rates), bound_s=10)
    assert not warmed.steady and warmed.problem


def test_loopback_counter_is_read(tmp_path):
    dev = tmp_path / "dev"
    dev.write_text(
        "Inter-|   Receive\n face |bytes    packets\n"
        "    lo: 123456 789 0 0 0 0 0 0 123456 789 0 0 0 0 0 0\n"
        "  eth0: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n"
    )
    assert steady.read_loopback_bytes(str(dev)) == 123456
    assert steady.read_loopback_bytes(str(tmp_path / "missing")) is None
    assert steady.read_loopback_bytes() is not None  # this host's own counter


def test_active_span_drops_the_idle_edges_but_keeps_a_stall_and_a_collapse():
    rates = [0, 1, 30, 100, 100, 0, 100, 100, 100, 30, 0]
    start, end = steady.active_span(rates)
    assert rates[start:end] == [30, 100, 100, 0, 100, 100, 100, 30]
    # The recorded half-way collapse of the stand-in: kept, and flagged.
    collapse = [3674697, 4615131, 3473892, 3922883, 3940419, 4530615, 4212003, 934973,
                85779, 85739, 85764, 84771, 85806, 85717, 85827, 82116]  # fmt: skip
    assert steady.active_span(collapse) == (0, len(collapse))
    assert steady.not_steady(*steady.drift(collapse))


def test_drift_of_a_steady_run_and_a_collapse():
    flat = [0, 50, 100, 101, 99, 100, 102, 98, 100, 40, 0]
    change, t = steady.drift(flat)
    assert abs(change) < 0.05 and not steady.not_steady(change, t)
    halved = [0, 100, 101, 99, 100, 100, 50, 51, 49, 50, 50, 0]
    change, t = steady.drift(halved)
    assert change == pytest.approx(-0.4, abs=0.11) and t < -10
    assert steady.not_steady(change, t)
    assert steady.not_steady(DRIFT_BOUND + 0.01) and not steady.not_steady(None)


def test_a_bursty_server_without_a_trend_is_steady():
    # cherrypy's quarter-second windows: +-30% around one mean, no trend.
    bursty = [0, 60, 9000, 8800, 5100, 6000, 5200, 9400, 4900, 9700, 7300, 7000, 40]
    change, t = steady.drift(bursty)
    assert abs(change) > DRIFT_BOUND and abs(t) < 3
    assert not steady.not_steady(change, t)


def test_a_warm_up_at_its_bound_is_steady_only_without_a_trend():
    noisy = iter([59831.0, 53602.0, 55347.0, 39096.0, 68082.0, 46414.0, 65198.0, 47795.0])
    assert steady.warm_up(lambda: next(noisy), bound_s=8).steady


def test_too_few_windows_have_no_drift():
    assert steady.drift([0, 100, 100, 0]) == (None, None)
