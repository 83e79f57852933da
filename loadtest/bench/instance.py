"""One stack instance of a run: start it, verify it once, measure its cases, stop it.

An `InstanceRunner` works for one `Bench` (loadtest/bench/run.py): a failure
of one instance is recorded there with its step and output, and the run
carries on with the next instance.
"""

from __future__ import annotations

import contextlib
import os
import resource
import time
from pathlib import Path

from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from loadtest.bench import plan
from loadtest.bench.plan import Instance
from loadtest.core.errors import StepError
from loadtest.core.runner import Limits
from loadtest.measure.tools.base import ToolError
from loadtest.runners import calibration
from loadtest.runners.conformance import run_conformance, server_cert

READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
# Cases of one instance run back to back; a short pause lets sockets in
# TIME_WAIT and the server's own bookkeeping settle between them.
PAUSE_BETWEEN_CASES_S = 0.3


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


class InstanceRunner:
    def __init__(self, bench) -> None:
        self.bench = bench

    def measure(self, the_plan: list[Instance]) -> None:
        """Every instance still to do, under one progress bar."""
        k = self.bench.knobs
        _pin_harness(k.client_cpus)
        _raise_file_limit()
        todo = self.bench.remaining(the_plan)
        self.bench.cases_total = sum(len(i.cases) for i in todo)
        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[cases]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
        )
        estimate = plan.estimate_seconds(k, todo, self.bench.primed())
        with Progress(*columns, console=self.bench.console, transient=False) as progress:
            self.bench.progress = progress
            self.bench.task = progress.add_task(
                "bench", total=estimate, cases=f"0/{self.bench.cases_total}"
            )
            seen: set[str] = set(self.bench.verified)
            for instance in todo:
                verify = instance.stack not in seen and instance.stack != calibration.NAME
                seen.add(instance.stack)
                primed = self.bench.primed().get(instance.stack, 0.0)
                budget = plan.instance_seconds(k, instance, verify, primed)
                spent_before = progress.tasks[0].completed
                self.run_instance(instance)
                # Keep the bar honest when an instance was skipped or cut short.
                progress.update(self.bench.task, completed=spent_before + budget)
            self.bench.progress = None

    def start_server(self, instance: Instance):
        k = self.bench.knobs
        if instance.stack == calibration.NAME:
            engine = getattr(self.bench.runner, "engine", None)
            if engine is not None and engine.remote:  # on the stacks' host, in a container
                return calibration.CeilingContainer(engine, k.server_cpus)
            folder = self.bench.folder / "calibration"
            return calibration.CalibrationServer(folder, k.server_cpus)
        cpus = plan.server_cpus_for(k, instance.cores)
        limits = Limits(cpus=cpus, cpu_quota=instance.quota, memory=k.memory_bytes)
        return self.bench.runner.start(self.bench.manifests[instance.stack], limits)

    def run_instance(self, instance: Instance) -> None:
        stack = instance.stack
        if stack in self.bench.failed:
            return
        if stack != calibration.NAME and stack not in self.bench.manifests:
            return
        label = stack + (f" quota {instance.quota:g}" if instance.quota is not None else "")
        label += f" {instance.cores} core(s)" if instance.cores else ""
        self.bench.progress.update(self.bench.task, description=f"{label} r{instance.repetition}")
        server = None
        step = "start"  # named in the message of an unexpected OSError
        try:
            server = self.start_server(instance)
            step = "wait-ready"
            ready = server.wait_ready(READY_TIMEOUT_S)
            self.bench.prioritize(server)
            self.bench.record_front(stack, server)
            if stack != calibration.NAME and stack not in self.bench.verified:
                step = "verify"
                self.verify(stack, server, ready)
            step = "load"
            self.bench.cases.begin_instance(server, stack)
            self.bench.cases.measure_response_bytes(stack, server, instance)
            current_scenario = None
            warmed = None
            for case in instance.cases:
                if case.scenario != current_scenario:
                    current_scenario = case.scenario
                    warmed = self.bench.cases.warm_up(server, instance, case.scenario)
                self.bench.cases.run(server, instance, case, warmed)
                if not server.is_alive():
                    raise StepError(
                        stack, "load",
                        f"server exited during {case.scenario} at {case.connections} connections",
                        server.output_tail(),
                    )  # fmt: skip
                time.sleep(PAUSE_BETWEEN_CASES_S)
            # The first case once more: did the instance change pace while measured?
            self.bench.cases.recheck(server, instance)
            step = "stop"
            code = server.stop(STOP_TIMEOUT_S)
            server = None
            self.bench.record_stack(stack, "stop", "ok", f"exit code {code}",
                              repetition=instance.repetition)  # fmt: skip
        except ToolError as exc:
            self.bench.fail(StepError(stack, "load", str(exc)), instance.repetition)
        except StepError as exc:
            if exc.step == "stop":
                # Measured fine, stopped badly: keep its numbers, record the stop.
                server = None
                self.bench.record_stack(stack, "stop", "unclean", exc.message,
                                  output=exc.output[-4000:], repetition=instance.repetition)  # fmt: skip
                self.bench.say(f"[yellow]! {escape(exc.explain())}[/]")
            else:
                self.bench.fail(exc, instance.repetition)
        except OSError as exc:
            if self.in_results(exc):  # a full disk or a read-only folder: the run stops
                raise WriteFailed(stack, exc) from exc
            self.bench.fail(StepError(stack, step, str(exc)), instance.repetition)
        finally:
            self.bench.cases.end_instance()
            if server is not None:
                server.kill()

    def in_results(self, exc: OSError) -> bool:
        """Did this error come from writing into the results folder?"""
        if not exc.filename:
            return False
        with contextlib.suppress(OSError, ValueError):
            return (
                Path(os.fsdecode(exc.filename))
                .resolve()
                .is_relative_to(self.bench.folder.resolve())
            )
        return False

    def verify(self, stack: str, server, ready_s: float) -> None:
        manifest = self.bench.manifests[stack]
        self.bench.progress.update(self.bench.task, description=f"{stack} verify")
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
        self.bench.verified.add(stack)
        self.bench.record_stack(
            stack, "verify", "ok", f"{report.get('passed', 0)} checks passed",
            ready_s=round(ready_s, 2), observed=observed,
        )  # fmt: skip
        self.bench.say(f"[green]✓ {escape(stack)}: {report.get('passed', 0)} conformance checks passed[/] "
                 f"(ready in {ready_s:.1f} s)")  # fmt: skip


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
