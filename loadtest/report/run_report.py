"""A bench run followed by its report: the run, summary.csv, summary.md, the charts,
report.html, the runs' index and the closing table on the console (`make bench`,
`make aa`, `make lab`)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from loadtest.bench.results import RESULTS_FILE, read_records
from loadtest.bench.run import Bench
from loadtest.core.knobs import SCENARIOS
from loadtest.report import generate
from loadtest.report.flags import flag_names
from loadtest.report.gallery import write_index
from loadtest.report.render import limited_by
from loadtest.report.summary import measurement_rows
from loadtest.runners import calibration


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
    rows = [r for r in measurement_rows(read_records(bench.folder / RESULTS_FILE))
            if not r["rate_spec"] and r["rps_median"]]  # fmt: skip
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
    # One line per stack and setting: a quota or core sweep shows each capped stack.
    sweeps_cores = len({r.get("server_cores") for r in rows}) > 1
    settings: dict[tuple, list[dict]] = {}
    for r in rows:
        settings.setdefault((r["stack"], r["cpu_quota"], r.get("server_cores")), []).append(r)
    order = sorted(settings, key=lambda k: (k[0] == calibration.NAME, k[0], k[1] or 0, k[2] or 0))
    for key in order:
        mine = settings[key]
        cells = []
        for scenario in scenarios:
            row = next((r for r in mine if r["scenario"] == scenario
                        and r["connections"] == top[scenario]), None)  # fmt: skip
            cell = f"{row['rps_median']:,.0f} {limited_by(row)}" if row else "-"
            cells.append(" ".join([cell, *flag_names(row)]) if row else cell)
        table.add_row(escape(setting_name(mine[0], sweeps_cores)), *cells)
    bench.console.print(table)


def setting_name(row: dict, with_cores: bool) -> str:
    """'Go net/http (quota 0.25, 1 core)': the stack and the setting it ran at (its cores
    only `with_cores`, in a run that sweeps them)."""
    parts = [f"quota {row['cpu_quota']:g}"] if row["cpu_quota"] is not None else []
    cores = row.get("server_cores")
    parts += [f"{cores} core{'s' if cores != 1 else ''}"] if with_cores and cores else []
    return row["display_name"] + (f" ({', '.join(parts)})" if parts else "")


def list_failed(bench: Bench) -> None:
    if bench.failed:
        bench.console.print("[bold yellow]stacks not (fully) benchmarked:[/]")
        for stack, why in sorted(bench.failed.items()):
            bench.console.print(escape(f"  {stack}: {why}"))
