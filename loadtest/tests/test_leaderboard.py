"""The leaderboard ranks by the statistic its gap tests, says what limited each figure,
and calls a gap significant only when the data can tell (report/leaderboard.py,
report/samples.py; the gap's rule is core/change.py's)."""

from __future__ import annotations

from loadtest.report.leaderboard import LEADERBOARD_HEAD, leaderboards, ranked_rows
from loadtest.report.samples import ROUNDS, WINDOWS, rps_samples
from loadtest.report.summary import measurement_rows


def record(stack: str, rps: float, repetition: int = 1, windows=None, ceiling=False) -> dict:
    return {
        "kind": "measurement", "status": "ok", "stack": stack, "display_name": stack,
        "ceiling": ceiling, "scenario": "hello", "connections": 64, "tool": "wrk",
        "phase": "measure", "rate_spec": "", "repetition": repetition, "verdict": "server-bound",
        "result": {"rps": rps, "requests": int(rps * 10), "latency_ms": {"p99": 2.0},
                   "errors": {}, "bytes_per_s": rps * 200, "bytes_total": int(rps * 2000)},
        "server": {"cpu_mean_pct": 95.0, "rss_peak_bytes": 50 * 2**20,
                   "loopback_bytes_per_s": windows or []},
    }  # fmt: skip


GAP = LEADERBOARD_HEAD.index("gap to next")


def board(records: list[dict]) -> list[list[str]]:
    rows = measurement_rows(records)
    ((_, cells),) = leaderboards(rows, lambda r: r["verdict"], lambda r: "")
    return cells


def test_rounds_far_apart_rank_and_are_significant_by_intervals():
    records = [record("fast", v, i) for i, v in enumerate([1000, 1010, 990], 1)]
    records += [record("slow", v, i) for i, v in enumerate([500, 505, 495], 1)]
    cells = board(records)
    assert [c[1] for c in cells] == ["fast", "slow"]
    assert cells[0][GAP].startswith("significant (q")  # Welch's t: possible at 3 rounds each
    assert cells[1][GAP] == "-"


def test_overlapping_rounds_whose_interval_reaches_past_the_floor_cannot_tell():
    records = [record("a", v, i) for i, v in enumerate([1000, 900, 1100], 1)]
    records += [record("b", v, i) for i, v in enumerate([980, 1050, 920], 1)]
    gap = board(records)[0][GAP]
    assert gap.startswith("cannot tell (+1.5%, inside the 10% floor but its interval"), gap
    assert "3 rounds a side detect 31% or more" in gap


def test_a_gap_beyond_the_floor_that_three_rounds_cannot_confirm_says_so():
    records = [record("a", v, i) for i, v in enumerate([1300, 900, 1500], 1)]
    records += [record("b", v, i) for i, v in enumerate([1000, 1150, 850], 1)]
    gap = board(records)[0][GAP]
    assert gap.startswith("cannot tell (q=") and "3 rounds a side detect" in gap and "10 rounds" in gap


def test_one_round_is_not_tested_and_a_close_pair_is_within_noise():
    fast = [record("fast", 1000.0)] + [record("slow", v, i) for i, v in enumerate([500, 505], 1)]
    assert board(fast)[0][GAP] == "not tested (windows of one run, not rounds: REPEAT >= 3)"
    two = [record("fast", v, i) for i, v in enumerate([1000, 1010], 1)]
    two += [record("slow", v, i) for i, v in enumerate([500, 505], 1)]
    assert board(two)[0][GAP] == "not tested (2 rounds on a side: REPEAT >= 3)"  # as compare
    near = [record("a", v, i) for i, v in enumerate([1000, 1010, 990, 1005, 995], 1)]
    near += [record("b", v, i) for i, v in enumerate([960, 965, 955, 962, 958], 1)]
    # 4% apart with almost no spread: significant by the test, under the 10% floor.
    assert board(near)[0][GAP].startswith("within noise (+4.2%, q<0.001, interval within the 10%")


def test_one_round_takes_its_intervals_from_the_windows_of_the_run():
    windows = [0, 100, 1000, 1020, 980, 1010, 990, 1000, 500, 0]
    samples, source = rps_samples([record("a", 5000.0, windows=windows)])
    assert source == WINDOWS
    assert len(samples) == 6  # idle edges and the partial first and last windows dropped
    assert abs(sum(samples) / len(samples) - 5000.0) < 1e-6  # the tool's level, the loopback's shape
    assert rps_samples([record("a", 1.0), record("a", 2.0, 2)]) == ([1.0, 2.0], ROUNDS)


def test_the_ceiling_is_shown_unranked_and_efficiency_columns_follow_the_figures():
    records = [record("x", 800.0, i) for i in (1, 2)] + [record("ceiling", 3000.0, ceiling=True)]
    rows = measurement_rows(records)
    ((key, ordered),) = ranked_rows(rows).items()
    assert [r["stack"] for r in ordered] == ["x", "ceiling"]
    x = ordered[0]
    assert x["rps_ci_low"] <= x["rps_median"] <= x["rps_ci_high"]
    assert x["rps_per_cpu_s"] == round(800 / 0.95, 1)
    assert x["rss_per_1k_conn_mb"] == round(50 / 64 * 1000, 1)


def test_flagged_rounds_and_an_unread_jit_are_marked_beside_the_figure():
    records = [record("jit", v, i) for i, v in enumerate([1000, 1010, 990], 1)]
    records += [record("other", v, i) for i, v in enumerate([500, 505, 495], 1)]
    for jit_round in records[1:3]:  # rounds 2 and 3: the compiler was never read
        jit_round["jit_signal"] = "hotspot: no reading, so the windows alone decided"
    records[0].update(jit_signal="hotspot", jit_cold=True)  # round 1: read, and still busy
    records[4]["client_bound"] = True
    cells = {c[1]: c[LEADERBOARD_HEAD.index("flagged rounds")] for c in board(records)}
    assert cells == {"jit": "COLD 1/3, JIT signal never arrived 2/3", "other": "client-bound 1/3"}
