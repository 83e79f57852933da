"""Reports of a run: summary.csv, summary.md, charts/*.png and report.html.

Everything is regenerated from `results.jsonl` and `run.json` alone, so
`make report RUN=<id>` can redo it at any time (also after an interrupted run).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..results import RESULTS_FILE, RESULTS_ROOT, RUN_FILE, read_records, run_folder
from .charts import all_charts
from .render import html_report, markdown
from .summary import measurement_rows, stack_outcomes, write_csv


def generate(folder: Path) -> list[Path]:
    records = read_records(folder / RESULTS_FILE)
    run_path = folder / RUN_FILE
    run = json.loads(run_path.read_text()) if run_path.is_file() else {"run_id": folder.name}
    rows = measurement_rows(records)
    outcomes = stack_outcomes(records)
    csv_path = folder / "summary.csv"
    write_csv(rows, csv_path)
    charts = all_charts(rows, records, folder / "charts")
    md_path = folder / "summary.md"
    md_path.write_text(markdown(rows, outcomes, run, charts))
    html_path = folder / "report.html"
    html_path.write_text(html_report(rows, outcomes, run, charts))
    pngs = [p for paths in charts.values() for p in paths]
    return [csv_path, md_path, html_path, *pngs]


def register(sub: argparse._SubParsersAction) -> None:
    report = sub.add_parser("report", help="regenerate summary, charts and report.html of a run")
    report.add_argument("run", help="run id under results/, or a run folder")
    report.add_argument("--results-dir", type=Path, default=RESULTS_ROOT, help=argparse.SUPPRESS)
    report.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    folder = run_folder(args.run, args.results_dir)
    if not (folder / RESULTS_FILE).is_file():
        runs = sorted(p.name for p in args.results_dir.glob("*/") if (p / RESULTS_FILE).is_file())
        print(f"report: no {RESULTS_FILE} in {folder}; runs: {', '.join(runs[-10:]) or 'none'}")
        return 2
    outputs = generate(folder)
    print(f"report: {folder}")
    for path in outputs:
        print(f"  {path.relative_to(folder)}")
    return 0
