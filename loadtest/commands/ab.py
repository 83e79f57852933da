"""`make ab`: did my change make it faster or slower? Two sides of one stack, one run.

    make ab SERVER=gin A=HEAD~1                     # the commit before against the working tree
    make ab SERVER=gin A=main B=my-branch           # two commits
    make ab SERVER=sanic B='WORKERS=2'              # a setting of the server (its environment)
    make ab SERVER=gin A='SERVER_CPU_QUOTA=1' B='SERVER_CPU_QUOTA=0.95,0.9,0.8'

Both sides run in every round of one bench (core/ab.py), so the comparison
(ab.md in the run's folder, by core/change.py's rule) needs no run-to-run term:
what the host does during the run falls on both. Every other knob is the
bench's, for both sides alike; REPEAT is the rounds of each side.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from loadtest.bench.ab_sides import make_sides
from loadtest.bench.results import RESULTS_FILE, RESULTS_ROOT, new_run_id
from loadtest.bench.run import Bench
from loadtest.core.ab import SideError, parse_sides
from loadtest.core.change import MIN_ROUNDS
from loadtest.core.errors import StepError
from loadtest.core.knobs import KNOBS, KnobError, resolve
from loadtest.core.manifest import ManifestError
from loadtest.report.compare import CompareError, compare_sides
from loadtest.report.flags import add_flagged_argument
from loadtest.report.run_report import run_and_report

DEFAULT_PROFILE = "quick"


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "ab", help="interleaved A/B: two commits or settings of one stack in one run, compared"
    )
    parser.add_argument("stack", help="the stack (SERVER)")
    parser.add_argument("--a", default="", help="side A: a git revision and/or NAME=value words")
    parser.add_argument("--b", default="", help="side B, as A; empty: the working tree")
    parser.add_argument("--profile", help=f"as for bench (default {DEFAULT_PROFILE})")
    for knob, key in KNOBS.items():
        parser.add_argument("--" + key.replace("_", "-"), dest=knob, metavar=knob)
    parser.add_argument("--results-dir", type=Path, default=RESULTS_ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--dry-run", action="store_true", help="print the plan and the estimate")
    add_flagged_argument(parser)
    parser.set_defaults(func=cmd_ab)


def cmd_ab(args: argparse.Namespace) -> int:
    console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
    cli = {knob: getattr(args, knob) for knob in KNOBS}
    try:
        a, b = parse_sides(args.a, args.b)
        knobs = resolve(args.profile or DEFAULT_PROFILE, os.environ, cli)
        if knobs.runner == "docker":  # refused before a revision's worktree is made
            raise SideError("the sides run natively (a side's commit or settings are not an "
                            "image of the working tree); leave RUNNER unset or native")  # fmt: skip
        sides = make_sides(args.stack, a, b)
    except (SideError, KnobError, ManifestError) as exc:
        console.print(f"[red]ab: {escape(str(exc))}[/]")
        return 2
    except StepError as exc:
        console.print(f"[red]ab: {escape(exc.explain())}[/]")
        return 2
    if knobs.repeat < MIN_ROUNDS:
        console.print(f"[yellow]ab: REPEAT={knobs.repeat}: a side of fewer than {MIN_ROUNDS} "
                      "rounds is shown, not tested[/]")  # fmt: skip
    knobs = dataclasses.replace(knobs, servers=list(sides.manifests), servers_from_profile=False,
                                runner="native")  # fmt: skip
    for side_id, manifest in sides.manifests.items():
        console.print(f"[bold]{escape(side_id)}[/] {escape(manifest.variant)}")
    folder = args.results_dir / new_run_id(f"ab-{args.stack}")
    code = run_and_report(Bench(knobs, folder, console, sides=sides), dry_run=args.dry_run)
    if args.dry_run or not (folder / RESULTS_FILE).is_file():
        return code
    try:
        written = compare_sides(folder, args.flagged == "leave-out")
    except CompareError as exc:
        console.print(f"[red]ab: {escape(str(exc))}[/]")
        return code or 1
    console.print(f"\n[bold]ab:[/] {escape(str(written))}")
    console.print(escape(written.read_text().split("\n## ")[0].rstrip()))
    return code
