"""What the instance and case runners of a run share, given to them whole.

`Bench` (bench/run.py) settles the run first: the knobs as resolved, the
runner, where the load tools run, the stacks built. It then hands one frozen
`RunContext` down to `InstanceRunner` and `CaseRunner`; they read it and
return what they measured, and never reach back into the run that made them.
The context's `journal` (results.jsonl, numbered) and `status` (the console
and its progress bar) are the only things they write to, and both belong to
the run's output, not to `Bench`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from loadtest.bench.results import (
    RUN_FILE,
    ResultsWriter,
    WriteFailed,
    write_json_atomic,
)
from loadtest.core.knobs import Knobs
from loadtest.core.manifest import Manifest
from loadtest.host.priority import raise_priority
from loadtest.measure.tools.base import Executor
from loadtest.runners import calibration


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


class Journal:
    """results.jsonl as a run writes it: every record numbered (`seq`) in the order taken."""

    def __init__(self, writer: ResultsWriter, run_id: str, seq: int = 0) -> None:
        self.writer = writer
        self.run_id = run_id
        self.seq = seq  # the last number given; a resumed run goes on from its file's

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def write(self, record: dict) -> None:
        """Append one record durably; raises OSError naming the file."""
        self.writer.write(record)

    def stack(self, stack: str, step: str, status: str, message: str = "", **extra) -> None:
        """Append a stack record; raises WriteFailed when results.jsonl cannot take it."""
        record = {
            "kind": "stack",
            "seq": self.next_seq(),
            "run_id": self.run_id,
            "stack": stack,
            "step": step,
            "status": status,
            "message": message,
            "at": now(),
            **extra,
        }
        try:
            self.writer.write(record)
        except OSError as exc:
            raise WriteFailed(stack, exc) from exc


class Status:
    """The run's console: its lines, and while it measures, the progress bar and case count."""

    COLUMNS = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[cases]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress: Progress | None = None
        self.task = None
        self.cases_total = 0
        self.cases_run = 0

    @contextlib.contextmanager
    def measuring(self, cases_total: int, estimate_s: float) -> Iterator[Status]:
        """The progress bar over `estimate_s` seconds of `cases_total` cases."""
        self.cases_total, self.cases_run = cases_total, 0
        with Progress(*self.COLUMNS, console=self.console, transient=False) as progress:
            self.progress = progress
            self.task = progress.add_task("bench", total=estimate_s, cases=f"0/{cases_total}")
            try:
                yield self
            finally:
                self.progress = None

    def say(self, text: str) -> None:
        (self.progress.console if self.progress else self.console).print(text)

    def doing(self, description: str) -> None:
        if self.progress:
            self.progress.update(self.task, description=description)

    def spent(self) -> float:
        return self.progress.tasks[0].completed if self.progress else 0.0

    def spent_until(self, seconds: float) -> None:
        if self.progress:
            self.progress.update(self.task, completed=seconds)

    def case_done(self, seconds: float) -> str:
        """One more case measured, `seconds` of the estimate; its "[n/total]" for its line."""
        self.cases_run += 1
        position = f"{self.cases_run}/{self.cases_total}"
        if self.progress:
            self.progress.update(self.task, advance=seconds, cases=position)
        return f"[{position}]"


@dataclass(frozen=True)
class RunContext:
    """Everything a run's instances and cases share, settled before the first is started."""

    knobs: Knobs  # as resolved for this run: the runner chosen, the ceiling kept or dropped
    folder: Path  # results/<run-id>/
    run_id: str
    priority: int  # the nice value applied (0 when this process may not raise it)
    runner: object  # a core.runner.Runner, wrapped in a front when FRONT asks for one
    executor: Executor  # where the load tools run: this host, or the loadgen container(s)
    client_hosts: tuple[str, ...]  # the load's hosts, as the records name them
    manifests: Mapping[str, Manifest]  # the stacks built for this run
    run_info: dict  # run.json's content (the runtime versions read at build time)
    journal: Journal
    status: Status

    def display_name(self, stack: str) -> str:
        if stack == calibration.NAME:
            return calibration.DISPLAY_NAME
        manifest = self.manifests.get(stack)
        return manifest.label if manifest else stack  # "nginx static (stock)" for a variant

    def prioritize(self, server) -> None:
        if self.priority:
            raise_priority(server.pids(), self.priority)

    def record_front(self, stack: str, server) -> None:
        """The front's whole rendered config, once per stack, into run.json."""
        fronted = getattr(server, "front", None)
        if fronted is None:
            return
        configs = self.run_info.setdefault("front", {}).setdefault("configs", {})
        if stack in configs:
            return
        configs[stack] = {
            "file": str(fronted.config_path.relative_to(self.folder.resolve())),
            "text": fronted.config_text,
        }
        write_json_atomic(self.folder / RUN_FILE, self.run_info)

    def raw(self, *parts: str) -> Path:
        """Where a tool's raw output goes: results/<run-id>/raw/..."""
        return self.folder.joinpath("raw", *parts)
