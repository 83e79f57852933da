"""`make report RUN=<id>`: regenerate summary, charts and report.html of a run."""

from __future__ import annotations

import argparse
from pathlib import Path

from loadtest.bench.results import RESULTS_FILE, RESULTS_ROOT, run_folder
from loadtest.report import generate
from loadtest.report.flags import add_flagged_argument
from loadtest.report.gallery import write_index


def register(sub: argparse._SubParsersAction) -> None:
    report = sub.add_parser("report", help="regenerate summary, charts and report.html of a run")
    report.add_argument("run", help="run id under results/, or a run folder")
    report.add_argument("--results-dir", type=Path, default=RESULTS_ROOT, help=argparse.SUPPRESS)
    add_flagged_argument(report)
    report.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    folder = run_folder(args.run, args.results_dir)
    if not (folder / RESULTS_FILE).is_file():
        runs = sorted(p.name for p in args.results_dir.glob("*/") if (p / RESULTS_FILE).is_file())
        print(f"report: no {RESULTS_FILE} in {folder}; runs: {', '.join(runs[-10:]) or 'none'}")
        return 2
    outputs = generate(folder, args.flagged == "leave-out")
    print(f"report: {folder}")
    for path in outputs:
        print(f"  {path.relative_to(folder)}")
    if folder.resolve().parent == args.results_dir.resolve():  # not beside a committed run
        print(f"every run: {write_index(folder.parent)}")
    return 0
