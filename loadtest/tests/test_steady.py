"""Steady-state rules on window rates: when a warm-up stops, what drift is."""

from __future__ import annotations

import pytest

from loadtest import steady
from loadtest.verdict import DRIFT_BOUND


def test_warm_up_stops_once_three_windows_agree():
    # spring-webflux's shape: a cold JIT, then steady.
    rates = iter([6670.0, 21000.0, 48000.0, 55000.0, 55600.0, 55300.0, 55000.0])
    warmed = steady.warm_up(lambda: next(rates), bound_s=30)
    assert warmed.steady and len(warmed.curve) == 6
    assert warmed.to_dict()["warmup_s"] == 6


def test_a_plateau_of_two_windows_is_not_steady():
    # Tiered JIT: two windows agree at a fifth of the warm pace, then it climbs.
    rates = iter([1000.0, 1020.0, 5000.0, 5100.0, 5050.0, 5060.0])
    warmed = steady.warm_up(lambda: next(rates), bound_s=30, primed_s=20)
    assert warmed.curve == [1000.0, 1020.0, 5000.0, 5100.0, 5050.0]
    assert warmed.seconds == 25 and warmed.to_dict()["warmup_primed_s"] == 20


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


def test_active_span_drops_the_tools_start_and_end_but_keeps_a_stall():
    rates = [0, 10, 100, 100, 0, 100, 100, 100, 30, 0]
    start, end = steady.active_span(rates)
    assert rates[start:end] == [100, 100, 0, 100, 100, 100]


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
