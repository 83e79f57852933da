"""One rule, everywhere (core/change.py), on committed runs: the leaderboard's gap and
`make compare` give the same verdict on the same pair of stacks of one run; compare
knows one invocation from separate runs and says which run-to-run spread it used;
flagged rounds are marked, or left out with FLAGGED=leave-out; `make aa` measures the
run-to-run spread that compare then uses. Files only: no server is started."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from loadtest.bench.results import RESULTS_FILE, RUN_FILE, read_records
from loadtest.core.change import DEFAULT_RUN_TO_RUN_SD, central
from loadtest.core.manifest import REPO_ROOT
from loadtest.report.aa import analyse
from loadtest.report.compare import CompareError, compare, compare_stacks
from loadtest.report.flags import JIT_UNREAD, mark_rounds
from loadtest.report.leaderboard import LEADERBOARD_HEAD, gap_pairs, ranked_rows
from loadtest.report.render import boards
from loadtest.report.summary import group_key, measurement_rows

MEASURED = REPO_ROOT / "docs" / "measurements"
# Six JVM and .NET stacks and the ceiling, three rounds of workday: gaps of every kind.
WORKDAY = MEASURED / "20261128-160703-workday-2019"
AA_RUNS = ["20261128-130814-smoke", "20261128-131357-smoke", "20261128-131928-smoke",
           "20261128-132450-smoke"]  # fmt: skip


def compare_rows(folder) -> dict[str, list[str]]:
    """compare.md's table, keyed by its stack column."""
    cells = {}
    for line in (folder / "compare.md").read_text().splitlines():
        if line.startswith("| ") and not line.startswith("| stack") and "---" not in line:
            row = [cell.strip() for cell in line.strip("|").split(" | ")]
            cells[row[0]] = row
    return cells


def row_key(row: dict) -> tuple:
    """A summary row's records: the same key as summary.group_key."""
    return (row["stack"], row["scenario"], row["connections"], row["tool"], row["phase"],
            row["rate_spec"], row["cpu_quota"], row["server_cores"])  # fmt: skip


def side(folder, records: list[dict], run: dict) -> None:
    folder.mkdir()
    (folder / RESULTS_FILE).write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / RUN_FILE).write_text(json.dumps(run))


@pytest.mark.parametrize("flagged", ["mark", "leave-out"])
def test_the_leaderboard_and_compare_give_the_same_verdict_on_each_pair(tmp_path, flagged):
    # Each gap of the run's leaderboard becomes one case of a comparison: the slower
    # stack's rounds as the old run, the faster one's as the new, both with the run's
    # own run.json (one invocation). Every case of that comparison, judged together as
    # the leaderboard judges its gaps, must read as the leaderboard's gap.
    leave_out = flagged == "leave-out"
    whole_run = read_records(WORKDAY / RESULTS_FILE)
    records, _ = mark_rounds(whole_run, leave_out)
    rows = measurement_rows(records, whole_run)  # as the report makes them
    pairs = gap_pairs(ranked_rows(rows))
    assert len(pairs) >= 5
    run = json.loads((WORKDAY / RUN_FILE).read_text())
    old, new = [], []
    for number, (faster, slower) in enumerate(pairs):
        for chosen, into in ((slower, old), (faster, new)):
            into += [{**r, "stack": f"gap{number}"} for r in records
                     if r.get("kind") == "measurement" and group_key(r) == row_key(chosen)]
    side(tmp_path / "old", old, run)
    side(tmp_path / "new", new, run)
    # The rounds left out above stay out: the pairs' runs are already without them.
    compared = compare_rows(compare(tmp_path / "old", tmp_path / "new", tmp_path))
    assert "The unit: both sides are rounds of one invocation" in (
        tmp_path / "compare-old-vs-new" / "compare.md").read_text()

    gap_column = LEADERBOARD_HEAD.index("gap to next")
    shown = [(cell[1], cell[gap_column]) for _, cells in boards(rows) for cell in cells
             if cell[0] != "-" and cell[gap_column] != "-"]  # the ranked, in gap_pairs' order
    assert [name for name, _ in shown] == [faster["display_name"] for faster, _ in pairs]
    words = {"significant": ("improvement",), "within noise": ("no change detected",),
             "cannot tell": ("cannot tell",), "not tested": ("not tested",)}  # fmt: skip
    kinds = set()
    for number in range(len(pairs)):
        gap = shown[number][1]
        verdict = compared[f"gap{number}"][8]
        kind = gap.split(" (")[0]
        kinds.add(kind)
        assert verdict.startswith(words[kind]), (gap, verdict)
        assert gap[len(kind):] == verdict[len(verdict.split(" (")[0]):], (gap, verdict)
    assert len(kinds) >= 2, kinds  # the run has gaps the rule calls and gaps it does not


