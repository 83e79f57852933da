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
import dataclasses
import datetime as dt
import json
import os
import signal
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress

from loadtest.bench import plan
from loadtest.bench.case import CaseRunner, now, peak_key
from loadtest.bench.clients import LoadClients
from loadtest.bench.console import PlanContext, print_plan
from loadtest.bench.instance import InstanceRunner, WriteFailed
from loadtest.bench.plan import Instance
from loadtest.bench.provenance import provenance
from loadtest.bench.results import (
    RESULTS_FILE,
    RUN_FILE,
    ResultsWriter,
    read_records,
    write_json_atomic,
)
from loadtest.core.errors import StepError
from loadtest.core.knobs import KnobError, Knobs
from loadtest.core.manifest import Manifest, ManifestError, load, stack_ids, stack_names
from loadtest.core.runner import RunnerUnavailable
from loadtest.core.verdict import JIT_BOUND_S
from loadtest.host.priority import can_raise, raise_priority
from loadtest.measure import jit
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.base import HOST, Executor, ToolError
from loadtest.measure.tools.oha import install_oha
from loadtest.runners import calibration, front
from loadtest.runners.choose import choose_runner, docker_problem, get_runner


class Bench:
    """One bench run over a plan; `run` returns the exit status (see `exit_code`)."""

    def __init__(self, knobs: Knobs, folder: Path, console: Console, resume: bool = False):
        self.knobs = knobs
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
        self.verified: set[str] = set()
        self.done: set[str] = set()
        self.seq = 0
        self.interrupted = False
        self.write_failed: WriteFailed | None = None
        self.writer: ResultsWriter | None = None
        self.run_info: dict | None = None
        self.progress: Progress | None = None
        self.task = None
        self.cases_total = 0
        self.cases_run = 0
        self.runner_choice: dict = {}
        # Where load tools run: this host, or the loadgen container in a Docker run.
        self.executor: Executor = HOST
        self.load_clients = LoadClients(knobs)  # the loadgen containers of a Docker run
        # The nice value actually used: the knob when this process may raise it.
        self.priority = knobs.priority if can_raise(knobs.priority) else 0
        self.cases = CaseRunner(self)
        self.instances = InstanceRunner(self)
        self.measuring = False  # True once results.jsonl is open: the command then reports

    def say(self, text: str) -> None:
        (self.progress.console if self.progress else self.console).print(text)

    def stacks(self) -> list[str]:
        # SERVERS may name a variant (nginx-static@stock); the default is every
        # stack's default configuration.
        known = stack_ids()
        wanted = self.knobs.servers or stack_names()
        missing = [s for s in wanted if s not in known]
        if missing and not self.knobs.servers_from_profile:
            raise KnobError(
                f"SERVERS: unknown stack(s) {', '.join(missing)}; known: {', '.join(known)}"
            )
        for name in missing:
            self.console.print(
                f"[yellow]profile {self.knobs.profile}: no stack {name!r} here, skipped[/]"
            )
        return [s for s in wanted if s in known]

    def choose_runner(self) -> None:
        """Resolve RUNNER=auto, say which runner and why (raises RunnerUnavailable)."""
        requested = self.knobs.runner
        stacks = list(self.readable.values())
        chosen, reason = choose_runner(
            requested, probe=lambda: docker_problem(stacks), tools=self.needed_tools()
        )
        if self.resume and requested != "auto":
            reason = f"the run's own runner ({reason})"
        self.knobs = dataclasses.replace(self.knobs, runner=chosen)
        self.runner_choice = {"requested": requested, "chosen": chosen, "reason": reason}
        self.console.print(f"runner: {chosen} — {escape(reason)}")

    def needed_tools(self) -> list[str]:
        # wrk also warms up and finds the peak; h2load warms up its own cases.
        tools = {self.knobs.tool, self.knobs.tls_tool} - {""}
        return sorted(tools if tools == {"h2load"} else tools | {"wrk"})

    def check_tools(self) -> None:
        if self.knobs.runner == "docker":
            # The tools are the loadgen image's, checked when it starts (start_client).
            needed: list[str] = []
        else:
            needed = self.needed_tools()
        for name in needed:
            tool = get_tool(name)
            if name == "oha" and not tool.available():
                install_oha(self.console.print)
            if not tool.available():
                hint = "scripts/install-oha.sh" if name == "oha" else "make bootstrap"
                why = next((f"{knob}={name}" for knob, value in
                            (("TOOL", self.knobs.tool), ("TLS_TOOL", self.knobs.tls_tool))
                            if value == name), "warm-up and peak runs")  # fmt: skip
                raise KnobError(
                    f"tools: load tool {name} not found on PATH (needed for {why}); install it "
                    f"with {hint}; nothing was built, started or measured"
                )
        if self.knobs.priority and not self.priority:
            self.console.print(
                f"[yellow]PRIORITY={self.knobs.priority} needs root or CAP_SYS_NICE: "
                "running at normal priority (other work on the host competes more)[/]"
            )
        # The ceiling on another host runs in the loadgen image, which holds nginx.
        if self.knobs.calibration and not self.knobs.server_host and not calibration.nginx_path():
            self.console.print(
                "[bold yellow]!! nginx not found: the calibration ceiling is NOT measured "
                "(install Debian's nginx-light, or run make bootstrap)[/]"
            )
            self.knobs = dataclasses.replace(self.knobs, calibration=False)

    def use_front(self) -> None:
        """FRONT=nginx|apache: every stack is started behind that TLS front; FRONT=self:
        every stack serves TLS itself ([self_tls])."""
        kind = self.knobs.front
        if kind == "none":
            return
        refusal = front.refusal(kind, list(self.readable.values()))
        if refusal:
            raise KnobError(refusal)
        # The front's rendered config, pid and temp files, and the run's
        # certificate, live in the results folder next to the numbers.
        self.runner = front.wrap(self.runner, kind, self.folder / "front", self.folder / "tls")

    def record_front(self, stack: str, server) -> None:
        """The front's whole rendered config, once per stack, into run.json."""
        fronted = getattr(server, "front", None)
        if fronted is None or self.run_info is None:
            return
        configs = self.run_info.setdefault("front", {}).setdefault("configs", {})
        if stack in configs:
            return
        configs[stack] = {
            "file": str(fronted.config_path.relative_to(self.folder.resolve())),
            "text": fronted.config_text,
        }
        write_json_atomic(self.folder / RUN_FILE, self.run_info)

    def run(self, dry_run: bool = False) -> int:
        try:
            stacks = self.stacks()
            self.readable, self.unreadable = read_manifests(stacks)
            self.choose_runner()
            self.check_tools()
            try:
                self.runner = get_runner(self.knobs.runner, self.knobs.server_host)
            except (ImportError, ValueError) as exc:
                raise KnobError(f"RUNNER={self.knobs.runner}: not available ({exc})") from None
            # A tls = true stack's certificate lives in the results folder.
            self.runner.tls_folder = self.folder / "tls"
            self.use_front()
        except (KnobError, ToolError, RunnerUnavailable) as exc:
            self.console.print(f"[red]bench: {escape(str(exc))}[/]")
            return 2
        self.contracts = stack_contracts(stacks, self.readable)
        self.warmups = stack_warmups(self.readable)
        over_tls = stacks_over_tls(self.readable, self.knobs.front)
        the_plan = plan.build_plan(self.knobs, stacks, self.contracts, over_tls)
        if self.resume:
            self.load_previous()
        # Stacks that cannot run here are not in the estimate, and the printout says so.
        self.unavailable = self.unavailable_stacks()
        expected = [i for i in self.remaining(the_plan) if i.stack not in self.unavailable]
        print_plan(
            self.console, self.knobs, stacks, expected,
            PlanContext(
                self.contracts, self.primed(), self.priority, self.folder, self.unavailable
            ),
        )  # fmt: skip
        if dry_run:
            return 0
        run_file = self.folder / RUN_FILE
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            if self.resume:
                run_info = json.loads(run_file.read_text())
                run_info.setdefault("resumed_at", []).append(
                    dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
                )
            else:
                manifests = {s: m.provenance() for s, m in self.readable.items()}
                run_info = provenance(
                    self.run_id, self.knobs, manifests, self.runner_choice, self.priority
                )
            write_json_atomic(run_file, run_info)
            self.writer = ResultsWriter(self.folder / RESULTS_FILE)
        except OSError as exc:
            self.console.print(
                f"[bold red]✗ {escape(str(WriteFailed(None, exc)))}; nothing was built or measured[/]"
            )
            return 2
        self.run_info = run_info
        self.measuring = True
        previous_handler = signal.signal(signal.SIGTERM, _raise_interrupt)
        # Ctrl-C (SIGINT) interrupts the run cleanly even when a script started
        # the bench in the background: bash then hands it SIGINT ignored, and
        # Python keeps an ignored SIGINT ignored.
        previous_int_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
        # The harness pins itself to the client cores while it measures; the next run of
        # the same process (make aa, the labs) starts from the cores it was given.
        affinity = os.sched_getaffinity(0)
        try:
            # The load client first: without it no stack could be measured.
            if self.start_client(run_info):
                self.prepare(stacks, run_info)
                self.write_run_info(run_file, run_info)
                self.instances.measure(the_plan)
        except KeyboardInterrupt:
            self.interrupted = True
            self.console.print(
                "[bold yellow]interrupted: keeping every measurement so far, writing the summary[/]"
            )
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
            signal.signal(signal.SIGTERM, previous_handler)
            signal.signal(signal.SIGINT, previous_int_handler)
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, affinity)
            self.load_clients.close()
            self.writer.close()
            if self.interrupted:
                run_info["status"] = "interrupted"
            elif self.write_failed:
                run_info["status"] = "stopped: results could not be written"
            else:
                run_info["status"] = "complete"
            run_info["finished_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            run_info["failed_stacks"] = self.failed
            self.write_run_info(run_file, run_info)
        return self.exit_code()

    def write_run_info(self, run_file: Path, run_info: dict) -> None:
        """Rewrite run.json; when the disk refuses, say so once (results.jsonl has the data)."""
        try:
            write_json_atomic(run_file, run_info)
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
            self.executor = self.load_clients.start(self.runner, self.needed_tools())
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

    def remaining(self, the_plan: list[Instance]) -> list[Instance]:
        if not self.done:
            return the_plan
        todo = []
        for instance in the_plan:
            cases = [c for c in instance.cases if c.key not in self.done]
            if cases:
                todo.append(Instance(instance.stack, instance.quota, instance.repetition, cases,
                                     instance.cores))  # fmt: skip
        return todo

    def load_previous(self) -> None:
        records = read_records(self.folder / RESULTS_FILE)
        for record in records:
            if record.get("kind") == "measurement" and record.get("status") == "ok":
                self.done.add(record["key"])
                if record.get("phase") == "peak":
                    self.cases.peaks[peak_key(record)] = record["result"]["rps"]
            elif record.get("kind") == "stack" and record.get("step") == "verify":
                if record.get("status") == "ok":
                    self.verified.add(record["stack"])
            self.seq = max(self.seq, record.get("seq", 0))
        self.console.print(f"  resume: {len(self.done)} measurement(s) already in {self.folder}")

    def record_stack(self, stack: str, step: str, status: str, message: str = "", **extra) -> None:
        """Append a stack record; raises WriteFailed when results.jsonl cannot take it."""
        self.seq += 1
        record = {
            "kind": "stack",
            "seq": self.seq,
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

    def fail(self, exc: StepError, repetition: int | None = None) -> None:
        self.failed[exc.stack] = f"{exc.step}: {exc.message}"
        self.record_stack(
            exc.stack, exc.step, "failed", exc.message, output=exc.output[-4000:],
            repetition=repetition,
        )  # fmt: skip
        self.say(f"[bold red]✗ {escape(exc.explain())}[/]")

    def unavailable_stacks(self) -> dict[str, str]:
        """Stack -> why it cannot run here (a missing toolchain, packages the mirror lacks)."""
        reasons = {s: self.runner.unavailable_reason(m) for s, m in self.readable.items()}
        return {stack: why for stack, why in reasons.items() if why}

    def prepare(self, stacks: list[str], run_info: dict) -> None:
        """Prerequisites and build for every stack, before any load."""
        runner = self.runner
        for name in stacks:
            if name in self.unreadable:
                self.fail(StepError(name, "manifest", self.unreadable[name]))
                continue
            manifest = self.readable[name]
            reason = self.unavailable.get(name)
            if reason:
                self.failed[name] = f"skipped: {reason}"
                self.record_stack(name, "prerequisites", "skipped", reason)
                self.console.print(f"[bold yellow]!! {escape(name)}: SKIPPED ({escape(reason)})[/]")
                continue
            started = time.monotonic()
            self.console.print(escape(f"[{name}] build …"))
            try:
                built = runner.build(manifest)
            except StepError as exc:
                self.fail(exc)
                continue
            took = time.monotonic() - started
            self.record_stack(name, "build", "ok", "built" if built else "up to date",
                              seconds=round(took, 1))  # fmt: skip
            done = f"built in {took:.1f} s" if built else "build up to date"
            self.console.print(escape(f"[{name}] {done}"))
            self.manifests[name] = manifest
            with contextlib.suppress(Exception):
                run_info["runtime_versions"][name] = runner.versions(manifest)
            self.record_dependencies(manifest, run_info)

    def record_dependencies(self, manifest, run_info: dict) -> None:
        """The stack's resolved dependency list, next to its manifest in run.json.

        A list that cannot be read is recorded as such and shown; it does not
        keep the stack out of the run (its lock files are checked by make test).
        """
        entry = run_info["stacks"].setdefault(manifest.name, manifest.provenance())
        entry.pop("dependencies_error", None)
        lister = getattr(self.runner, "dependencies", None)
        if lister is None:
            entry["dependencies"] = None
            entry["dependencies_error"] = f"the {self.runner.name} runner does not list them"
            return
        try:
            entry["dependencies"] = lister(manifest)
        except StepError as exc:
            entry["dependencies"] = None
            # The command's own words (its stderr's tail), not only that it failed.
            entry["dependencies_error"] = exc.message + (f": {exc.output.strip()[-1500:]}"
                                                         if exc.output.strip() else "")  # fmt: skip
            self.console.print(f"[yellow]! {escape(str(exc))}: not recorded in {RUN_FILE}[/]")

    def primed(self) -> dict[str, float]:
        """Each stack's JIT warm-up at most, for the estimates (stack_warmups)."""
        return self.warmups

    def display_name(self, stack: str) -> str:
        if stack == calibration.NAME:
            return calibration.DISPLAY_NAME
        manifest = self.manifests.get(stack)
        return manifest.label if manifest else stack  # "nginx static (stock)" for a variant

    def prioritize(self, server) -> None:
        if self.priority:
            raise_priority(server.pids(), self.priority)

    def exit_code(self) -> int:
        """130 after Ctrl-C; 1 when results could not be written or a stack failed a
        step; 0 otherwise. A skipped stack (toolchain missing here) is listed, not failed."""
        if self.interrupted:
            return 130
        failed = [s for s, why in self.failed.items() if not why.startswith("skipped")]
        return 1 if failed or self.write_failed else 0


def read_manifests(stacks: list[str]) -> tuple[dict[str, Manifest], dict[str, str]]:
    """Each stack's manifest, read once as the run starts: stack -> manifest for those
    that load, and stack -> the error for those that do not (their build step names it)."""
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


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt
