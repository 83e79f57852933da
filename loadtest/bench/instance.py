"""One stack instance of a run: start it, verify it once, measure its cases, stop it.

An `InstanceRunner` is given the run's `RunContext` and the `CaseRunner` that
measures its cases. `run` returns what happened (`InstanceOutcome`): the
records written, whether the stack passed its verification, the failure that
ended the instance. The run (bench/run.py) records the failure and carries on
with the next instance.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.markup import escape

from loadtest.bench import plan
from loadtest.bench.case import CaseRunner
from loadtest.bench.context import RunContext
from loadtest.bench.plan import Instance
from loadtest.bench.results import WriteFailed
from loadtest.core.errors import StepError
from loadtest.core.runner import Limits
from loadtest.measure.tools.base import ToolError
from loadtest.runners import calibration, lifecycle
from loadtest.runners.conformance import run_conformance, server_cert

STOP_TIMEOUT_S = 15.0
# Cases of one instance run back to back; a short pause lets sockets in
# TIME_WAIT and the server's own bookkeeping settle between them.
PAUSE_BETWEEN_CASES_S = 0.3


@dataclass
class InstanceOutcome:
    """What one instance gave back to the run."""

    records: list[dict] = field(default_factory=list)  # its measurements and re-check
    verified: bool = False  # it passed the contract's checks in this instance
    failure: StepError | None = None  # the step that ended it, to record as failed


class InstanceRunner:
    def __init__(self, context: RunContext, cases: CaseRunner) -> None:
        self.context = context
        self.cases = cases

    def start_server(self, instance: Instance):
        k = self.context.knobs
        if instance.stack == calibration.NAME:
            engine = getattr(self.context.runner, "engine", None)
            if engine is not None and engine.remote:  # on the stacks' host, in a container
                return calibration.CeilingContainer(engine, k.server_cpus)
            return calibration.CalibrationServer(self.context.folder / "calibration", k.server_cpus)
        cpus = plan.server_cpus_for(k, instance.cores)
        limits = Limits(cpus=cpus, cpu_quota=instance.quota, memory=k.memory_bytes)
        return self.context.runner.start(self.context.manifests[instance.stack], limits)

    def run(self, instance: Instance, verify: bool) -> InstanceOutcome:
        """Start, verify (when asked), measure and stop one instance."""
        stack = instance.stack
        outcome = InstanceOutcome()
        self.context.status.doing(f"{label(instance)} r{instance.repetition}")
        server = None
        step = "start"  # named in the message of an unexpected OSError
        try:
            server = self.start_server(instance)
            step = "wait-ready"
            ready = server.wait_ready(lifecycle.READY_TIMEOUT_S)
            self.context.prioritize(server)
            self.context.record_front(stack, server)
            if verify:
                step = "verify"
                self.verify(stack, server, ready)
                outcome.verified = True
            step = "load"
            outcome.records = self.measure_cases(server, instance)
            step = "stop"
            code = server.stop(STOP_TIMEOUT_S)
            server = None
            self.context.journal.stack(stack, "stop", "ok", f"exit code {code}",
                                       repetition=instance.repetition)  # fmt: skip
        except ToolError as exc:
            outcome.failure = StepError(stack, "load", str(exc))
        except StepError as exc:
            if exc.step == "stop":
                # Measured fine, stopped badly: keep its numbers, record the stop.
                server = None
                self.context.journal.stack(stack, "stop", "unclean", exc.message,
                                           output=exc.output[-4000:],
                                           repetition=instance.repetition)  # fmt: skip
                self.context.status.say(f"[yellow]! {escape(exc.explain())}[/]")
            else:
                outcome.failure = exc
        except OSError as exc:
            if self.in_results(exc):  # a full disk or a read-only folder: the run stops
                raise WriteFailed(stack, exc) from exc
            outcome.failure = StepError(stack, step, str(exc))
        finally:
            self.cases.end_instance()
            if server is not None:
                server.kill()
        return outcome

    def measure_cases(self, server, instance: Instance) -> list[dict]:
        """Every case of the instance in order, a warm-up before each scenario's first,
        then the first case once more: did the instance change pace while measured?"""
        self.cases.begin_instance(server, instance.stack)
        self.cases.measure_response_bytes(instance.stack, server, instance)
        records = []
        current_scenario = None
        warmed = None
        for case in instance.cases:
            if case.scenario != current_scenario:
                current_scenario = case.scenario
                warmed = self.cases.warm_up(server, instance, case.scenario)
            records.append(self.cases.run(server, instance, case, warmed))
            if not server.is_alive():
                raise StepError(
                    instance.stack, "load",
                    f"server exited during {case.scenario} at {case.connections} connections",
                    server.output_tail(),
                )  # fmt: skip
            time.sleep(PAUSE_BETWEEN_CASES_S)
        records.append(self.cases.recheck(server, instance))
        return [r for r in records if r is not None]

    def in_results(self, exc: OSError) -> bool:
        """Did this error come from writing into the results folder?"""
        if not exc.filename:
            return False
        with contextlib.suppress(OSError, ValueError):
            return (
                Path(os.fsdecode(exc.filename))
                .resolve()
                .is_relative_to(self.context.folder.resolve())
            )
        return False

    def verify(self, stack: str, server, ready_s: float) -> None:
        manifest = self.context.manifests[stack]
        self.context.status.doing(f"{stack} verify")
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
        self.context.journal.stack(
            stack, "verify", "ok", f"{report.get('passed', 0)} checks passed",
            ready_s=round(ready_s, 2), observed=observed,
        )  # fmt: skip
        self.context.status.say(f"[green]✓ {escape(stack)}: {report.get('passed', 0)} conformance "
                                f"checks passed[/] (ready in {ready_s:.1f} s)")  # fmt: skip


def label(instance: Instance) -> str:
    """The instance as the progress bar names it: its stack, quota and cores."""
    text = instance.stack
    text += f" quota {instance.quota:g}" if instance.quota is not None else ""
    text += f" {instance.cores} core(s)" if instance.cores else ""
    return text
