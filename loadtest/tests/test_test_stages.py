"""`make test`'s stage bookkeeping (scripts/test-stages.sh), driven by a real bash.

Every stage's row, its budget's stop, and the lines at the end that say why a
stage failed: CI shows the tail of a run, so a failure must be named there,
not only in the stage's own output far above it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from loadtest.core.manifest import REPO_ROOT

STAGES = REPO_ROOT / "scripts" / "test-stages.sh"


def run_stages(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = f"""
set -uo pipefail
STAGE_LOG_DIR="{tmp_path}/logs" STAGE_TABLE="{tmp_path}/stages.tsv"
source "{STAGES}"
{body}
stage_report
status=$?
stage_failures
exit $status
"""
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)


def table(tmp_path: Path) -> dict[str, list[str]]:
    rows = (tmp_path / "stages.tsv").read_text().splitlines()[1:]
    return {row.split("\t")[0]: row.split("\t")[1:] for row in rows}


def test_a_passing_stage_is_a_row_and_no_failure_is_named(tmp_path):
    result = run_stages(tmp_path, "stage fine 30 echo all good")
    assert result.returncode == 0, result.stderr
    assert "all good" in result.stdout
    assert table(tmp_path)["fine"][0] == "passed"
    assert "failed (" not in result.stdout
    assert (tmp_path / "logs" / "fine.log").read_text() == "all good\n"


def test_a_failed_stage_names_its_failing_tests_at_the_end(tmp_path):
    summary = r"=== short test summary info ===\nFAILED t.py::test_b - assert 1 == 2"
    pytest_like = rf"printf 'collected 3\n..F\n{summary}\n1 failed, 2 passed\n'; exit 1"
    body = f"stage first 30 bash -c {pytest_like!r}\nstage second 30 echo later stage"
    result = run_stages(tmp_path, body)
    assert result.returncode == 1
    status, _, note = table(tmp_path)["first"]
    assert (status, note) == ("failed", "exit status 1")
    assert table(tmp_path)["second"][0] == "passed"
    tail = result.stdout.split("total")[-1]
    assert "--- first failed" in tail
    assert "FAILED t.py::test_b - assert 1 == 2" in tail
    assert "second failed" not in tail


def test_a_failure_without_a_summary_shows_the_end_of_its_output(tmp_path):
    body = "stage broken 30 bash -c 'echo step one; echo cannot reach the daemon >&2; exit 3'"
    result = run_stages(tmp_path, body)
    assert table(tmp_path)["broken"][2] == "exit status 3"
    tail = result.stdout.split("total")[-1]
    assert "--- broken failed" in tail and "cannot reach the daemon" in tail


def test_a_stage_past_its_budget_is_stopped_and_named(tmp_path):
    result = run_stages(tmp_path, "stage slow 1 sleep 20")
    assert result.returncode == 1
    status, seconds, note = table(tmp_path)["slow"]
    assert status == "failed" and "over its 1 s budget" in note
    assert int(seconds) < 10
    assert "--- slow failed, stopped: over its 1 s budget" in result.stdout.split("total")[-1]


def test_a_background_stage_failure_is_named_too(tmp_path):
    body = "background behind 30 bash -c 'echo FAILED t.py::test_c; exit 1'\nawait behind"
    result = run_stages(tmp_path, body)
    assert table(tmp_path)["behind"][0] == "failed"
    assert "FAILED t.py::test_c" in result.stdout.split("total")[-1]
