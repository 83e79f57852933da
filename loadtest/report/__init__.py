"""Reports of a run: summary.csv, summary.md, charts/*.png and report.html.

Everything is regenerated from `results.jsonl` and `run.json` alone, so
`make report RUN=<id>` can redo it at any time (also after an interrupted run).
"""

from __future__ import annotations

import json
from pathlib import Path

from loadtest.bench.results import RESULTS_FILE, RUN_FILE, read_records, run_argument
from loadtest.report.chart_model import ordered_scenarios, scenario_figures
from loadtest.report.charts import all_charts
from loadtest.report.flags import mark_rounds
from loadtest.report.interactive import plotly_figures
from loadtest.report.render import html_report, markdown
from loadtest.report.run_rounds import MEASUREMENTS_DIR
from loadtest.report.summary import measurement_rows, stack_outcomes, write_csv


def generate(folder: Path, leave_out_flagged: bool = False, drawn: bool = True,
             shown_as: str | None = None) -> list[Path]:  # fmt: skip
    """Write the run's reports; with `leave_out_flagged` (FLAGGED=leave-out), from its
    unflagged rounds only, which the leaderboard's note counts. Without `drawn`, the text
    alone (summary.csv, summary.md): what a run committed to docs/measurements keeps.
    `shown_as`: the RUN= the pages name (by default the folder's own)."""
    whole_run = read_records(folder / RESULTS_FILE)
    records, left_out = mark_rounds(whole_run, leave_out_flagged)
    run_path = folder / RUN_FILE
    run = json.loads(run_path.read_text()) if run_path.is_file() else {"run_id": folder.name}
    run["_report_run"] = shown_as or run_argument(folder)
    run["_has_raw"] = (folder / "raw").is_dir()
    if leave_out_flagged:
        run["_flagged_left_out"] = left_out
    rows = measurement_rows(records, whole_run)
    outcomes = stack_outcomes(whole_run)
    csv_path, md_path = folder / "summary.csv", folder / "summary.md"
    if not drawn:
        write_csv(rows, csv_path)
        md_path.write_text(markdown(rows, outcomes, run, None))
        return [csv_path, md_path]
    scenarios = ordered_scenarios(r["scenario"] for r in rows)
    model = {scenario: scenario_figures(rows, records, scenario) for scenario in scenarios}
    charts = all_charts(rows, records, folder / "charts", model)
    html_path = folder / "report.html"
    figures = {scenario: plotly_figures(drawn) for scenario, drawn in model.items()}
    html_path.write_text(html_report(rows, outcomes, run, charts, figures))
    pngs = [p for paths in charts.values() for p in paths]
    if is_committed_run(folder):  # its text is `make measurements`'s, by the default rules
        return [html_path, *pngs]
    write_csv(rows, csv_path)
    md_path.write_text(markdown(rows, outcomes, run, charts))
    return [csv_path, md_path, html_path, *pngs]


def is_committed_run(folder: Path) -> bool:
    """A run committed under docs/measurements, whose summaries are tracked."""
    return folder.resolve().is_relative_to(MEASUREMENTS_DIR.resolve())
