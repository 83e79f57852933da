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


def test_drift_of_a_steady_run_a_collapse_and_a_climb():
    flat = [0, 50, 100, 101, 99, 100, 102, 98, 100, 40, 0]
    assert abs(steady.drift(flat)) < 0.05 and not steady.not_steady(steady.drift(flat))
    halved = [0, 100, 100, 100, 100, 100, 50, 50, 50, 50, 50, 0]
    assert steady.drift(halved) == pytest.approx(-0.4, abs=0.11)
    assert steady.not_steady(steady.drift(halved))
    assert steady.not_steady(DRIFT_BOUND + 0.01) and not steady.not_steady(None)


def test_too_few_windows_have_no_drift():
    assert steady.drift([0, 100, 100, 0]) is None
