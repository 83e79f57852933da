"""`make compare RUNS=<old>,<new>`: two runs side by side (loadtest/report/compare.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from loadtest.bench.results import RESULTS_ROOT, run_folder
from loadtest.report.compare import CompareError, compare
from loadtest.report.flags import add_flagged_argument


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("compare", help="compare two runs: ratio per case, what changed")
    parser.add_argument("runs", help="<old>,<new>: run ids under results/, or run folders")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_ROOT, help=argparse.SUPPRESS)
    add_flagged_argument(parser)
    parser.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    names = [name.strip() for name in args.runs.split(",")]
    if len(names) != 2 or not all(names):
        print(f"compare: RUNS={args.runs!r}: give two runs, old first: RUNS=<old>,<new>")
        return 2
    old, new = (run_folder(name, args.results_dir) for name in names)
    try:
        folder = compare(old, new, args.results_dir, args.flagged == "leave-out")
    except CompareError as exc:
        print(f"compare: {exc}")
        return 2
    print(f"compare: {folder / 'compare.md'}")
    print(f"         {folder / 'compare.html'}")
    return 0
