"""A real bench with three rounds, then what a user does with runs: read the
leaderboard, find the run in results/index.html, compare it with another.

The "other" run is a copy of the real one with one stack's requests/s scaled
by a known factor in results.jsonl (and a different commit in run.json), so
the comparison has a known answer; load goes to 127.0.0.1 only.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from loadtest.core.manifest import REPO_ROOT
from loadtest.tests.browser import CHROMIUM, MISSING, inspect, screenshot
from loadtest.tests.test_bench_faults import (
    NEEDS_NGINX_AND_WRK,
    SHORT,
    bench_env,
    only_run,
    run_bench,
)

# nginx and wrk needed, as for the fault tests.
pytestmark = [pytest.mark.e2e, NEEDS_NGINX_AND_WRK]

# Three rounds of a stand-in on a busy host can spread by +-50% (a log spread near
# 0.4); a figure ten times higher is an improvement by Welch's t whatever that spread,
# a tripled one is not always.
FASTER = 10.0


def scaled_copy(folder, stack: str, factor: float):
    copy = folder.parent / (folder.name + "-copy")
    shutil.copytree(folder, copy)
    lines = []
    for line in (copy / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "measurement" and record["stack"] == stack:
            record["result"]["rps"] *= factor
        lines.append(json.dumps(record))
    (copy / "results.jsonl").write_text("\n".join(lines) + "\n")
    run = json.loads((copy / "run.json").read_text())
    run["git"]["commit"] = "0" * 40
    run["started_at"] = "2099-01-01T00:00:00+00:00"
    (copy / "run.json").write_text(json.dumps(run))
    return copy


def harness(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "loadtest", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


# timing: the comparison must call a tenfold copy an improvement, which rounds that
# another bench beside it collapsed could not show (detection limit 74,808%).
@pytest.mark.timing
def test_leaderboard_gallery_and_comparison_of_real_runs(stacks, tmp_path):
    first, second = stacks.add("first"), stacks.add("second")
    results = tmp_path / "results"
    done = run_bench(stacks, results, [first, second], "--repeat", "3", "--duration", "1",
                     timeout=240)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    folder = only_run(results)

    summary = (folder / "summary.md").read_text()
    assert summary.startswith(f"# serverlab results: {folder.name}\n\n## Leaderboard")
    assert "(interval over rounds)" in summary and "gap to next" in summary
    header, *rows = (folder / "summary.csv").read_text().splitlines()
    columns = header.split(",")
    for row in rows:
        values = dict(zip(columns, row.split(",")))
        if values["phase"] == "measure" and values["runs"] == "3":
            low, mid, high = (float(values[k]) for k in ("rps_ci_low", "rps_median", "rps_ci_high"))
            assert low <= mid <= high and values["rps_ci_source"] == "rounds"
            assert float(values["rps_per_cpu_s"]) > 0 and float(values["rss_per_1k_conn_mb"]) > 0
    assert (folder / "charts" / "efficiency-hello.png").is_file()
    if CHROMIUM:  # the report as a reader opens it (test_report.py checks the details)
        seen = inspect(folder / "report.html")
        assert seen["drawn"] == seen["charts"] and int(seen["charts"]) >= 3, seen
        assert (seen["errors"], seen["console"], seen["blocked"]) == ("0", "0", "0"), seen
        screenshot(folder / "report.html", "report-rounds.png")

    copy = scaled_copy(folder, first, FASTER)
    listed = harness("report", str(copy), "--results-dir", str(results))
    assert listed.returncode == 0, listed.stdout + listed.stderr
    index = (results / "index.html").read_text()
    assert index.index(copy.name) < index.index(f">{folder.name}<")  # newest first
    for run in (folder, copy):
        assert f'href="{run.name}/report.html"' in index and (run / "report.html").is_file()

    compared = harness("compare", f"{folder.name},{copy.name}", "--results-dir", str(results))
    assert compared.returncode == 0, compared.stdout + compared.stderr
    report = (results / f"compare-{folder.name}-vs-{copy.name}" / "compare.md").read_text()
    lines = {line.split(" | ")[0].strip("| "): line for line in report.splitlines() if " | " in line}
    assert "improvement" in lines[first] and f"{FASTER:.3f}" in lines[first], report
    # The same figures: +0.0%, never called a change ("no change detected" where the
    # interval is within the floor, "cannot tell" where this host's noise widens it past).
    assert "1.000 |" in lines[second] and "+0.0%" in lines[second], report
    assert not any(word in lines[second] for word in ("regression", "improvement")), report
    assert "commit:" in report and "0000000000" in report
    if CHROMIUM:
        page = results / f"compare-{folder.name}-vs-{copy.name}" / "compare.html"
        seen = inspect(page)
        assert (seen["charts"], seen["drawn"]) == ("1", "1"), seen
        assert (seen["errors"], seen["console"], seen["blocked"]) == ("0", "0", "0"), seen
        assert "new/old" in seen["hover"], seen["hover"]
        assert int(seen["after"]) == int(seen["before"]) - 1, seen  # a stack hidden
        screenshot(page, "compare.png", height=1400)
    else:
        print(MISSING)

    for bad in ("one-run-only", f"{folder.name},no-such-run"):
        refused = harness("compare", bad, "--results-dir", str(results))
        assert refused.returncode == 2 and "compare:" in refused.stdout, refused.stdout


def test_a_a_runs_give_the_false_alarm_rate_that_compare_prints(stacks, tmp_path):
    # Three real runs of the same stand-in, every pair compared by make compare's rules.
    only = stacks.add("only")
    results = tmp_path / "results"
    made = subprocess.run(
        [sys.executable, "-m", "loadtest", "aa", "--times", "3", "--results-dir", str(results),
         "--servers", only, *SHORT, "--repeat", "3", "--duration", "1"],
        cwd=REPO_ROOT, env=bench_env(stacks), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    (folder,) = results.glob("aa-*")
    summary = json.loads((folder / "aa.json").read_text())
    runs = summary["runs"]
    assert len(runs) == 3 and summary["pairs"] == 3
    assert [(p["old"], p["new"]) for p in summary["by_pair"]] == [
        (runs[0], runs[1]), (runs[0], runs[2]), (runs[1], runs[2])]  # fmt: skip
    # Two cases a run (the stand-in and the ceiling), each pair compares both.
    assert summary["cases_compared"] == 6
    called = sum(len(p["called"]) for p in summary["by_pair"])
    assert summary["changes_called"] == called
    assert summary["false_alarm_rate"] == called / 6
    assert 0 <= summary["floor"] <= summary["largest_difference"]
    assert "false alarms:" in made.stdout
    # One process made the three runs: each started from the cores the process was given.
    cores = [json.loads((results / r / "run.json").read_text())["host"]["cores_available"]
             for r in runs]  # fmt: skip
    assert cores == [cores[0]] * 3

    compared = harness("compare", f"{runs[0]},{runs[2]}", "--results-dir", str(results))
    assert compared.returncode == 0, compared.stdout + compared.stderr
    report = (results / f"compare-{runs[0]}-vs-{runs[2]}" / "compare.md").read_text()
    assert f"A/A runs on this host ({folder.name}: 3 pairs of 3 runs" in report

    # Runs of different things are not an A/A pair, and the refusal says what differs.
    other = results / runs[2]
    run = json.loads((other / "run.json").read_text())
    run["knobs"]["repeat"] = 5
    (other / "run.json").write_text(json.dumps(run))
    refused = harness("aa", "--runs", f"{runs[0]},{runs[2]}", "--results-dir", str(results))
    assert refused.returncode == 2
    assert "not a run of the same thing (repeat differ)" in refused.stdout
