"""`make bench`: verify, load and measure every stack, then report.

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
5. summary tables, charts and report.html from results.jsonl.
The runner: RUNNER=auto (the default) takes Docker when a daemon answers and
Compose v2 is present, else native; RUNNER=docker|native forces one. In a
Docker run every load tool, the ceiling's included, runs in the loadgen
container (loadtest/docker.py), pinned to the client cores by its cpuset.
Ctrl-C stops the current case, keeps everything measured and still writes
the summary; `--resume RUN` measures only what is missing. A results folder
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
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from loadtest.bench import plan
from loadtest.bench.plan import Case, Instance
from loadtest.bench.results import (
    RESULTS_FILE,
    RUN_FILE,
    ResultsWriter,
    git_info,
    host_info,
    read_records,
    write_json_atomic,
)
from loadtest.core.errors import StepError
from loadtest.core.knobs import (
    SCENARIO_HEADERS,
    SCENARIOS,
    KnobError,
    Knobs,
)
from loadtest.core.manifest import REPO_ROOT, ManifestError, load, stack_names
from loadtest.core.runner import Limits, RunnerUnavailable
from loadtest.core.verdict import NOISY_FOREIGN_PCT, WARMUP_WINDOW_S, Figures, judge
from loadtest.host.priority import can_raise, raise_priority
from loadtest.measure import steady, ttfb
from loadtest.measure.metrics import UsageSampler, response_bytes
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.base import HOST, Executor, ToolError, client_bound, tool_cpu_share
from loadtest.runners import calibration, front
from loadtest.runners.choose import choose_runner, get_runner

READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
# Cases of one instance run back to back; a short pause lets sockets in
# TIME_WAIT and the server's own bookkeeping settle between them.
PAUSE_BETWEEN_CASES_S = 0.3


class Bench:
    def __init__(self, knobs: Knobs, folder: Path, console: Console, resume: bool = False):
        self.knobs = knobs
        self.folder = folder
        self.console = console
        self.resume = resume
        self.run_id = folder.name
        self.manifests: dict = {}
        self.failed: dict[str, str] = {}  # stack -> why it is out of the run
        self.contracts: dict[str, str] = {}  # stack -> "api" | "static"
        self.verified: set[str] = set()
        self.response_bytes: dict[tuple[str, str], dict] = {}
        self.peaks: dict[tuple, float] = {}
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
        self.client = None  # the loadgen container while a Docker run measures
        # The nice value actually used: the knob when this process may raise it.
        self.priority = knobs.priority if can_raise(knobs.priority) else 0

    # ----------------------------------------------------------------- set-up

    def say(self, text: str) -> None:
        (self.progress.console if self.progress else self.console).print(text)

    def stacks(self) -> list[str]:
        from loadtest.core.manifest import stack_ids

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
        chosen, reason = choose_runner(requested, tools=self.needed_tools())
        if self.resume and requested != "auto":
            reason = f"the run's own runner ({reason})"
        self.knobs.runner = chosen
        self.runner_choice = {"requested": requested, "chosen": chosen, "reason": reason}
        self.console.print(f"runner: {chosen} — {escape(reason)}")

    def needed_tools(self) -> list[str]:
        # wrk also warms up and finds the peak; h2load warms up its own cases.
        tool = self.knobs.tool
        return [tool] if tool == "h2load" else sorted({"wrk", tool})

    def check_tools(self) -> None:
        if self.knobs.runner == "docker":
            # The tools are the loadgen image's, checked when it starts (start_client).
            needed: list[str] = []
        else:
            needed = self.needed_tools()
        for name in needed:
            tool = get_tool(name)
            if name == "oha" and not tool.available():
                install_oha(self.console)
            if not tool.available():
                hint = "scripts/install-oha.sh" if name == "oha" else "make bootstrap"
                why = f"TOOL={name}" if name == self.knobs.tool else "warm-up and peak runs"
                raise KnobError(
                    f"tools: load tool {name} not found on PATH (needed for {why}); install it "
                    f"with {hint}; nothing was built, started or measured"
                )
        if self.knobs.priority and not self.priority:
            self.console.print(
                f"[yellow]PRIORITY={self.knobs.priority} needs root or CAP_SYS_NICE: "
                "running at normal priority (other work on the host competes more)[/]"
            )
        if self.knobs.calibration and not calibration.nginx_path():
            self.console.print(
                "[bold yellow]!! nginx not found: the calibration ceiling is NOT measured "
                "(install Debian's nginx-light, or run make bootstrap)[/]"
            )
            self.knobs.calibration = False

    def use_front(self, stacks: list[str]) -> None:
        """FRONT=nginx|apache: every stack is started behind that TLS front."""
        kind = self.knobs.front
        if kind == "none":
            return
        manifests = []
        for name in stacks:
            with contextlib.suppress(ManifestError):
                manifests.append(load(name))
        refusal = front.refusal(kind, manifests)
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

    def tool_versions(self) -> dict:
        versions = {}
        for name in ("wrk", "oha", "ab", "h2load"):
            tool = get_tool(name)
            versions[name] = tool.version() if tool.available() else "absent"
        versions["nginx"] = calibration.version()
        if self.knobs.front != "none":
            versions["front"] = front.version(self.knobs.front)
        return versions

    def provenance(self, stacks: list[str]) -> dict:
        manifests = {}
        for name in stacks:
            with contextlib.suppress(ManifestError):
                manifests[name] = load(name).provenance()
        return {
            "run_id": self.run_id,
            "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "command": sys.argv,
            "git": git_info(),
            "host": host_info(),
            "tools": self.tool_versions(),  # a Docker run replaces wrk, ab, oha: start_client
            "runner": self.runner_choice,
            "client": {"where": "host"} if self.knobs.runner == "native" else {},
            "knobs": self.knobs.to_dict(),
            "stacks": manifests,
            "runtime_versions": {},
            "priority_applied": self.priority,
            "front": self.front_provenance(),
            "status": "running",
        }

    def front_provenance(self) -> dict:
        kind = self.knobs.front
        if kind == "none":
            return {"kind": "none"}
        template = front.FRONTS[kind].template
        return {
            "kind": kind,
            "version": front.version(kind),
            "template": str(template.relative_to(REPO_ROOT)),
            "configs": {},  # stack -> the rendered config, filled in at its first start
        }

    # --------------------------------------------------------------- the run

    def run(self, dry_run: bool = False) -> int:
        try:
            stacks = self.stacks()
            self.choose_runner()
            self.check_tools()
            try:
                self.runner = get_runner(self.knobs.runner)
            except (ImportError, ValueError) as exc:
                raise KnobError(f"RUNNER={self.knobs.runner}: not available ({exc})") from None
            # A tls = true stack's certificate lives in the results folder.
            self.runner.tls_folder = self.folder / "tls"
            self.use_front(stacks)
        except (KnobError, ToolError, RunnerUnavailable) as exc:
            self.console.print(f"[red]bench: {escape(str(exc))}[/]")
            return 2
        self.contracts = stack_contracts(stacks)
        the_plan = plan.build_plan(self.knobs, stacks, self.contracts)
        if self.resume:
            self.load_previous()
        self.print_plan(stacks, the_plan)
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
                run_info = self.provenance(stacks)
            write_json_atomic(run_file, run_info)
            self.writer = ResultsWriter(self.folder / RESULTS_FILE)
        except OSError as exc:
            self.console.print(
                f"[bold red]✗ {escape(str(WriteFailed(None, exc)))}; nothing was built or measured[/]"
            )
            return 2
        self.run_info = run_info
        previous_handler = signal.signal(signal.SIGTERM, _raise_interrupt)
        # Ctrl-C (SIGINT) interrupts the run cleanly even when a script started
        # the bench in the background: bash then hands it SIGINT ignored, and
        # Python keeps an ignored SIGINT ignored.
        previous_int_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            # The load client first: without it no stack could be measured.
            if self.start_client(run_info):
                self.prepare(stacks, run_info)
                self.write_run_info(run_file, run_info)
                self.measure(the_plan)
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
            if self.client is not None:
                self.client.close()
                self.client = None
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
        return self.finish()

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
        """Docker runs: the loadgen container (built if needed) becomes the executor.

        Every load tool of the run, the ceiling's too, then runs in it, so the
        stacks and the ceiling are measured by the same client. False when it
        cannot run: nothing is built or measured and the run fails with the reason.
        """
        if self.knobs.runner != "docker":
            return True
        self.console.print(escape("[loadgen] build and start …"))
        try:
            self.client = self.runner.load_client(self.knobs.client_cpus)
            for name in self.needed_tools():
                self.client.binary(get_tool(name))
            info = self.client.provenance()
        except ToolError as exc:
            self.fail(StepError("loadgen", "prerequisites", str(exc)))
            return False
        except StepError as exc:
            self.fail(exc)
            return False
        self.executor = self.client
        run_info["client"] = info
        # The load tools that produce the numbers are the image's; nginx (the ceiling) and
        # a front stay the host's.
        run_info["tools"] = {**run_info.get("tools", {}), **info["tools"]}
        self.console.print(
            escape(f"[loadgen] every load tool runs in container {self.client.container_id[:12]}")
            + f", cpuset {info.get('cpuset', '?')} (client cores {_cpus(self.knobs.client_cpus)}),"
            " host network"
        )
        if self.priority:
            self.console.print(
                f"[yellow]PRIORITY={self.priority} applies to the servers only: the load tool in "
                "the loadgen container runs at normal priority (it has no CAP_SYS_NICE)[/]"
            )
        return True

    def print_plan(self, stacks: list[str], the_plan: list[Instance]) -> None:
        k = self.knobs
        todo = self.remaining(the_plan)
        cases = sum(len(i.cases) for i in todo)
        estimate = plan.estimate_seconds(k, todo, self.primed())
        self.console.print(
            f"[bold]serverlab bench[/] profile [cyan]{k.profile}[/] ({k.description})"
        )
        quota = ", ".join(f"{q:g}" for q in k.server_cpu_quota) or "none"
        rate = ", ".join(k.rate) or "closed loop"
        self.console.print(
            f"  stacks: {', '.join(stacks) or 'none'}"
            + (" + nginx ceiling" if k.calibration else "")
            + f"\n  scenarios: {', '.join(k.scenarios)}; connections: "
            f"{', '.join(map(str, k.connections))}; tool: {k.tool} ({rate})"
            f"\n  duration {k.duration:g} s, warm-up {k.warmup:g} s, {k.repeat} round(s), "
            f"seed {k.seed}; server cores {_cpus(k.server_cpus)}, client cores "
            f"{_cpus(k.client_cpus)}; CPU quota {quota}; memory {k.server_memory or 'no limit'}"
            f"; runner {k.runner}; priority {self.priority or 'normal'}"
            + (f"; TLS front {k.front} ({front.version(k.front)})" if k.front != "none" else "")
        )
        for note in plan.contract_notes(k, stacks, self.contracts):
            self.console.print(f"  {escape(note)}")
        extra = []
        if k.tool in ("ab", "h2load") and k.requests:
            counts = ", ".join(f"{s}={n}" for s, n in k.requests.items())
            extra.append(f"requests per run (instead of the duration): {counts}")
        if k.server_cores:
            extra.append(f"server cores: {', '.join(map(str, k.server_cores))} "
                         "(each quota is a share of them)")  # fmt: skip
        if k.ttfb:
            extra.append(f"TTFB: {k.ttfb} fresh connections per case")
        if extra:
            self.console.print("  " + "; ".join(extra))
        self.console.print(
            f"  plan: {cases} measurements in {len(todo)} server starts; "
            f"estimated [bold]{_minutes(estimate)}[/] (builds not included)"
        )
        self.console.print(f"  results: {escape(str(self.folder))}")

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
                    self.peaks[_peak_key(record)] = record["result"]["rps"]
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
            "at": _now(),
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

    def prepare(self, stacks: list[str], run_info: dict) -> None:
        """Prerequisites and build for every stack, before any load."""
        runner = self.runner
        for name in stacks:
            try:
                manifest = load(name)
            except ManifestError as exc:
                self.fail(StepError(name, "manifest", str(exc)))
                continue
            reason = runner.unavailable_reason(manifest)
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
            entry["dependencies_error"] = exc.message
            self.console.print(f"[yellow]! {escape(str(exc))}: not recorded in {RUN_FILE}[/]")

    def measure(self, the_plan: list[Instance]) -> None:
        k = self.knobs
        _pin_harness(k.client_cpus)
        _raise_file_limit()
        todo = self.remaining(the_plan)
        self.cases_total = sum(len(i.cases) for i in todo)
        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[cases]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
        )
        estimate = plan.estimate_seconds(k, todo, self.primed())
        with Progress(*columns, console=self.console, transient=False) as progress:
            self.progress = progress
            self.task = progress.add_task("bench", total=estimate, cases=f"0/{self.cases_total}")
            seen: set[str] = set(self.verified)
            for instance in todo:
                verify = instance.stack not in seen and instance.stack != calibration.NAME
                seen.add(instance.stack)
                budget = plan.instance_seconds(k, instance, verify, self.primed().get(instance.stack, 0.0))
                spent_before = progress.tasks[0].completed
                self.run_instance(instance)
                # Keep the bar honest when an instance was skipped or cut short.
                progress.update(self.task, completed=spent_before + budget)
            self.progress = None

    # ---------------------------------------------------------- one instance

    def start_server(self, instance: Instance):
        k = self.knobs
        if instance.stack == calibration.NAME:
            folder = self.folder / "calibration"
            return calibration.CalibrationServer(folder, k.server_cpus)
        cpus = plan.server_cpus_for(k, instance.cores)
        limits = Limits(cpus=cpus, cpu_quota=instance.quota, memory=k.memory_bytes)
        return self.runner.start(self.manifests[instance.stack], limits)

    def display_name(self, stack: str) -> str:
        if stack == calibration.NAME:
            return calibration.DISPLAY_NAME
        manifest = self.manifests.get(stack)
        return manifest.label if manifest else stack  # "nginx static (stock)" for a variant

    def run_instance(self, instance: Instance) -> None:
        stack = instance.stack
        if stack in self.failed:
            return
        if stack != calibration.NAME and stack not in self.manifests:
            return
        label = stack + (f" quota {instance.quota:g}" if instance.quota is not None else "")
        label += f" {instance.cores} core(s)" if instance.cores else ""
        self.progress.update(self.task, description=f"{label} r{instance.repetition}")
        server = None
        step = "start"  # named in the message of an unexpected OSError
        try:
            server = self.start_server(instance)
            step = "wait-ready"
            ready = server.wait_ready(READY_TIMEOUT_S)
            self.prioritize(server)
            self.record_front(stack, server)
            if stack != calibration.NAME and stack not in self.verified:
                step = "verify"
                self.verify(stack, server, ready)
            step = "load"
            self.measure_response_bytes(stack, server, instance)
            current_scenario = None
            warmed = None
            for case in instance.cases:
                if case.scenario != current_scenario:
                    current_scenario = case.scenario
                    warmed = self.warm_up(server, instance, case.scenario)
                self.run_case(server, instance, case, warmed)
                if not server.is_alive():
                    raise StepError(
                        stack, "load",
                        f"server exited during {case.scenario} at {case.connections} connections",
                        server.output_tail(),
                    )  # fmt: skip
                time.sleep(PAUSE_BETWEEN_CASES_S)
            step = "stop"
            code = server.stop(STOP_TIMEOUT_S)
            server = None
            self.record_stack(stack, "stop", "ok", f"exit code {code}",
                              repetition=instance.repetition)  # fmt: skip
        except ToolError as exc:
            self.fail(StepError(stack, "load", str(exc)), instance.repetition)
        except StepError as exc:
            if exc.step == "stop":
                # Measured fine, stopped badly: keep its numbers, record the stop.
                server = None
                self.record_stack(stack, "stop", "unclean", exc.message,
                                  output=exc.output[-4000:], repetition=instance.repetition)  # fmt: skip
                self.say(f"[yellow]! {escape(exc.explain())}[/]")
            else:
                self.fail(exc, instance.repetition)
        except OSError as exc:
            if self.in_results(exc):  # a full disk or a read-only folder: the run stops
                raise WriteFailed(stack, exc) from exc
            self.fail(StepError(stack, step, str(exc)), instance.repetition)
        finally:
            if server is not None:
                server.kill()

    def in_results(self, exc: OSError) -> bool:
        """Did this error come from writing into the results folder?"""
        if not exc.filename:
            return False
        with contextlib.suppress(OSError, ValueError):
            return Path(os.fsdecode(exc.filename)).resolve().is_relative_to(self.folder.resolve())
        return False

    def prioritize(self, server) -> None:
        if self.priority:
            raise_priority(server.pids(), self.priority)

    def verify(self, stack: str, server, ready_s: float) -> None:
        from loadtest.runners.conformance import run_conformance, server_cert

        manifest = self.manifests[stack]
        self.progress.update(self.task, description=f"{stack} verify")
        report = run_conformance(manifest, server.base_url, tls_cert=server_cert(server))
        failures = [
            f"{c['id']}: {c.get('detail', '')}" for c in report.get("checks", []) if not c.get("ok")
        ]
        observed = report.get("observed", {})
        if report.get("failed", 0) or not server.is_alive():
            message = f"{report.get('failed', 0)} of {report.get('passed', 0) + report.get('failed', 0)} conformance checks failed; not benchmarked"
            if not server.is_alive():
                message = "server died during the conformance checks; not benchmarked"
            raise StepError(
                stack, "verify", message, "\n".join(failures[:40]) or server.output_tail()
            )
        self.verified.add(stack)
        self.record_stack(
            stack, "verify", "ok", f"{report.get('passed', 0)} checks passed",
            ready_s=round(ready_s, 2), observed=observed,
        )  # fmt: skip
        self.say(f"[green]✓ {escape(stack)}: {report.get('passed', 0)} conformance checks passed[/] "
                 f"(ready in {ready_s:.1f} s)")  # fmt: skip

    def measure_response_bytes(self, stack: str, server, instance: Instance) -> None:
        port = int(server.base_url.rsplit(":", 1)[1])
        for scenario in {c.scenario for c in instance.cases}:
            if (stack, scenario) not in self.response_bytes:
                measured = response_bytes(
                    "127.0.0.1", port, SCENARIOS[scenario],
                    tls_cert=getattr(server, "tls_cert", None),
                    headers=SCENARIO_HEADERS.get(scenario, ()),
                )  # fmt: skip
                self.response_bytes[(stack, scenario)] = measured.to_dict()

    def spec(self, server, case: Case, rate: float | None = None, duration=None):
        from loadtest.measure.tools.base import LoadSpec

        k = self.knobs
        fixed = case.tool in ("ab", "h2load") and duration is None
        return LoadSpec(
            url=server.base_url + case.path,
            connections=case.connections,
            duration=duration if duration is not None else k.duration,
            timeout=k.timeout,
            threads=k.threads,
            rate=rate,
            requests=k.requests.get(case.scenario) if fixed else None,
            keepalive=k.keepalive,
            client_cpus=k.client_cpus,
            priority=self.priority,
            headers=case.headers,
            # HTTP/2 here means over TLS (ALPN); no stack speaks cleartext h2c.
            http1=k.http == "1.1" or not server.base_url.startswith("https:"),
            ca_cert=str(server.tls_cert) if getattr(server, "tls_cert", None) else None,
        )

    def warm_up(self, server, instance: Instance, scenario: str) -> steady.WarmUp | None:
        """Load before a scenario's first case until its throughput is steady (JITs,
        caches, pools): one-second windows, at most WARMUP seconds (loadtest/steady.py)."""
        if self.knobs.warmup <= 0:
            return None
        connections = max(c.connections for c in instance.cases if c.scenario == scenario)
        # h2load cases warm up with h2load: the same protocol, TLS sessions and headers.
        tool = "h2load" if self.knobs.tool == "h2load" else "wrk"
        case = Case(instance.stack, instance.quota, scenario, connections, tool, "",
                    instance.repetition, "warmup", instance.cores)  # fmt: skip
        spec = self.spec(server, case, duration=WARMUP_WINDOW_S)
        raw = self.folder / "raw" / "warmup" / _raw_name(case)
        primed = self.prime(server, instance, case, tool)
        windows = 0

        def window() -> float | None:
            nonlocal windows
            windows += 1
            self.progress.update(self.task, description=f"{instance.stack} {scenario} warm-up {windows}s")
            result = get_tool(tool).run(spec, raw.with_name(f"{raw.name}.w{windows}"), self.executor)
            return result.rps if result.ok and result.requests > 0 else None

        warmed = steady.warm_up(window, self.knobs.warmup, primed)
        if not warmed.steady and not warmed.problem:
            self.say(f"[yellow]! {escape(instance.stack)} {scenario}: not steady after "
                     f"{warmed.seconds:g} s of warm-up (windows {_rates(warmed.curve)})[/]")  # fmt: skip
        return warmed

    def primed(self) -> dict[str, float]:
        """Each stack's declared JIT warm-up (manifest `warmup_s`), for the estimates."""
        return {name: m.warmup_s for name, m in self.manifests.items() if m.warmup_s}

    def prime(self, server, instance: Instance, case: Case, tool: str) -> float:
        """Before an instance's first warm-up: the seconds of load its manifest
        declares (`warmup_s`, a JIT's compile queue) in one run."""
        manifest = self.manifests.get(instance.stack)
        seconds = manifest.warmup_s if manifest else 0.0
        first = case.scenario == instance.cases[0].scenario
        if not seconds or not first:
            return 0.0
        self.progress.update(self.task, description=f"{instance.stack} JIT warm-up {seconds:g} s")
        raw = self.folder / "raw" / "warmup" / (_raw_name(case) + ".primed")
        get_tool(tool).run(self.spec(server, case, duration=seconds), raw, self.executor)
        return seconds

    def run_case(self, server, instance: Instance, case: Case, warmed=None) -> None:
        k = self.knobs
        rate = None
        fraction = None
        if case.rate.endswith("%"):
            fraction = float(case.rate[:-1]) / 100
            peak = self.peaks.get(_peak_key(case))
            if not peak:
                self.say(f"[yellow]! {case.stack} {case.scenario}: no peak measured, "
                         f"skipping oha at {case.rate}[/]")  # fmt: skip
                return
            rate = max(1.0, round(peak * fraction))
        elif case.rate:
            rate = float(case.rate)
        tool = get_tool(case.tool)
        spec = self.spec(server, case, rate=rate)
        self.seq += 1
        self.progress.update(
            self.task,
            description=f"{case.stack} {case.scenario} c={case.connections}"
            + (f" @{rate:g}/s" if rate else ""),
        )
        started_at = _now()
        self.prioritize(server)  # workers forked since start get it too
        cpus = plan.server_cpus_for(k, case.cores)
        sampler = UsageSampler(server.pids, cpus, k.client_cpus)
        sampler.start()
        try:
            result = tool.run(spec, self.folder / "raw" / _raw_name(case, self.seq), self.executor)
        finally:
            usage = sampler.stop()
        alive = server.is_alive()
        cores = tool.usable_cores(spec)
        share = tool_cpu_share(result.tool_cpu_s, result.wall_s, cores)
        bound = client_bound(result.tool_cpu_s, result.wall_s, cores)
        # A case cut short by the server's death measured the crash, not the stack:
        # kept for the record, never counted (and measured again by --resume).
        ok = result.ok and result.requests > 0 and alive
        if not alive:
            result.problem = "; ".join(
                p for p in ("server exited during the case", result.problem) if p
            )
        shared = bool(set(cpus) & set(k.client_cpus))
        tool_used = result.tool_cpu_s / result.wall_s if result.wall_s else 0
        foreign = foreign_load(usage, tool_used, k, cpus)
        # Fresh connections tell something even when the load failed (one request each).
        first_byte = self.measure_ttfb(server, case) if server.is_alive() else {}
        record = {
            "kind": "measurement",
            "seq": self.seq,
            "run_id": self.run_id,
            "key": case.key,
            "status": "ok" if ok else "failed",
            "problem": result.problem,
            "stack": case.stack,
            "display_name": self.display_name(case.stack),
            "ceiling": case.stack == calibration.NAME,
            "runner": "native" if case.stack == calibration.NAME else k.runner,
            # The TLS front the stack was measured behind ("none": plain HTTP; the ceiling never).
            "front": "none" if case.stack == calibration.NAME else k.front,
            # Where the load tool ran: "host" or "loadgen-container" (a Docker run).
            "client": self.executor.where,
            "scenario": case.scenario,
            "path": case.path,
            "connections": case.connections,
            "tool": case.tool,
            "phase": case.phase,
            "rate_spec": case.rate,
            "rate": rate,
            "rate_fraction": fraction,
            "repetition": case.repetition,
            "cpu_quota": case.quota,
            "server_cores": len(cpus),
            # Share of the server cores the quota allows (1 = uncapped).
            "cpu_share": round(case.quota / len(cpus), 4) if case.quota is not None else 1.0,
            # Server and load tool on the same cores (e.g. 2 server cores on a 2-core host).
            "shared_cores": shared,
            "server_memory": k.server_memory or None,
            "server_cpus": list(cpus),
            "client_cpus": list(k.client_cpus),
            "threads": k.threads if case.tool in ("wrk", "h2load") else None,
            "headers": dict(case.headers),
            "duration_s": k.duration,
            "keepalive": k.keepalive if case.tool == "ab" else True,
            "started_at": started_at,
            "result": result.to_dict(),
            "server": usage.to_dict(),
            "tool_cpu_share": round(share, 4),
            "tool_cores": cores,
            "priority": self.priority,
            "client_bound": bound,
            # CPU used on the pinned cores by anything but the server and the tool.
            "foreign_load_pct": foreign,
            "noisy": any(v is not None and v > NOISY_FOREIGN_PCT for v in foreign.values()),
            "response": self.response_bytes.get((case.stack, case.scenario)),
            "server_alive_after": alive,
            **first_byte,
            **(warmed.to_dict() if warmed else {}),
        }
        record.update(limits(record, fraction is not None or rate is not None))
        self.writer.write(record)
        if case.phase == "peak" and ok:
            self.peaks[_peak_key(case)] = result.rps
        self.cases_run += 1
        self.progress.update(self.task, advance=plan.case_seconds(k, case),
                             cases=f"{self.cases_run}/{self.cases_total}")  # fmt: skip
        self.say(self.status_line(record))

    def measure_ttfb(self, server, case: Case) -> dict:
        """TTFB_SAMPLES fresh connections on the now idle server (the `ttfb_*` fields)."""
        if not self.knobs.ttfb or case.phase != "measure":
            return {}
        self.progress.update(self.task, description=f"{case.stack} {case.scenario} TTFB")
        raw = self.folder / "raw" / (_raw_name(case, self.seq) + "-ttfb")
        return ttfb.measure(
            server.base_url + case.path, getattr(server, "tls_cert", None), raw,
            samples=self.knobs.ttfb, headers=case.headers, cpus=self.knobs.client_cpus,
            priority=self.priority, timeout=self.knobs.timeout,
        )  # fmt: skip

    def status_line(self, record: dict) -> str:
        result = record["result"]
        head = (
            f"[{self.cases_run}/{self.cases_total}] {record['stack']:<16} {record['scenario']:<7} "
            f"c={record['connections']:<5} {record['tool']}"
            + (f"@{record['rate']:g}/s" if record["rate"] else "")
            + (f" q={record['cpu_quota']:g}" if record["cpu_quota"] is not None else "")
            + (f" {record['server_cores']}c" if self.knobs.server_cores else "")
            + f" r{record['repetition']}"
        )
        if record["status"] != "ok":
            return f"[red]✗ {escape(head)}  {escape(record['problem'] or 'no responses')}[/]"
        p99 = result["latency_ms"].get("p99")
        cpu = record["server"].get("cpu_active_pct") or record["server"].get("cpu_mean_pct")
        errors = result["errors_total"]
        parts = [
            f"{result['rps']:>10,.0f} req/s",
            f"p99 {p99:.2f} ms" if p99 is not None else "p99 -",
            f"errors {errors}" if errors else "no errors",
            f"server cpu {cpu:.0f}%" if cpu is not None else "",
            f"tool cpu {record['tool_cpu_share'] * 100:.0f}%",
            f"TTFB p50 {record['ttfb_p50_ms']:.2f} ms" if record.get("ttfb_p50_ms") else "",
        ]
        flag = f"  {verdict_mark(record)}"
        if record["not_steady"]:
            flag += f"  [bold magenta]NOT-STEADY[/] ({steady_reason(record)})"
        if record["shared_cores"]:
            flag += "  [bold yellow]SHARED CORES[/] (server and tool on the same cores)"
        if record["noisy"]:
            foreign = record["foreign_load_pct"]
            flag += (
                f"  [bold magenta]NOISY[/] (other load on server cores "
                f"{_pct(foreign['server_cores'])}, client cores {_pct(foreign['client_cores'])})"
            )
        color = "yellow" if errors else "green"
        return f"[{color}]✓[/] {escape(head)}  " + "  ".join(p for p in parts if p) + flag

    # ---------------------------------------------------------------- finish

    def print_summary(self) -> None:
        """Requests/s per stack and scenario at the highest connection level, ceiling last."""
        from rich.table import Table

        from loadtest.report.charts import uncapped
        from loadtest.report.render import limited_by
        from loadtest.report.summary import measurement_rows

        rows = uncapped([
            r for r in measurement_rows(read_records(self.folder / RESULTS_FILE))
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
                if row and row.get("not_steady_runs"):
                    cell += " NOT-STEADY"
                cells.append(cell)
            name = next(r["display_name"] for r in rows if r["stack"] == stack)
            table.add_row(escape(name), *cells)
        self.console.print(table)

    def list_failed(self) -> None:
        if self.failed:
            self.console.print("[bold yellow]stacks not (fully) benchmarked:[/]")
            for stack, why in sorted(self.failed.items()):
                self.console.print(escape(f"  {stack}: {why}"))

    def finish(self) -> int:
        from loadtest.report import generate

        if self.write_failed:
            # The folder takes no more files: no report now, the numbers are safe.
            self.print_summary()
            self.list_failed()
            self.console.print(f"[red]no report written (the results folder cannot be written); "
                               f"later: make report RUN={self.run_id}[/]")  # fmt: skip
            return 130 if self.interrupted else 1
        try:
            outputs = generate(self.folder)
        except KeyboardInterrupt:
            self.console.print("[red]report generation interrupted; run make report later[/]")
            return 130
        except Exception as exc:  # the measurements are safe; say how to retry
            self.console.print(f"[red]report generation failed: {exc!r}; "
                               f"retry with: make report RUN={self.run_id}[/]")  # fmt: skip
            return 1
        self.print_summary()
        self.console.print(f"\n[bold]results:[/] {escape(str(self.folder))}")
        for path in outputs:
            self.console.print(f"  {path.relative_to(self.folder)}")
        self.list_failed()
        if self.interrupted:
            return 130
        # Skipped stacks (toolchain missing here) are listed but do not fail the run;
        # a stack that failed a step does, after everything else was measured.
        failed = [s for s, why in self.failed.items() if not why.startswith("skipped")]
        return 1 if failed else 0


class WriteFailed(Exception):
    """results.jsonl, run.json or a raw output could not be written (full disk, read-only)."""

    def __init__(self, stack: str | None, error: OSError) -> None:
        where = f"[{stack}] " if stack else ""
        why = error.strerror or str(error)
        super().__init__(
            f"{where}writing results failed: {why} ({os.fsdecode(error.filename or '')})"
        )
        self.stack = stack
        self.error = error


def foreign_load(usage, tool_cores_used: float, knobs: Knobs, server_cpus=None) -> dict:
    """Busy % of the pinned cores that neither the server nor the load tool explains.

    Other processes (a build, another benchmark, the desktop) on the same cores
    take time from the measured pair; above NOISY_FOREIGN_PCT the measurement is
    flagged NOISY. The harness's own sampler runs on the client cores and stays
    far below the threshold.
    """
    server = client = None
    server_cpus = server_cpus or knobs.server_cpus
    if usage.server_cores_busy_pct is not None and usage.cpu_mean_pct is not None:
        server = usage.server_cores_busy_pct - usage.cpu_mean_pct / len(server_cpus)
    if usage.client_cores_busy_pct is not None:
        client = usage.client_cores_busy_pct - tool_cores_used * 100 / len(knobs.client_cpus)
    if set(server_cpus) & set(knobs.client_cpus):
        server = client = None  # shared cores: the pair itself explains the overlap
    return {
        "server_cores": None if server is None else round(max(0.0, server), 1),
        "client_cores": None if client is None else round(max(0.0, client), 1),
    }


def limits(record: dict, open_loop: bool) -> dict:
    """The verdict (what limited the figure) and the steadiness of one measurement."""
    result, usage = record["result"], record["server"]
    capacity = record["cpu_quota"] or record["server_cores"]
    cpu = usage.get("cpu_active_pct")
    figures = Figures(
        rps=result["rps"],
        connections=record["connections"],
        mean_latency_ms=result["latency_ms"].get("mean"),
        server_cpu_pct=cpu if cpu is not None else usage.get("cpu_mean_pct"),
        server_capacity=capacity,
        tool_share=record["tool_cpu_share"],
        server_cores_busy_pct=usage.get("server_cores_busy_pct"),
        foreign_pct=record["foreign_load_pct"].get("server_cores"),
        client_foreign_pct=record["foreign_load_pct"].get("client_cores"),
        errors=result["errors_total"],
        requests=result["requests"],
        closed_loop=not open_loop,
        offered_rate=record["rate"],
        shared_cores=record["shared_cores"],
        tool=record["tool"],
    )
    unsettled = record.get("warmup_steady") is False
    return {
        **judge(figures).to_dict(),
        "drift": usage.get("drift"),
        "drift_t": usage.get("drift_t"),
        "not_steady": steady.not_steady(usage.get("drift"), usage.get("drift_t")) or unsettled,
    }


def verdict_mark(record: dict) -> str:
    """How the console shows what limited a figure."""
    if record["verdict"] == "server-bound":
        return "[green]server-bound[/]"
    if record["verdict"] == "client-bound":
        return "[bold yellow]CLIENT-BOUND[/]"
    return f"[bold red]NEITHER[/] ({escape(record['cause'])}: {escape(record['verdict_detail'])})"


def steady_reason(record: dict) -> str:
    if record.get("warmup_steady") is False:
        return f"warm-up did not settle in {record['warmup_s']:g} s"
    return f"second half {record['drift'] * 100:+.0f}% against the first"


def _rates(curve: list[float]) -> str:
    return ", ".join(f"{r:,.0f}" for r in curve)


def _pct(value) -> str:
    return "-" if value is None else f"{value:.0f}%"


def install_oha(console: Console) -> None:
    """oha is built from crates.io once (about 9 minutes on 2 cores) into a cache folder."""


    console.print("[bold]oha is not installed: building it once with scripts/install-oha.sh "
                  "(about 9 minutes on 2 cores; cached outside the repository)[/]")  # fmt: skip
    result = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "install-oha.sh")])
    if result.returncode != 0:
        console.print("[red]scripts/install-oha.sh failed[/]")


