"""Every figure says what limited it: the real bench against stand-ins with a flaw of pace.

Each stand-in is the contract's reference server with one flaw
(loadtest/tests/standin_server.py), run as a stack from a throw-away
manifest like the fault tests do. The bench must name a stall's cause,
measure a slow starter only once it is steady, and flag a run whose pace
changed half-way.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from loadtest.bench.results import read_records
from loadtest.tests.test_bench_faults import NEEDS_NGINX_AND_WRK, measurements, only_run, run_bench

# nginx and wrk needed, as for the fault tests.
pytestmark = [pytest.mark.timing, NEEDS_NGINX_AND_WRK]

STANDIN_RUN = (
    'echo $$ > "$BUILD_DIR/pgid"; cd "$REPO_ROOT"; '
    'exec {python} -m loadtest.tests.standin_server %s "{display_name}"'
)


def bench_ok(stand_ins, results: Path, servers: list[str], *args: str, timeout: float):
    """A run that must end with 0: its folder and what it printed."""
    done = run_bench(stand_ins, results, servers, *args, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return only_run(results), done.stdout


def test_a_stall_is_neither_bound_and_named_and_a_slow_start_is_measured_steady(stacks, tmp_path):
    stall = stacks.add("nagle", run=STANDIN_RUN % "nagle")
    starter = stacks.add("slowstart", run=STANDIN_RUN % "slow-start")
    folder, output = bench_ok(
        stacks, tmp_path / "results", [stall, starter],
        "--warmup", "10", "--duration", "3", timeout=150
    )  # fmt: skip

    (stalled,) = measurements(folder, stall)
    assert (stalled["verdict"], stalled["cause"]) == ("neither", "delayed-ack"), stalled
    assert 30 < stalled["result"]["latency_ms"]["mean"] < 60
    assert "NEITHER" in output and "delayed-ack" in output

    (warmed,) = measurements(folder, starter)
    curve = warmed["warmup_curve"]
    assert len(curve) >= 3 and warmed["warmup_s"] == len(curve)
    # Measured after the slow seconds: several times the first window's pace.
    assert warmed["result"]["rps"] > 3 * curve[0], (curve, warmed["result"]["rps"])
    assert warmed["verdict"] in ("server-bound", "client-bound", "neither")

    summary = (folder / "summary.csv").read_text()
    assert "verdict" in summary.splitlines()[0] and "delayed-ack" in summary
    assert "neither: delayed-ack" in (folder / "summary.md").read_text()


def test_a_run_that_slows_half_way_is_not_steady(stacks, tmp_path):
    degrading = stacks.add("halfway", run=STANDIN_RUN % "slows-half-way")
    folder, output = bench_ok(
        stacks, tmp_path / "results", [degrading], "--warmup", "0", "--duration", "4", timeout=120
    )  # fmt: skip
    (record,) = measurements(folder, degrading)
    assert record["not_steady"] and record["drift"] < -0.3, record["server"]
    assert "NOT-STEADY" in output


def test_a_declared_jit_warm_up_goes_round_every_scenario_of_the_instance(stacks, tmp_path):
    # A JIT compiles what each request path runs: a prime on one scenario leaves the rest cold.
    jit = stacks.add("jit", warmup_s=4)
    folder, output = bench_ok(
        stacks, tmp_path / "results", [jit],
        "--scenarios", "hello,kb1", "--warmup", "2", "--duration", "1", timeout=120
    )  # fmt: skip
    names = sorted(p.name for p in (folder / "raw" / "warmup").iterdir() if ".primed" in p.name)
    for scenario in ("hello", "kb1"):
        for turn in (1, 2):
            assert any(f"-{scenario}-" in n and f".primed{turn}" in n for n in names), names
    records = measurements(folder, jit)
    assert sorted(r.get("warmup_primed_s") or 0 for r in records) == [0, 4]  # once per instance


def rechecks(folder) -> list[dict]:
    return [r for r in read_records(folder / "results.jsonl") if r["kind"] == "recheck"]


def test_an_instance_that_speeds_up_or_slows_down_while_measured_is_drifted(stacks, tmp_path):
    # The climber settles at its slow pace (two warm-up windows agree), is measured
    # slow, then turns fast: the first case measured again at the end tells. The
    # steady reference server stays unflagged.
    climber = stacks.add("climbs", run=STANDIN_RUN % "climbs")
    steady = stacks.add("steady")
    folder, output = bench_ok(
        stacks, tmp_path / "results", [climber, steady],
        "--connections", "4,8", "--warmup", "2", "--duration", "2", timeout=240
    )  # fmt: skip
    again = {r["stack"]: r for r in rechecks(folder)}
    assert again[climber]["drifted"] and again[climber]["change"] > 0.5, again[climber]
    assert not again[steady]["drifted"], again[steady]
    first = next(r for r in measurements(folder, climber) if r["seq"] == again[climber]["first_seq"])
    assert again[climber]["first_rps"] == first["result"]["rps"]
    rows = {(r["stack"], r["connections"]): r for r in csv.DictReader(
        (folder / "summary.csv").open())}  # fmt: skip
    assert rows[(climber, "4")]["drifted_runs"] == rows[(climber, "8")]["drifted_runs"] == "1"
    assert rows[(steady, "4")]["drifted_runs"] == "0"
    text = (folder / "summary.md").read_text()
    assert f"{climber}: DRIFTED (round 1): hello at 4 connections served" in text
    assert "DRIFTED" in output

    # The other way round: a server that degrades after its first case.
    degrading = stacks.add("slows", run=STANDIN_RUN % "slows-half-way")
    folder, output = bench_ok(
        stacks, tmp_path / "results2", [degrading],
        "--connections", "4,8", "--warmup", "0", "--duration", "2", timeout=120
    )  # fmt: skip
    (again,) = [r for r in rechecks(folder) if r["stack"] == degrading]
    assert again["drifted"] and again["change"] < -0.3, again


def test_a_load_with_a_window_of_no_answers_is_a_stall_not_server_bound(stacks, tmp_path):
    hang = stacks.add("hang", run=STANDIN_RUN % "stalls-once")
    folder, output = bench_ok(
        stacks, tmp_path / "results", [hang], "--warmup", "0", "--duration", "4", timeout=120
    )  # fmt: skip
    (record,) = measurements(folder, hang)
    assert (record["verdict"], record["cause"]) == ("neither", "stall"), record
    assert "no responses for" in record["verdict_detail"]
    rows = list(csv.DictReader((only_run(tmp_path / "results") / "summary.csv").open()))
    assert rows[0]["stalled_runs"] == "1"
