"""`make bench`: verify, load and measure every stack, then report (the closing table too)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from loadtest.bench.results import RESULTS_ROOT, RUN_FILE, new_run_id, run_folder
from loadtest.bench.run import Bench
from loadtest.core.knobs import KNOBS, KnobError, Knobs, profile_names, resolve
from loadtest.core.manifest import ManifestError
from loadtest.report.run_report import run_and_report


def register(sub: argparse._SubParsersAction) -> None:
    bench = sub.add_parser(
        "bench",
        help="verify, load and measure stacks; write results/<run-id>/",
        description="Knobs default to the profile; the environment (e.g. DURATION=5) "
        "overrides it and the options below override both.",
    )
    bench.add_argument("--profile", help=f"one of: {', '.join(profile_names())}")
    for knob, key in KNOBS.items():
        bench.add_argument("--" + key.replace("_", "-"), dest=knob, metavar=knob)
    bench.add_argument("--resume", metavar="RUN", help="finish an earlier run (id or folder)")
    bench.add_argument("--results-dir", type=Path, default=RESULTS_ROOT, help=argparse.SUPPRESS)
    bench.add_argument("--dry-run", action="store_true", help="print the plan and the estimate")
    bench.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    # Logs and CI have no terminal width: do not wrap status lines and tables at 80.
    console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
    cli = {knob: getattr(args, knob) for knob in KNOBS}
    try:
        if args.resume:
            folder = run_folder(args.resume, args.results_dir)
            if not (folder / RUN_FILE).is_file():
                console.print(f"[red]--resume {args.resume}: no {RUN_FILE} in {folder}[/]")
                return 2
            knobs = Knobs.from_dict(json.loads((folder / RUN_FILE).read_text())["knobs"])
            given = [k for k, v in cli.items() if v not in (None, "")]
            if given:
                console.print(
                    f"[yellow]resume: the run keeps its own knobs; ignoring {', '.join(given)}[/]"
                )
        else:
            knobs = resolve(args.profile or "", os.environ, cli)
            folder = args.results_dir / new_run_id(knobs.profile)
    except (KnobError, ManifestError) as exc:
        console.print(f"[red]bench: {escape(str(exc))}[/]")
        return 2
    bench = Bench(knobs, folder, console, resume=bool(args.resume))
    return run_and_report(bench, dry_run=args.dry_run)