def stack_contracts(stacks: list[str]) -> dict[str, str]:
    """Each stack's manifest contract, "api" or "static" (unreadable manifests: "api")."""
    contracts = {}
    for name in stacks:
        try:
            contracts[name] = load(name).contract
        except ManifestError:
            contracts[name] = "api"
    return contracts


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def _pin_harness(cpus: tuple[int, ...]) -> None:
    """Keep the harness (sampler, bookkeeping) off the server cores."""
    with contextlib.suppress(OSError):
        os.sched_setaffinity(0, cpus)


def _raise_file_limit() -> None:
    """Thousands of connections need thousands of descriptors (tools and servers inherit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 1_048_576), hard))


def _peak_key(case_or_record) -> tuple:
    get = (
        (lambda k: case_or_record[k])
        if isinstance(case_or_record, dict)
        else (lambda k: getattr(case_or_record, {"cpu_quota": "quota"}.get(k, k)))
    )
    return (get("stack"), get("cpu_quota"), get("scenario"), get("connections"), get("repetition"))


def _raw_name(case: Case, seq: int | None = None) -> str:
    parts = [f"{seq:04d}" if seq else "", case.stack, case.scenario, f"c{case.connections}"]
    if case.quota is not None:
        parts.append(f"q{case.quota:g}")
    if case.cores is not None:
        parts.append(f"{case.cores}cores")
    parts.append(case.tool + (f"-{case.rate.replace('%', 'pct')}" if case.rate else ""))
    parts.append(f"r{case.repetition}")
    return "-".join(p for p in parts if p)


def _cpus(cpus: tuple[int, ...]) -> str:
    return ",".join(map(str, cpus))


def _minutes(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")

