"""`make aa`: the same bench several times, every pair compared (report/aa.py).

    make aa PROFILE=smoke REPEAT=3 SERVERS=sanic,uvloop,fastify AA_RUNS=4
    make aa RUNS=<run>,<run>,<run>      # runs already made of the same thing

The false-alarm rate it writes is what `make compare` prints for this host, and
its table "Choosing REPEAT" what each REPEAT can tell here. With RUNS, nothing
is measured: the runs are judged again and the A/A folder is written beside
them when they share a folder (a committed A/A is regenerated in place).
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
CHOOSING = "## Choosing REPEAT"  # the section of aa.md printed with its table


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
        root = beside(folders, root)
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
    text = (folder / "aa.md").read_text()
    console.print(escape(text.split("\n\n")[2]))
    choosing = text.split(CHOOSING, 1)[1].split("\n\n")
    console.print(escape("\n\n".join([CHOOSING.strip(), *choosing[2:]]).rstrip()))
    return 0


def beside(folders: list[Path], root: Path) -> Path:
    """Where an A/A of runs already made is written: the folder the runs share, else the
    results folder."""
    parents = {folder.resolve().parent for folder in folders}
    return parents.pop() if len(parents) == 1 else root


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
