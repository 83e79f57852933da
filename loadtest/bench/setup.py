"""A run's set-up before anything is built: the runner (RUNNER=auto resolved), the load
tools it needs, the priority it may take, the TLS front it wraps the runner in.

Each knob the set-up settles is settled here once, and the run carries the
result (`Setup`) into its `RunContext`: nothing later re-reads RUNNER, TOOL or
FRONT to decide again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from rich.markup import escape

from loadtest.core.knobs import KnobError, Knobs
from loadtest.core.manifest import Manifest
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.oha import install_oha
from loadtest.runners import calibration, front
from loadtest.runners.choose import choose_runner, docker_problem, get_runner

Say = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class Setup:
    knobs: Knobs  # RUNNER resolved; the ceiling dropped when nginx is missing
    runner: object  # a core.runner.Runner, in a front when FRONT asks for one
    choice: dict  # run.json's runner choice: requested, chosen, why


def set_up(
    knobs: Knobs,
    manifests: dict[str, Manifest],
    folder: Path,
    resume: bool,
    priority: int,
    say: Say,
) -> Setup:
    """Raises KnobError, ToolError or RunnerUnavailable with the reason the run cannot start."""
    knobs, choice = chosen_runner(knobs, manifests, resume, say)
    knobs = checked_tools(knobs, priority, say)
    try:
        runner = get_runner(knobs.runner, knobs.server_host)
    except (ImportError, ValueError) as exc:
        raise KnobError(f"RUNNER={knobs.runner}: not available ({exc})") from None
    # A tls = true stack's certificate lives in the results folder.
    runner.tls_folder = folder / "tls"
    return Setup(knobs, fronted(runner, knobs.front, manifests, folder), choice)


def chosen_runner(
    knobs: Knobs, manifests: dict[str, Manifest], resume: bool, say: Say
) -> tuple[Knobs, dict]:
    """Resolve RUNNER=auto, say which runner and why (raises RunnerUnavailable)."""
    requested = knobs.runner
    stacks = list(manifests.values())
    chosen, reason = choose_runner(
        requested, probe=lambda: docker_problem(stacks), tools=needed_tools(knobs)
    )
    if resume and requested != "auto":
        reason = f"the run's own runner ({reason})"
    say(f"runner: {chosen} — {escape(reason)}")
    choice = {"requested": requested, "chosen": chosen, "reason": reason}
    return dataclasses.replace(knobs, runner=chosen), choice


def needed_tools(knobs: Knobs) -> list[str]:
    # wrk also warms up and finds the peak; h2load warms up its own cases.
    tools = {knobs.tool, knobs.tls_tool} - {""}
    return sorted(tools if tools == {"h2load"} else tools | {"wrk"})


def checked_tools(knobs: Knobs, priority: int, say: Say) -> Knobs:
    """Every load tool the run needs is here (oha installed when missing); without
    nginx the ceiling is left out, loudly."""
    # A Docker run's tools are the loadgen image's, checked when it starts.
    for name in [] if knobs.runner == "docker" else needed_tools(knobs):
        tool = get_tool(name)
        if name == "oha" and not tool.available():
            install_oha(say)
        if not tool.available():
            raise KnobError(missing_tool(knobs, name))
    if knobs.priority and not priority:
        say(f"[yellow]PRIORITY={knobs.priority} needs root or CAP_SYS_NICE: "
            "running at normal priority (other work on the host competes more)[/]")  # fmt: skip
    # The ceiling on another host runs in the loadgen image, which holds nginx.
    if knobs.calibration and not knobs.server_host and not calibration.nginx_path():
        say("[bold yellow]!! nginx not found: the calibration ceiling is NOT measured "
            "(install Debian's nginx-light, or run make bootstrap)[/]")  # fmt: skip
        return dataclasses.replace(knobs, calibration=False)
    return knobs


def missing_tool(knobs: Knobs, name: str) -> str:
    hint = "scripts/install-oha.sh" if name == "oha" else "make bootstrap"
    why = next((f"{knob}={name}" for knob, value in
                (("TOOL", knobs.tool), ("TLS_TOOL", knobs.tls_tool))
                if value == name), "warm-up and peak runs")  # fmt: skip
    return (f"tools: load tool {name} not found on PATH (needed for {why}); install it "
            f"with {hint}; nothing was built, started or measured")  # fmt: skip


def fronted(runner, kind: str, manifests: dict[str, Manifest], folder: Path):
    """FRONT=nginx|apache: every stack is started behind that TLS front; FRONT=self:
    every stack serves TLS itself ([self_tls])."""
    if kind == "none":
        return runner
    refusal = front.refusal(kind, list(manifests.values()))
    if refusal:
        raise KnobError(refusal)
    # The front's rendered config, pid and temp files, and the run's
    # certificate, live in the results folder next to the numbers.
    return front.wrap(runner, kind, folder / "front", folder / "tls")
