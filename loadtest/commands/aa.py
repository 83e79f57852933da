"""`make aa`: the same bench several times, every pair compared (report/aa.py).

    make aa PROFILE=smoke REPEAT=3 SERVERS=sanic,uvloop,fastify AA_RUNS=4
    make aa RUNS=<run>,<run>,<run>      # runs already made of the same thing

The false-alarm rate it writes is what `make compare` prints for this host.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from loadtest.bench.results import RESULTS_ROOT, new_run_id, run_folder
from loadtest.bench.run import Bench
from loadtest.core.knobs import KNOBS, KnobError, resolve
from loadtest.core.manifest import ManifestError
from loadtest.report.aa import analyse
from loadtest.report.compare import CompareError
from loadtest.report.flags import add_flagged_argument
from loadtest.report.run_report import run_and_report

DEFAULT_RUNS = 4  # six pairs


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "aa", help="A/A: the same bench several times, every pair compared: the false-alarm rate"
    )
    parser.add_argument("--profile", help="as for bench")
    for knob, key in KNOBS.items():
        parser.add_argument("--" + key.replace("_", "-"), dest=knob, metavar=knob)
    parser.add_argument("--times", type=int, default=DEFAULT_RUNS, help="runs to make (>= 2)")
    parser.add_argument("--runs", help="analyse these runs instead: ids or folders, oldest first")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_ROOT,
                        help=argparse.SUPPRESS)  # fmt: skip
    add_flagged_argument(parser)
    parser.set_defaults(func=cmd_aa)


def cmd_aa(args: argparse.Namespace) -> int:
    console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
    root = args.results_dir
    if args.runs:
        folders = [run_folder(name.strip(), root) for name in args.runs.split(",") if name.strip()]
    else:
        folders = make_runs(args, console)
        if folders is None:
            return 2
    try:
        folder = analyse(folders, root, args.flagged == "leave-out")
    except CompareError as exc:
        console.print(f"[red]aa: {escape(str(exc))}[/]")
        return 2
    console.print(f"aa: {folder / 'aa.md'}")
    console.print((folder / "aa.md").read_text().split("\n\n")[2])
    return 0


def make_runs(args: argparse.Namespace, console: Console) -> list | None:
    """`--times` runs of one set of knobs; None when the knobs are refused. A run that
    fails is kept out of the pairs and named."""
    if args.times < 2:
        console.print("[red]aa: AA_RUNS must be 2 or more (one pair at least)[/]")
        return None
    cli = {knob: getattr(args, knob) for knob in KNOBS}
    try:
        knobs = resolve(args.profile or "", os.environ, cli)
    except (KnobError, ManifestError) as exc:
        console.print(f"[red]aa: {escape(str(exc))}[/]")
        return None
    folders = []
    for number in range(1, args.times + 1):
        folder = args.results_dir / new_run_id(knobs.profile)
        while folder.exists():  # run ids are to the second
            time.sleep(1)
            folder = args.results_dir / new_run_id(knobs.profile)
        console.print(f"[bold]aa: run {number} of {args.times}[/] ({escape(folder.name)})")
        code = run_and_report(Bench(knobs, folder, console))
        if code == 0:
            folders.append(folder)
        else:
            console.print(f"[yellow]aa: run {escape(folder.name)} ended with {code}: "
                          "left out of the pairs[/]")  # fmt: skip
    return folders
