"""The table a run prints at its end (report/run_report.print_summary), read from
committed runs: a quota sweep shows each capped stack, not the uncapped ceiling alone."""

from __future__ import annotations

from types import SimpleNamespace

from rich.console import Console

from loadtest.report.run_report import print_summary
from loadtest.report.run_rounds import MEASUREMENTS_DIR


def printed(run: str) -> str:
    console = Console(record=True, width=220)
    print_summary(SimpleNamespace(folder=MEASUREMENTS_DIR / run, console=console))
    return console.export_text()


def test_a_quota_sweep_prints_each_stack_at_each_quota_and_the_ceiling_last():
    text = printed("20261129-131040-cpu-sweep-2019")
    for quota in ("0.25", "0.35", "0.41", "0.65"):
        assert f"Go net/http (quota {quota})" in text and f"httptools (quota {quota})" in text
    assert text.index("nginx (ceiling)") > text.index("httptools (quota 0.65)")


def test_a_run_without_caps_names_its_stacks_alone():
    text = printed("20261128-130814-smoke")
    assert "Sanic " in text and "quota" not in text and "core)" not in text
