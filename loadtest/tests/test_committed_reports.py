"""The text of every run committed under docs/measurements is what the report's rules
write today (report/committed.py): a rule that changes a verdict changes the pages,
or this fails and `make measurements` writes them again."""

from __future__ import annotations

import shutil

import pytest

from loadtest import report
from loadtest.core.manifest import REPO_ROOT
from loadtest.report.committed import KEPT_TEXT, committed_runs, is_ab_run, write_again
from loadtest.report.run_rounds import MEASUREMENTS_DIR

RUNS = committed_runs()


def test_the_committed_runs_are_found():
    assert len(RUNS) >= 20 and sum(map(is_ab_run, RUNS)) >= 5


@pytest.mark.parametrize("folder", RUNS, ids=[str(r.relative_to(MEASUREMENTS_DIR)) for r in RUNS])
def test_a_committed_runs_text_is_what_the_rules_write_today(folder, tmp_path):
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    written = write_again(copy, MEASUREMENTS_DIR, str(folder.relative_to(REPO_ROOT)))
    assert {path.name for path in written} <= set(KEPT_TEXT)
    for path in written:
        kept = folder / path.name
        assert kept.is_file(), f"{kept} is not committed: make measurements"
        assert path.read_text() == kept.read_text(), f"{kept} is stale: make measurements"


def test_a_changed_figure_is_caught(tmp_path):
    folder = next(run for run in RUNS if is_ab_run(run))
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    records = (copy / "results.jsonl").read_text().replace('"rps": ', '"rps": 1', 1)
    (copy / "results.jsonl").write_text(records)
    written = write_again(copy, MEASUREMENTS_DIR, str(folder.relative_to(REPO_ROOT)))
    assert any(path.read_text() != (folder / path.name).read_text() for path in written)


def test_make_report_on_a_committed_run_draws_beside_it_and_keeps_its_text(tmp_path, monkeypatch):
    folder = MEASUREMENTS_DIR / "20261128-130814-smoke"
    root = tmp_path / "measurements"
    copy = root / folder.name
    shutil.copytree(folder, copy)
    monkeypatch.setattr(report, "MEASUREMENTS_DIR", root)
    written = report.generate(copy, leave_out_flagged=True)  # FLAGGED=leave-out, even
    assert (copy / "report.html") in written and (copy / "charts").is_dir()
    for name in ("summary.csv", "summary.md"):
        assert (copy / name).read_bytes() == (folder / name).read_bytes(), name


def test_the_index_names_every_page_and_every_folder_of_runs():
    """docs/measurements/README.md is where a reader starts: no page or group is missed."""
    index = (MEASUREMENTS_DIR / "README.md").read_text()
    for page in MEASUREMENTS_DIR.glob("*.md"):
        assert page.name == "README.md" or f"]({page.name})" in index, page.name
    for folder in (path for path in MEASUREMENTS_DIR.iterdir() if path.is_dir()):
        grouped = not (folder / "run.json").is_file() and not folder.name.startswith("aa-")
        assert not grouped or f"`{folder.name}/`" in index, folder.name
