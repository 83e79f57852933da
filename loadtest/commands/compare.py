"""`make compare RUNS=<old>,<new>`: two runs side by side; `make compare RUN=<run>
SERVERS=<old>,<new>`: two stacks of one run (loadtest/report/compare.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from loadtest.bench.results import RESULTS_ROOT, run_folder
from loadtest.report.compare import CompareError, compare, compare_stacks
from loadtest.report.flags import add_flagged_argument


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("compare", help="compare two runs: ratio per case, what changed")
    parser.add_argument("runs", help="<old>,<new>: run ids under results/, or run folders; "
                        "with --stacks, one run")  # fmt: skip
    parser.add_argument("--stacks", help="<old>,<new>: two stacks of the one run, compared")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_ROOT, help=argparse.SUPPRESS)
    add_flagged_argument(parser)
    parser.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    leave_out = args.flagged == "leave-out"
    if args.stacks is not None:
        return cmd_compare_stacks(args, leave_out)
    names = [name.strip() for name in args.runs.split(",")]
    if len(names) != 2 or not all(names):
        print(f"compare: RUNS={args.runs!r}: give two runs, old first: RUNS=<old>,<new>")
        return 2
    old, new = (run_folder(name, args.results_dir) for name in names)
    try:
        return written(compare(old, new, args.results_dir, leave_out))
    except CompareError as exc:
        print(f"compare: {exc}")
        return 2


def cmd_compare_stacks(args: argparse.Namespace, leave_out: bool) -> int:
    stacks = [name.strip() for name in args.stacks.split(",")]
    if len(stacks) != 2 or not all(stacks) or "," in args.runs:
        print(f"compare: RUN={args.runs!r} SERVERS={args.stacks!r}: give one run and two of its "
              "stacks, old first: RUN=<run> SERVERS=<old>,<new>")  # fmt: skip
        return 2
    folder = run_folder(args.runs, args.results_dir)
    try:
        return written(compare_stacks(folder, *stacks, args.results_dir, leave_out))
    except CompareError as exc:
        print(f"compare: {exc}")
        return 2


def written(folder: Path) -> int:
    print(f"compare: {folder / 'compare.md'}")
    print(f"         {folder / 'compare.html'}")
    return 0
