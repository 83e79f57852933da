"""`make bench`: verify, load and measure every stack, then report (the closing table too)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from loadtest.bench.results import (
    RESULTS_FILE,
    RESULTS_ROOT,
    RUN_FILE,
    new_run_id,
    read_records,
    run_folder,
)
from loadtest.bench.run import Bench
from loadtest.core.knobs import KNOBS, SCENARIOS, KnobError, Knobs, profile_names, resolve
from loadtest.core.manifest import ManifestError
from loadtest.report import generate
from loadtest.report.chart_model import uncapped
from loadtest.report.flags import flag_names
from loadtest.report.gallery import write_index
from loadtest.report.render import limited_by
from loadtest.report.summary import measurement_rows
from loadtest.runners import calibration


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


def run_and_report(bench: Bench, dry_run: bool = False) -> int:
    """The run, then its report (summary.csv, summary.md, charts, report.html) and the
    closing table; the exit status is the run's unless the report itself fails."""
    code = bench.run(dry_run=dry_run)
    if not bench.measuring:
        return code
    if bench.write_failed:
        # The folder takes no more files: no report now, the numbers are safe.
        print_summary(bench)
        list_failed(bench)
        bench.console.print(f"[red]no report written (the results folder cannot be written); "
                            f"later: make report RUN={bench.run_id}[/]")  # fmt: skip
        return code
    try:
        outputs = generate(bench.folder)
    except KeyboardInterrupt:
        bench.console.print("[red]report generation interrupted; run make report later[/]")
        return 130
    except Exception as exc:  # the measurements are safe; say how to retry
        bench.console.print(f"[red]report generation failed: {exc!r}; "
                            f"retry with: make report RUN={bench.run_id}[/]")  # fmt: skip
        return 1
    print_summary(bench)
    bench.console.print(f"\n[bold]results:[/] {escape(str(bench.folder))}")
    for path in outputs:
        bench.console.print(f"  {path.relative_to(bench.folder)}")
    list_failed(bench)
    try:
        index = write_index(bench.folder.parent)
        bench.console.print(f"every run: {escape(str(index))}")
    except OSError as exc:  # the run's own report is written: say so and go on
        bench.console.print(f"[yellow]the runs' index was not written: {exc}[/]")
    return code


def print_summary(bench: Bench) -> None:
    """Requests/s per stack and scenario at the highest connection level, ceiling last."""
    rows = uncapped([
        r for r in measurement_rows(read_records(bench.folder / RESULTS_FILE))
        if not r["rate_spec"] and r["rps_median"]
    ])  # fmt: skip
    if not rows:
        return
    scenarios = [s for s in SCENARIOS if any(r["scenario"] == s for r in rows)]
    top = {s: max(r["connections"] for r in rows if r["scenario"] == s) for s in scenarios}
    table = Table(
        title="requests/s (median) at the highest connection level, and what limited it "
        "(server: the stack's own figure)",
        title_justify="left",
    )
    table.add_column("stack")
    for scenario in scenarios:
        table.add_column(f"{scenario} c={top[scenario]}", justify="right")
    stacks = sorted({r["stack"] for r in rows}, key=lambda s: (s == calibration.NAME, s))
    for stack in stacks:
        cells = []
        for scenario in scenarios:
            row = next((r for r in rows if r["stack"] == stack and r["scenario"] == scenario
                        and r["connections"] == top[scenario]), None)  # fmt: skip
            cell = f"{row['rps_median']:,.0f} {limited_by(row)}" if row else "-"
            cells.append(" ".join([cell, *flag_names(row)]) if row else cell)
        name = next(r["display_name"] for r in rows if r["stack"] == stack)
        table.add_row(escape(name), *cells)
    bench.console.print(table)


def list_failed(bench: Bench) -> None:
    if bench.failed:
        bench.console.print("[bold yellow]stacks not (fully) benchmarked:[/]")
        for stack, why in sorted(bench.failed.items()):
            bench.console.print(escape(f"  {stack}: {why}"))