def test_separate_runs_carry_the_default_run_to_run_spread_until_make_aa_measures_one(tmp_path):
    results = tmp_path / "results"
    for name in AA_RUNS:
        shutil.copytree(MEASURED / name, results / name)
    first, second = results / AA_RUNS[0], results / AA_RUNS[1]
    text = (compare(first, second, results) / "compare.md").read_text()
    assert (f"no `make aa` of this host kind with PROFILE=smoke REPEAT=3 DURATION=2.0 "
            f"CONNECTIONS=[16], so each side carries the default run-to-run spread of "
            f"{DEFAULT_RUN_TO_RUN_SD:.0%}") in text and "a default, not a measurement" in text
    assert "rounds a side detect" in text  # beside every verdict that is not a change

    aa = analyse([results / name for name in AA_RUNS], results)
    measured = json.loads((aa / "aa.json").read_text())["run_to_run"]
    assert measured["matched_on"] == {"profile": "smoke", "repeat": 3, "duration": 2.0,
                                      "connections": [16]}  # fmt: skip
    assert len(measured["by_case"]) == 20 and 0 <= measured["pooled"] < 0.5
    text = (compare(first, second, results) / "compare.md").read_text()
    assert f"as `make aa` measured it on this host kind" in text and aa.name in text


def test_a_run_compared_with_itself_is_one_invocation_and_nothing_changes(tmp_path):
    text = (compare(WORKDAY, WORKDAY, tmp_path) / "compare.md").read_text()
    assert "rounds of one invocation" in text
    counts = re.search(r"cases? in both runs, by verdict: (.*)\.", text).group(1)
    assert counts.startswith("regression 0, improvement 0"), counts


def test_flagged_rounds_are_marked_where_the_figure_is_and_can_be_left_out(tmp_path):
    # Spring MVC, ASP.NET Core and the rest declare a JIT; this run's rounds carry flags.
    marked = compare_rows(compare(WORKDAY, WORKDAY, tmp_path))
    flagged = [row[10] for row in marked.values() if row[10] != "-; -"]
    assert flagged and all(";" in cell for cell in flagged)
    records, left_out = mark_rounds(read_records(WORKDAY / RESULTS_FILE), leave_out=True)
    kept = [r for r in records if r.get("kind") == "measurement"]
    assert left_out > 0 and all(not set(r["_flags"]) - {JIT_UNREAD} for r in kept)
    rows = measurement_rows(read_records(WORKDAY / RESULTS_FILE))
    flag_column = LEADERBOARD_HEAD.index("flagged rounds")
    cells = [cell[flag_column] for _, board in boards(rows) for cell in board]
    assert any(cell != "-" for cell in cells), cells


def test_two_stacks_of_one_run_are_compared_case_by_case_as_one_invocation(tmp_path):
    folder = compare_stacks(WORKDAY, "spring-mvc", "aspnetcore", tmp_path)
    text = (folder / "compare.md").read_text()
    assert "spring-mvc as old -> aspnetcore as new" in text
    assert "The unit: both sides are rounds of one invocation" in text
    assert "- aspnetcore: Microsoft.AspNetCore.App" in text  # what each side ran on
    rows = [[cell.strip() for cell in line.strip("|").split(" | ")]
            for line in text.splitlines() if line.startswith("| aspnetcore / spring-mvc |")]
    records = [r for r in read_records(WORKDAY / RESULTS_FILE)
               if r.get("kind") == "measurement" and r.get("status") == "ok"]  # fmt: skip
    assert {row[2] for row in rows} == {"16", "64", "256"}
    for row in rows:
        rounds = {stack: [r["result"]["rps"] for r in records if r["stack"] == stack
                          and r["scenario"] == "workday" and str(r["connections"]) == row[2]]
                  for stack in ("spring-mvc", "aspnetcore")}  # fmt: skip
        assert float(row[6]) == pytest.approx(
            central(rounds["aspnetcore"]) / central(rounds["spring-mvc"]), abs=0.001)
    with pytest.raises(CompareError, match="no gin; it measured aspnetcore"):
        compare_stacks(WORKDAY, "gin", "aspnetcore", tmp_path)
