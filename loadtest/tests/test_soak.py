"""The soak run's arithmetic: durations, windows, the three figures and the verdict.

The run itself (a stack, wrk and oha) is exercised by the soak stage of
`make test`; these tests pin down how its numbers are judged.
"""

from __future__ import annotations

import pytest

from loadtest.commands import soak
from loadtest.core.verdict import JIT_QUIET_WINDOWS
from loadtest.measure import jit
from loadtest.measure.tools.base import LoadResult
from loadtest.tests.test_jit import Compiler


@pytest.mark.parametrize(
    "text,seconds",
    [("30s", 30), ("10m", 600), ("1h", 3600), ("1m30s", 90), ("45", 45), ("2.5", 2.5)],
)
def test_durations(text, seconds):
    assert soak.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "10x", "m", "1m 30s", "-5s", "ten"])
def test_bad_durations(text):
    with pytest.raises(ValueError):
        soak.parse_duration(text)


def test_short_runs_use_tenths_and_long_runs_minutes():
    assert soak.windows(30) == [3.0] * 10
    assert soak.windows(600) == [60.0] * 10
    assert soak.windows(3600) == [60.0] * 60
    assert sum(soak.windows(125)) == pytest.approx(125)


def record(window, p99, rss, errors=0, requests=1000, seconds=1.0):
    return {"window": window, "requests": requests, "seconds": seconds, "rps": requests / seconds,
            "p99_ms": p99, "rss": rss, "errors": errors}  # fmt: skip


def test_clean_run_passes_and_reports_three_figures():
    rss = [100, 104, 105, 106]
    records = [record(i + 1, 2.0 + i / 3, rss[i] * 1_000_000) for i in range(4)]
    v = soak.verdict(records, rate=1000)
    assert v["failures"] == []
    assert v["errors"] == 0
    assert (v["p99_first_ms"], v["p99_last_ms"]) == (2.0, 3.0)
    assert v["p99_drift"] == pytest.approx(1.5)
    assert v["rss_growth"] == pytest.approx(106 / 104 - 1)  # second half
    assert v["rss_growth_total"] == pytest.approx(0.06)
    assert v["rate_kept"]


def test_heap_sizing_in_the_first_half_is_reported_not_judged():
    """The JVM grew 395 -> 582 MB in the first 15 s of a 30 s soak, then stayed flat."""
    rss = [395, 395, 449, 525, 582, 582, 582, 582, 582, 582]
    v = soak.verdict([record(i + 1, 1.0, r * 1_000_000) for i, r in enumerate(rss)], rate=1000)
    assert v["failures"] == []
    assert v["rss_growth_total"] == pytest.approx(582 / 395 - 1)


def test_steady_growth_fails():
    rss = [100, 103, 106, 109, 112, 115, 118, 121, 124, 127]
    v = soak.verdict([record(i + 1, 1.0, r * 1_000_000) for i, r in enumerate(rss)], rate=1000)
    assert v["failures"] == ["RSS growth +13.4% over the second half (limit 10%)"]


def test_any_error_fails():
    v = soak.verdict([record(1, 2.0, 100), record(2, 2.0, 100, errors=1)], rate=1000)
    assert v["failures"] == ["1 error(s)"]


def test_rss_growth_above_ten_percent_fails():
    v = soak.verdict([record(1, 2.0, 100_000_000), record(2, 2.0, 111_000_000)], rate=1000)
    assert v["failures"] == ["RSS growth +11.0% over the second half (limit 10%)"]


def test_latency_drift_is_reported_not_judged():
    v = soak.verdict([record(1, 1.0, 100), record(2, 50.0, 100)], rate=1000)
    assert v["failures"] == [] and v["p99_drift"] == 50


def test_a_window_without_a_report_fails():
    v = soak.verdict([record(1, 1.0, 100), record(2, None, 100, errors=None)], rate=1000)
    assert "no oha report for window(s) [2]" in v["failures"]


def test_rate_not_kept_is_flagged():
    v = soak.verdict([record(1, 1.0, 100, requests=800)], rate=1000)
    assert not v["rate_kept"]


def test_window_record_counts_every_error_kind():
    load = LoadResult(tool="oha", requests=990, duration_s=1.0, rps=990.0)
    load.errors.update(connect=1, timeout=2, non2xx=3)
    load.latency_ms = {"p50": 1.0, "p99": 4.0, "max": 9.0}
    w = soak.window_record(0, load, 123)
    assert w["errors"] == 6 and w["window"] == 1 and w["rss"] == 123
    assert w["error_kinds"] == {"connect": 1, "timeout": 2, "non2xx": 3}


def test_summary_table():
    result = {"stack": "gin", "status": "passed", "windows": [], "peak_rps": 50000,
              "rate": 35000, "rate_kept": True, "errors": 0, "p99_first_ms": 1.0,
              "p99_last_ms": 1.2, "rss_growth": 0.01, "rss_growth_total": 0.02, "rss_first": 19.8e6,
              "rss_middle": 20e6, "rss_last": 20.2e6}  # fmt: skip
    skipped = {"stack": "spring-webflux", "status": "skipped", "reason": "toolchain not found"}
    lines = soak.summary([result, skipped]).splitlines()
    assert lines[0].split()[:3] == ["stack", "result", "peak"]
    assert lines[2].split() == ["gin", "PASSED", "50,000/s", "35,000/s", "0", "1.00", "ms",
                                "1.20", "ms", "+1.0%", "(20", "->", "20", "MB;", "+2.0%", "since",
                                "window", "1)"]  # fmt: skip
    assert lines[3].split()[:2] == ["spring-webflux", "SKIPPED"]


def test_a_jit_stack_is_warmed_until_its_compiler_is_quiet_not_only_until_two_windows_agree():
    # The windows agree from the start (a flat rate), the compiler is busy for eight more.
    busy = [900, 700, 400, 300, 200, 150, 100, 80] + [0] * JIT_QUIET_WINDOWS
    compiler = Compiler(busy)
    warmed = soak.warm_up(compiler.window, jit.JitWatch(compiler))
    assert len(warmed.curve) == len(busy) and warmed.steady and not warmed.cold
    assert warmed.to_dict()["jit_signal"] == "stand-in"
    assert soak.warmed_text(warmed) == f"warm-up {len(busy)} s; its JIT quiet (stand-in)"


def test_a_compiler_that_cannot_be_read_is_said_and_the_windows_decide():
    warmed = soak.warm_up(lambda: 1000.0, "no jvm process among the server's processes")
    assert warmed.steady and len(warmed.curve) == 2 and warmed.jit_quiet is None
    assert soak.warmed_text(warmed).endswith(
        "JIT not read: no jvm process among the server's processes"
    )


def test_a_stack_without_a_jit_warms_up_by_its_windows_alone():
    warmed = soak.warm_up(lambda: 1000.0, None)
    assert len(warmed.curve) == 2 and soak.warmed_text(warmed) == "warm-up 2 s"
