"""A bench run: verify, load and measure every stack of the plan.

Order of a run:
1. knobs (profile < environment < command line) and the plan, with an
   estimate of its duration printed before anything starts;
2. per stack: prerequisites and build (a failure is recorded and the run
   carries on with the other stacks);
3. rounds: in each, the stack instances in a shuffled order (seeded); each
   instance is started pinned to the server cores, waited on, verified
   against the contract the first time (a stack that fails verification is
   reported and not benchmarked), warmed up per scenario, loaded case by
   case, then stopped (an unclean stop is recorded);
4. the calibration responder (nginx) is one more instance in every round;
5. the command (loadtest/commands/bench.py) then writes the summary tables,
   charts and report.html from results.jsonl.
The runner: RUNNER=auto (the default) takes Docker when a daemon answers and
Compose v2 is present, else native; RUNNER=docker|native forces one. In a
Docker run every load tool, the ceiling's included, runs in the loadgen
container (loadtest/runners/docker.py), pinned to the client cores by its cpuset.
Ctrl-C stops the current case and keeps everything measured; `--resume RUN` measures only what is missing. A results folder
that stops taking writes (full disk, read-only) ends the run at once, with
every record written before intact. docs/reliability.md lists each fault
and the test that proves what happens.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import resource
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from rich.console import Console
from rich.markup import escape

from loadtest.bench import plan
from loadtest.bench.ab_sides import Sides
from loadtest.bench.case import CaseRunner, peak_key
from loadtest.bench.clients import LoadClients
from loadtest.bench.console import PlanContext, print_plan
from loadtest.bench.context import Journal, RunContext, Status
from loadtest.bench.instance import InstanceRunner
from loadtest.bench.plan import Instance
from loadtest.bench.provenance import provenance, record_dependencies
from loadtest.bench.results import (
    RESULTS_FILE,
    RUN_FILE,
    ResultsWriter,
    WriteFailed,
    read_records,
    write_json_atomic,
)
from loadtest.bench.setup import needed_tools, set_up
from loadtest.core.errors import StepError
from loadtest.core.knobs import KnobError, Knobs
from loadtest.core.manifest import Manifest, ManifestError, load, stack_ids, stack_names
from loadtest.core.runner import RunnerUnavailable
from loadtest.core.verdict import JIT_BOUND_S
from loadtest.host.priority import can_raise
from loadtest.measure import jit
from loadtest.measure.tools.base import HOST, Executor, ToolError
from loadtest.runners import calibration, front


class Bench:
    """One bench run over a plan; `run` returns the exit status (see `exit_code`)."""

    def __init__(self, knobs: Knobs, folder: Path, console: Console, resume: bool = False,
                 sides: Sides | None = None):  # an A/B run's sides, in place of SERVERS
        self.knobs, self.sides = knobs, sides
        self.folder = folder
        self.console = console
        self.resume = resume
        self.run_id = folder.name
        self.manifests: dict = {}  # stack -> manifest, of the stacks built for this run
        self.readable: dict[str, Manifest] = {}  # stack -> manifest, of those that load
        self.unreadable: dict[str, str] = {}  # stack -> why its manifest does not load
        self.unavailable: dict[str, str] = {}  # stack -> why it cannot run here
        self.warmups: dict[str, float] = {}
        self.failed: dict[str, str] = {}  # stack -> why it is out of the run
        self.contracts: dict[str, str] = {}  # stack -> "api" | "static"
        self.previous = Previous()  # what an earlier run of the folder measured (--resume)
        self.interrupted = False
        self.write_failed: WriteFailed | None = None
        self.journal: Journal | None = None
        self.status = Status(console)
        self.runner_choice: dict = {}
        # Where load tools run: this host, or the loadgen container in a Docker run.
        self.executor: Executor = HOST
        self.load_clients = LoadClients(knobs)  # the loadgen containers of a Docker run
        # The nice value actually used: the knob when this process may raise it.
        self.priority = knobs.priority if can_raise(knobs.priority) else 0
        self.measuring = False  # True once results.jsonl is open: the command then reports

    def stacks(self) -> list[str]:
        return wanted_stacks(self.knobs, self.console.print, self.sides)

    def set_up(self) -> list[str]:
        """The stacks, their manifests, the runner and the tools; raises the reason
        the run cannot start (KnobError, ToolError, RunnerUnavailable)."""
        stacks = self.stacks()
        self.readable, self.unreadable = read_manifests(stacks, self.sides)
        settled = set_up(self.knobs, self.readable, self.folder, self.resume, self.priority,
                         self.console.print)  # fmt: skip
        self.knobs, self.runner, self.runner_choice = settled.knobs, settled.runner, settled.choice
        return stacks

    def run(self, dry_run: bool = False) -> int:
        try:
            stacks = self.set_up()
        except (KnobError, ToolError, RunnerUnavailable) as exc:
            self.console.print(f"[red]bench: {escape(str(exc))}[/]")
            return 2
        self.contracts = stack_contracts(stacks, self.readable)
        self.warmups = stack_warmups(self.readable)
        over_tls = stacks_over_tls(self.readable, self.knobs.front)
        the_plan = plan.build_plan(self.knobs, stacks, self.contracts, over_tls,
                                   self.sides.quotas if self.sides else None)  # fmt: skip
        if self.resume:
            self.previous = read_previous(self.folder)
            self.console.print(f"  resume: {len(self.previous.done)} measurement(s) "
                               f"already in {self.folder}")  # fmt: skip
        # Stacks that cannot run here are not in the estimate, and the printout says so.
        self.unavailable = unavailable_stacks(self.runner, self.readable)
        expected = [i for i in plan.remaining(the_plan, self.previous.done)
                    if i.stack not in self.unavailable]  # fmt: skip
        print_plan(
            self.console, self.knobs, stacks, expected,
            PlanContext(self.contracts, self.warmups, self.priority, self.folder,
                        self.unavailable, dry_run and not self.resume),
        )  # fmt: skip
        if dry_run:
            return 0
        run_info = self.open_results()
        if run_info is None:
            return 2
        self.measuring = True
        with interruptible():
            try:
                # The load client first: without it no stack could be measured.
                if self.start_client(run_info):
                    self.prepare(stacks, run_info)
                    self.write_run_info(run_info)
                    self.measure(the_plan, run_info)
            except KeyboardInterrupt:
                self.interrupted = True
                self.console.print("[bold yellow]interrupted: keeping every measurement so "
                                   "far, writing the summary[/]")  # fmt: skip
            except WriteFailed as exc:
                # Every later record would fail the same way: stop, keep what is on disk.
                self.write_failed = exc
                self.console.print(
                    f"[bold red]✗ {escape(str(exc))}[/]\n[red]the run stops here; every record "
                    f"written before is intact in {escape(str(self.folder / RESULTS_FILE))}; "
                    f"free space (or make the folder writable) and continue with --resume "
                    f"{escape(str(self.folder))}[/]"
                )
            finally:
                self.close(run_info)
        return self.exit_code()

    def open_results(self) -> dict | None:
        """run.json written and results.jsonl opened; None when the folder refuses them."""
        run_file = self.folder / RUN_FILE
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            if self.resume:
                run_info = resumed(json.loads(run_file.read_text()))
            else:
                manifests = {s: m.provenance() for s, m in self.readable.items()}
                run_info = provenance(
                    self.run_id, self.knobs, manifests, self.runner_choice, self.priority
                )
                run_info.update({"ab": self.sides.record()} if self.sides else {})
            write_json_atomic(run_file, run_info)
            writer = ResultsWriter(self.folder / RESULTS_FILE)
        except OSError as exc:
            self.console.print(
                f"[bold red]✗ {escape(str(WriteFailed(None, exc)))}; nothing was built or measured[/]"
            )
            return None
        self.journal = Journal(writer, self.run_id, self.previous.seq)
        return run_info

    def close(self, run_info: dict) -> None:
        """The load clients stopped, results.jsonl closed, run.json's last word written."""
        self.load_clients.close()
        self.journal.writer.close()
        run_info["status"] = (
            "interrupted" if self.interrupted
            else "stopped: results could not be written" if self.write_failed
            else "complete"
        )  # fmt: skip
        run_info["finished_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        run_info["failed_stacks"] = self.failed
        self.write_run_info(run_info)

    def write_run_info(self, run_info: dict) -> None:
        """Rewrite run.json; when the disk refuses, say so once (results.jsonl has the data)."""
        try:
            write_json_atomic(self.folder / RUN_FILE, run_info)
        except OSError as exc:
            if not self.write_failed:
                self.write_failed = WriteFailed(None, exc)
            self.console.print(f"[red]✗ {escape(str(WriteFailed(None, exc)))}: "
                               f"{RUN_FILE} keeps its earlier content[/]")  # fmt: skip

    def start_client(self, run_info: dict) -> bool:
        """Docker runs: the loadgen container on each client host becomes the executor
        (bench/clients.py). False when it cannot run: nothing is built or measured and
        the run fails with the reason."""
        if self.knobs.runner != "docker":
            return True
        self.console.print(escape("[loadgen] build and start …"))
        try:
            self.executor = self.load_clients.start(self.runner, needed_tools(self.knobs))
        except StepError as exc:
            self.fail(exc)
            return False
        self.load_clients.record(run_info, self.runner)
        for line in self.load_clients.lines():
            self.console.print(escape(line))
        if self.priority:
            self.console.print(
                f"[yellow]PRIORITY={self.priority} applies to the servers only: the load tool in "
                "the loadgen container runs at normal priority (it has no CAP_SYS_NICE)[/]"
            )
        return True

    def context(self, run_info: dict) -> RunContext:
        """What the instances and cases share, settled now that every stack is built."""
        return RunContext(
            knobs=self.knobs, folder=self.folder, run_id=self.run_id, priority=self.priority,
            runner=self.runner, executor=self.executor,
            client_hosts=tuple(self.load_clients.labels()),
            manifests=MappingProxyType(dict(self.manifests)), run_info=run_info,
            journal=self.journal, status=self.status,
        )  # fmt: skip

    def measure(self, the_plan: list[Instance], run_info: dict) -> None:
        """Every instance still to do, under one progress bar."""
        pin_harness(self.knobs.client_cpus)
        raise_file_limit()
        todo = plan.remaining(the_plan, self.previous.done)
        estimate = plan.estimate_seconds(self.knobs, todo, self.warmups)
        with self.status.measuring(sum(len(i.cases) for i in todo), estimate) as status:
            context = self.context(run_info)
            instances = InstanceRunner(context, CaseRunner(context, self.previous.peaks))
            verified = set(self.previous.verified)
            for instance in todo:
                verify = instance.stack not in verified and instance.stack != calibration.NAME
                budget = plan.instance_seconds(self.knobs, instance, verify,
                                               self.warmups.get(instance.stack, 0.0))  # fmt: skip
                spent_before = status.spent()
                if self.measurable(instance.stack):
                    outcome = instances.run(instance, verify)
                    verified |= {instance.stack} if outcome.verified else set()
                    if outcome.failure:
                        self.fail(outcome.failure, instance.repetition)
                # Keep the bar honest when an instance was skipped or cut short.
                status.spent_until(spent_before + budget)

    def measurable(self, stack: str) -> bool:
        """Not out of the run, and built (the ceiling needs no build)."""
        return stack not in self.failed and (stack == calibration.NAME or stack in self.manifests)

    def fail(self, exc: StepError, repetition: int | None = None) -> None:
        self.failed[exc.stack] = f"{exc.step}: {exc.message}"
        self.journal.stack(
            exc.stack, exc.step, "failed", exc.message, output=exc.output[-4000:],
            repetition=repetition,
        )  # fmt: skip
        self.status.say(f"[bold red]✗ {escape(exc.explain())}[/]")

    def prepare(self, stacks: list[str], run_info: dict) -> None:
        """Prerequisites and build for every stack, before any load."""
        for name in stacks:
            if name in self.unreadable:
                self.fail(StepError(name, "manifest", self.unreadable[name]))
                continue
            reason = self.unavailable.get(name)
            if reason:
                self.failed[name] = f"skipped: {reason}"
                self.journal.stack(name, "prerequisites", "skipped", reason)
                self.console.print(f"[bold yellow]!! {escape(name)}: SKIPPED ({escape(reason)})[/]")
                continue
            try:
                self.build(name, self.readable[name], run_info)
            except StepError as exc:
                self.fail(exc)

    def build(self, name: str, manifest: Manifest, run_info: dict) -> None:
        """One stack built (or found up to date), its versions and dependencies recorded."""
        started = time.monotonic()
        self.console.print(escape(f"[{name}] build …"))
        built = self.runner.build(manifest)
        took = time.monotonic() - started
        self.journal.stack(name, "build", "ok", "built" if built else "up to date",
                          seconds=round(took, 1))  # fmt: skip
        done = f"built in {took:.1f} s" if built else "build up to date"
        self.console.print(escape(f"[{name}] {done}"))
        self.manifests[name] = manifest
        with contextlib.suppress(Exception):
            run_info["runtime_versions"][name] = self.runner.versions(manifest)
        problem = record_dependencies(self.runner, manifest, run_info)
        if problem:
            self.console.print(f"[yellow]! {escape(problem)}: not recorded in {RUN_FILE}[/]")

    def exit_code(self) -> int:
        """130 after Ctrl-C; 1 when results could not be written or a stack failed a
        step; 0 otherwise. A skipped stack (toolchain missing here) is listed, not failed."""
        failed = [s for s, why in self.failed.items() if not why.startswith("skipped")]
        return 130 if self.interrupted else 1 if failed or self.write_failed else 0


def wanted_stacks(knobs: Knobs, say, sides: Sides | None = None) -> list[str]:
    """SERVERS, or every stack's default configuration; SERVERS may name a variant
    (nginx-static@stock). A profile's stack missing here is skipped, said so. An A/B
    run's sides in place of SERVERS."""
    if sides:
        return list(sides.manifests)
    known = stack_ids()
    wanted = knobs.servers or stack_names()
    missing = [s for s in wanted if s not in known]
    if missing and not knobs.servers_from_profile:
        raise KnobError(
            f"SERVERS: unknown stack(s) {', '.join(missing)}; known: {', '.join(known)}"
        )
    for name in missing:
        say(f"[yellow]profile {knobs.profile}: no stack {name!r} here, skipped[/]")
    return [s for s in wanted if s in known]


def unavailable_stacks(runner, manifests: dict[str, Manifest]) -> dict[str, str]:
    """Stack -> why it cannot run here (a missing toolchain, packages the mirror lacks)."""
    reasons = {s: runner.unavailable_reason(m) for s, m in manifests.items()}
    return {stack: why for stack, why in reasons.items() if why}


def resumed(run_info: dict) -> dict:
    """An earlier run's run.json, taken up again by --resume."""
    run_info.setdefault("resumed_at", []).append(
        dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    )
    return run_info


def read_manifests(
    stacks: list[str], sides: Sides | None = None
) -> tuple[dict[str, Manifest], dict[str, str]]:
    """Each stack's manifest, read once as the run starts: stack -> manifest for those
    that load, and stack -> the error for those that do not (their build step names it).
    An A/B run's sides were read when they were made."""
    if sides:
        return dict(sides.manifests), {}
    manifests, errors = {}, {}
    for name in stacks:
        try:
            manifests[name] = load(name)
        except ManifestError as exc:
            errors[name] = str(exc)
    return manifests, errors


def stack_warmups(manifests: dict[str, Manifest]) -> dict[str, float]:
    """Each stack's JIT warm-up at most, for the estimates: its declared priming
    (manifest `warmup_s`), or, where the warm-up waits for its compiler to go quiet
    (measure/jit.py), the bound of that wait (JIT_BOUND_S)."""
    warmups = {}
    for name, manifest in manifests.items():
        wait = max(manifest.warmup_s, JIT_BOUND_S if manifest.jit in jit.READABLE else 0.0)
        if wait:
            warmups[name] = wait
    return warmups


def stack_contracts(stacks: list[str], manifests: dict[str, Manifest]) -> dict[str, str]:
    """Each stack's manifest contract, "api" or "static" (unreadable manifests: "api")."""
    return {name: manifests[name].contract if name in manifests else "api" for name in stacks}


def stacks_over_tls(manifests: dict[str, Manifest], front_kind: str) -> set[str]:
    """The stacks served over HTTPS: whatever terminates TLS for them (front.tls_front:
    a FRONT, or the stack itself with `tls = true` or a variant with tls = true)."""
    return {
        name
        for name, manifest in manifests.items()
        if front.tls_front(front_kind, manifest) != "none"
    }


@dataclass
class Previous:
    """What an earlier run into the same folder measured, for --resume."""

    done: set[str] = field(default_factory=set)  # keys of the cases measured fine
    verified: set[str] = field(default_factory=set)  # stacks that passed their checks
    peaks: dict[tuple, float] = field(default_factory=dict)  # peak_key -> requests/s
    seq: int = 0  # the last record number


def read_previous(folder: Path) -> Previous:
    previous = Previous()
    for record in read_records(folder / RESULTS_FILE):
        if record.get("kind") == "measurement" and record.get("status") == "ok":
            previous.done.add(record["key"])
            if record.get("phase") == "peak":
                previous.peaks[peak_key(record)] = record["result"]["rps"]
        elif (record.get("kind"), record.get("step"), record.get("status")) == (
            "stack",
            "verify",
            "ok",
        ):
            previous.verified.add(record["stack"])
        previous.seq = max(previous.seq, record.get("seq", 0))
    return previous


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM and SIGINT both end the run as Ctrl-C does, and the harness's own cores
    are given back afterwards."""
    previous_handler = signal.signal(signal.SIGTERM, _raise_interrupt)
    # Ctrl-C (SIGINT) interrupts the run cleanly even when a script started
    # the bench in the background: bash then hands it SIGINT ignored, and
    # Python keeps an ignored SIGINT ignored.
    previous_int_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    # The harness pins itself to the client cores while it measures; the next run of
    # the same process (make aa, the labs) starts from the cores it was given.
    affinity = os.sched_getaffinity(0)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous_handler)
        signal.signal(signal.SIGINT, previous_int_handler)
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, affinity)


def pin_harness(cpus: tuple[int, ...]) -> None:
    """Keep the harness (sampler, bookkeeping) off the server cores."""
    with contextlib.suppress(OSError):
        os.sched_setaffinity(0, cpus)


def raise_file_limit() -> None:
    """Thousands of connections need thousands of descriptors (tools and servers inherit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 1_048_576), hard))


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt
