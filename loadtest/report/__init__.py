"""Reports of a run: summary.csv, summary.md, charts/*.png and report.html.

Everything is regenerated from `results.jsonl` and `run.json` alone, so
`make report RUN=<id>` can redo it at any time (also after an interrupted run).
"""

from __future__ import annotations

import json
from pathlib import Path

from loadtest.bench.results import RESULTS_FILE, RUN_FILE, read_records
from loadtest.report.chart_model import ordered_scenarios, scenario_figures
from loadtest.report.charts import all_charts
from loadtest.report.flags import mark_rounds
from loadtest.report.interactive import plotly_figures
from loadtest.report.render import html_report, markdown
from loadtest.report.summary import measurement_rows, stack_outcomes, write_csv


def generate(folder: Path, leave_out_flagged: bool = False) -> list[Path]:
    """Write the run's reports; with `leave_out_flagged` (FLAGGED=leave-out), from its
    unflagged rounds only, which the leaderboard's note counts."""
    whole_run = read_records(folder / RESULTS_FILE)
    records, left_out = mark_rounds(whole_run, leave_out_flagged)
    run_path = folder / RUN_FILE
    run = json.loads(run_path.read_text()) if run_path.is_file() else {"run_id": folder.name}
    if leave_out_flagged:
        run["_flagged_left_out"] = left_out
    rows = measurement_rows(records, whole_run)
    outcomes = stack_outcomes(whole_run)
    csv_path = folder / "summary.csv"
    write_csv(rows, csv_path)
    scenarios = ordered_scenarios(r["scenario"] for r in rows)
    model = {scenario: scenario_figures(rows, records, scenario) for scenario in scenarios}
    charts = all_charts(rows, records, folder / "charts", model)
    md_path = folder / "summary.md"
    md_path.write_text(markdown(rows, outcomes, run, charts))
    html_path = folder / "report.html"
    figures = {scenario: plotly_figures(drawn) for scenario, drawn in model.items()}
    html_path.write_text(html_report(rows, outcomes, run, charts, figures))
    pngs = [p for paths in charts.values() for p in paths]
    return [csv_path, md_path, html_path, *pngs]
