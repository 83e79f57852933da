"""`make aa`'s table "Choosing REPEAT" (report/aa_limits.py), each rule broken on purpose.

Its figures are core/change's detection limit at the noise the A/A series measured;
they fall as REPEAT grows; a case without two rounds a run or two runs is left out
and named; the committed A/A folder is what the code writes from its four runs,
byte for byte. Files only: no server is started.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
from pathlib import Path

import pytest

from loadtest.bench.results import RESULTS_FILE, RUN_FILE
from loadtest.commands.aa import beside
from loadtest.core.change import MIN_EFFECT, SIGNIFICANCE, Samples, detection_limit
from loadtest.core.manifest import REPO_ROOT
from loadtest.report.aa import analyse
from loadtest.report.aa_limits import REPEATS
from loadtest.report.noise import measured_spread

MEASURED = REPO_ROOT / "docs" / "measurements"
COMMITTED_RUNS = ["20261128-130814-smoke", "20261128-131357-smoke", "20261128-131928-smoke",
                  "20261128-132450-smoke"]  # fmt: skip
COMMITTED_AA = MEASURED / f"aa-{COMMITTED_RUNS[0]}-{COMMITTED_RUNS[-1]}"
# One run's rounds of a noisy case, as shares of its own level (sd of log about 10%).
SHAPE = [1.0, 1.12, 0.9]
# Each run's own offset: what the runs' means spread by beyond their rounds.
OFFSETS = [1.0, 1.15, 0.88]


def record(stack: str, scenario: str, rps: float, round_no: int) -> dict:
    return {"kind": "measurement", "status": "ok", "stack": stack, "scenario": scenario,
            "connections": 16, "repetition": round_no, "tool": "wrk", "phase": "measure",
            "result": {"rps": rps, "latency_ms": {"mean": 10 / rps * 1000},
                       "errors": {"timeout": 0}, "requests": 1000,
                       "bytes_per_s": rps * 100, "bytes_total": 100_000}}  # fmt: skip


def write_run(folder: Path, number: int, records: list[dict]) -> Path:
    folder.mkdir(parents=True)
    (folder / RESULTS_FILE).write_text("".join(json.dumps(r) + "\n" for r in records))
    run = {"run_id": folder.name, "started_at": f"2026-01-01T0{number}:00:00+00:00",
           "finished_at": f"2026-01-01T0{number}:10:00+00:00",
           "host": {"cpu_model": "made-up", "cores_logical": 2},
           "knobs": {"profile": "smoke", "repeat": 3, "duration": 2.0, "connections": [16]}}
    (folder / RUN_FILE).write_text(json.dumps(run))  # fmt: skip
    return folder


def rounds(stack: str, scenario: str, level: float, shape: list[float]) -> list[dict]:
    return [record(stack, scenario, level * share, i + 1) for i, share in enumerate(shape)]


def series(tmp_path: Path, extra: dict[int, list[dict]] | None = None) -> list[Path]:
    """Three runs: a noisy case and a quiet one in each, and `extra` records per run."""
    folders = []
    for number, offset in enumerate(OFFSETS):
        made = (rounds("noisy", "hello", 10_000 * offset, SHAPE)
                + rounds("quiet", "hello", 20_000 * offset, [1.0, 1.01, 0.99]))  # fmt: skip
        made += (extra or {}).get(number, [])
        folders.append(write_run(tmp_path / f"run{number}", number, made))
    return folders


def limits_of(aa_folder: Path) -> dict:
    return json.loads((aa_folder / "aa.json").read_text())["detection_limits"]


def test_the_figures_are_core_change_detection_limit_at_the_series_noise(tmp_path):
    folders = series(tmp_path)
    aa = analyse(folders, tmp_path)
    summary = json.loads((aa / "aa.json").read_text())
    name = "noisy hello c=16 wrk"
    case = summary["detection_limits"]["by_case"][name]
    # What make compare adds to each side of two separate runs from now on.
    spread = measured_spread(summary["run_to_run"], aa.name).sd(name)
    assert case["run_to_run_sd_used"] == pytest.approx(spread, abs=1e-4)
    assert case["run_to_run_sd_measured"] == summary["run_to_run"]["by_case"][name] > 0
    # Every run's rounds have the same shape, so each run's variance is the pooled one:
    # any two runs as a comparison's sides have the series' noise.
    first, second = ([r["result"]["rps"] for r in rounds("noisy", "hello", 10_000 * o, SHAPE)]
                     for o in OFFSETS[:2])  # fmt: skip
    sides = Samples(first, second, rounds=True, run_to_run_sd=spread)
    for repeat in REPEATS:
        expected = detection_limit(sides, repeat, repeat, SIGNIFICANCE)
        assert case["limit_at_repeat"][str(repeat)] == pytest.approx(expected, abs=1e-4)
    assert case["round_sd"] == pytest.approx(statistics.stdev(math.log(s) for s in SHAPE),
                                             abs=1e-4)  # fmt: skip
    assert summary["detection_limits"]["level"] == SIGNIFICANCE


def test_the_figures_fall_as_repeat_grows(tmp_path):
    limits = limits_of(analyse(series(tmp_path), tmp_path))
    noisy = limits["by_case"]["noisy hello c=16 wrk"]["limit_at_repeat"]
    at = [noisy[str(n)] for n in REPEATS]
    assert at == sorted(at, reverse=True) and len(set(at)) == len(at), at
    assert at[-1] > MIN_EFFECT  # still above the floor: the fall is the rounds' doing
    # The quiet case sits on the floor at every REPEAT: never below it.
    quiet = limits["by_case"]["quiet hello c=16 wrk"]["limit_at_repeat"]
    assert all(value >= MIN_EFFECT for value in quiet.values())
    # The scenario's row: the median over its cases and their range, at each REPEAT.
    row = limits["by_scenario"]["hello c=16"]
    for n in REPEATS:
        values = [limits["by_case"][c]["limit_at_repeat"][str(n)] for c in limits["by_case"]]
        assert row["median"][str(n)] == pytest.approx(statistics.median(values), abs=1e-4)
        assert row["range"][str(n)] == [min(values), max(values)]


def test_a_case_without_two_rounds_a_run_or_two_runs_is_left_out_and_named(tmp_path):
    extra = {
        0: rounds("once", "kb1", 5000, [1.0, 1.1, 0.95]),  # in the first run only
        1: rounds("thin", "kb1", 7000, [1.0]),
        2: rounds("thin", "kb1", 7000, [1.0, 1.05]),  # one round in the run before
    }
    aa = analyse(series(tmp_path, extra), tmp_path)
    limits = limits_of(aa)
    assert set(limits["by_case"]) == {"noisy hello c=16 wrk", "quiet hello c=16 wrk"}
    assert limits["left_out"] == {
        "once kb1 c=16 wrk": "in one run only (a run-to-run spread needs 2 runs)",
        "thin kb1 c=16 wrk": "fewer than 2 rounds in a run (a round-to-round spread needs 2)",
    }
    text = (aa / "aa.md").read_text()
    assert "Left out (per case in aa.json): once kb1 c=16 wrk: in one run only" in text
    assert "thin kb1 c=16 wrk: fewer than 2 rounds in a run" in text
    assert "kb1 c=16 |" not in text  # no row for a scenario with no case left


def test_the_table_is_in_aa_md_with_what_it_is_and_is_not(tmp_path):
    text = (analyse(series(tmp_path), tmp_path) / "aa.md").read_text()
    section = text.split("## Choosing REPEAT", 1)[1]
    assert "| hello c=16 | 2 |" in section
    assert all(f"REPEAT {n}: median (range)" in section for n in REPEATS)
    for words in ("not measured at each REPEAT", "the level of a single test",
                  "Benjamini-Hochberg", 'will usually be reported "no change detected"',
                  "host made-up, 2 cores", "PROFILE=smoke REPEAT=3 DURATION=2.0"):
        assert words in section, words


def test_the_committed_aa_folder_is_what_make_aa_writes_from_its_runs(tmp_path):
    # The runs and every A/A folder beside them, as `make aa RUNS=<the four runs>` finds
    # them in docs/measurements: the folder it writes again must not feed on itself.
    for name in COMMITTED_RUNS:
        shutil.copytree(MEASURED / name, tmp_path / name)
    for folder in MEASURED.glob("aa-*"):
        if folder.is_dir():
            shutil.copytree(folder, tmp_path / folder.name)
    assert beside([tmp_path / name for name in COMMITTED_RUNS], MEASURED) == tmp_path.resolve()
    written = analyse([tmp_path / name for name in COMMITTED_RUNS], tmp_path)
    for file in ("aa.md", "aa.json"):
        assert (written / file).read_bytes() == (COMMITTED_AA / file).read_bytes(), (
            f"docs/measurements/{COMMITTED_AA.name}/{file}: make aa RUNS=" +
            ",".join(f"docs/measurements/{name}" for name in COMMITTED_RUNS))
    # Every committed case has a figure, and none rises with REPEAT.
    limits = limits_of(COMMITTED_AA)
    assert len(limits["by_case"]) == 20 and not limits["left_out"]
    for case in limits["by_case"].values():
        at = [case["limit_at_repeat"][str(n)] for n in REPEATS]
        assert at == sorted(at, reverse=True), case


def test_runs_of_different_folders_write_their_aa_into_the_results_folder(tmp_path):
    apart = [tmp_path / "a" / "run", tmp_path / "b" / "run"]
    assert beside(apart, tmp_path / "results") == tmp_path / "results"


SEPARATE_RUNS = MEASURED / "separate-runs-aa"
# Two series of two runs, the second started an hour after the first ended
# (docs/measurements/aa-false-alarms.md, "Across separate runs").
SERIES = ["20261129-200624-smoke", "20261129-201227-smoke", "20261129-211827-smoke",
          "20261129-212415-smoke"]  # fmt: skip


def test_the_separate_runs_aa_is_what_make_aa_writes_and_calls_no_cross_series_change(tmp_path):
    shutil.copytree(SEPARATE_RUNS, tmp_path, dirs_exist_ok=True)
    committed = SEPARATE_RUNS / f"aa-{SERIES[0]}-{SERIES[-1]}"
    shutil.rmtree(tmp_path / committed.name)  # written again from the runs alone
    written = analyse([tmp_path / name for name in SERIES], tmp_path)
    for file in ("aa.md", "aa.json"):
        assert (written / file).read_bytes() == (committed / file).read_bytes(), file
    pairs = json.loads((committed / "aa.json").read_text())["by_pair"]
    first = set(SERIES[:2])
    cross = [pair for pair in pairs if (pair["old"] in first) != (pair["new"] in first)]
    assert len(cross) == 4 and sum(pair["cases"] for pair in cross) == 48
    assert not any(pair["called"] for pair in cross)
    # Judged with the first series' spread, measured an hour before the second.
    assert all(f"aa-{SERIES[0]}-{SERIES[1]}" in pair["run_to_run_used"] for pair in cross)
