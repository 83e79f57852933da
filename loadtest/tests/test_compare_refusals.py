"""`make compare` on committed runs: what it refuses, naming why, and the caution it
prints above the table when the runs were measured with other settings
(report/compare.py). No server is started."""

from __future__ import annotations

import pytest

from loadtest.report.compare import CompareError, compare
from loadtest.report.run_rounds import MEASUREMENTS_DIR

SMOKE = MEASUREMENTS_DIR / "20261128-130814-smoke"  # sanic, uvloop, fastify; 2 s, 3 rounds
SMOKE_AGAIN = MEASUREMENTS_DIR / "20261128-132450-smoke"  # the same, minutes later
SMOKE_AGAIN_LATER = MEASUREMENTS_DIR / "20261128-131928-smoke"  # both ran on core 1 alone
AB_GIN = MEASUREMENTS_DIR / "interleaved-ab" / "20261129-201822-ab-gin"  # quick, 5 rounds
WSGI = MEASUREMENTS_DIR / "20261129-132218-wsgi-2016"  # ab at 100+ connections
SUMMARY_ONLY = MEASUREMENTS_DIR / "20261128-143713-ab-2017"  # summary.csv, no rounds


def test_runs_that_share_no_case_are_refused(tmp_path):
    with pytest.raises(CompareError, match="share no case"):
        compare(SMOKE, WSGI, tmp_path)


def test_a_run_kept_as_its_summary_alone_is_refused_for_what_it_is(tmp_path):
    with pytest.raises(CompareError, match="kept its summary alone"):
        compare(SUMMARY_ONLY, SMOKE, tmp_path)


def test_other_settings_are_said_above_the_table(tmp_path):
    head = (compare(SMOKE, AB_GIN, tmp_path) / "compare.md").read_text().split("| stack |")[0]
    assert "Measured with other settings (" in head
    for differs in ("knob duration: 2.0 -> 3.0", "knob profile: 'smoke' -> 'quick'",
                    "knob repeat: 3 -> 5"):  # fmt: skip
        assert differs in head, head
    # The committed A/As beside the runs are found; theirs are smoke settings, not quick's.
    assert "A/A runs on this host (aa-" in head and "They were measured with other" in head
    same = (compare(SMOKE_AGAIN, SMOKE_AGAIN_LATER, tmp_path) / "compare.md").read_text()
    assert "Measured with other settings" not in same
    assert "A/A runs on this host (aa-" in same and "They were measured with other" not in same
