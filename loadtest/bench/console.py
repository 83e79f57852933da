"""What a bench run prints: the plan before it starts, one line per measurement."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from loadtest.bench import plan
from loadtest.bench.plan import Instance
from loadtest.core.knobs import Knobs
from loadtest.runners import front


@dataclass(frozen=True)
class PlanContext:
    """What the plan's printout needs besides the knobs."""

    contracts: dict[str, str]
    primed: dict[str, float]
    priority: int
    folder: Path
    unavailable: dict[str, str] = field(default_factory=dict)  # stack -> why not here
    dry_run: bool = False  # the folder is only an example: a run names it by its start


def print_plan(
    console: Console, k: Knobs, stacks: list[str], todo: list[Instance], run: PlanContext
) -> None:
    """What the run will do and how long it should take, before anything starts."""
    cases = sum(len(i.cases) for i in todo)
    estimate = plan.estimate_seconds(k, todo, run.primed)
    console.print(f"[bold]serverlab bench[/] profile [cyan]{k.profile}[/] ({k.description})")
    quota = ", ".join(f"{q:g}" for q in k.server_cpu_quota) or "none"
    rate = ", ".join(k.rate) or "closed loop"
    console.print(
        f"  stacks: {', '.join(stacks) or 'none'}"
        + (" + nginx ceiling" if plan.measures_ceiling(k) else "")
        + (f" (on {k.server_host})" if plan.measures_ceiling(k) and k.server_host else "")
        + f"\n  scenarios: {', '.join(k.scenarios)}; connections: "
        f"{', '.join(map(str, k.connections))}; tool: {k.tool} ({rate})"
        f"\n  duration {k.duration:g} s, warm-up {k.warmup:g} s, {k.repeat} round(s), "
        f"seed {k.seed}; server cores {cores_text(k.server_cpus)}, client cores "
        f"{cores_text(k.client_cpus)}; CPU quota {quota}; memory {k.server_memory or 'no limit'}"
        f"; runner {k.runner}; priority {run.priority or 'normal'}"
        + (f"; TLS front {k.front} ({front.version(k.front)})" if k.front != "none" else "")
    )
    for note in plan.contract_notes(k, stacks, run.contracts):
        console.print(f"  {escape(note)}")
    extra = []
    if k.tool in ("ab", "h2load") and k.requests:
        counts = ", ".join(f"{s}={n}" for s, n in k.requests.items())
        extra.append(f"requests per run (instead of the duration): {counts}")
    if k.tls_tool:
        extra.append(f"stacks served over HTTPS measured with {k.tls_tool} (TLS_TOOL)")
    if k.server_cores:
        extra.append(f"server cores: {', '.join(map(str, k.server_cores))} "
                     "(each quota is a share of them)")  # fmt: skip
    if k.ttfb:
        extra.append(f"TTFB: {k.ttfb} fresh connections per case")
    if k.server_host or k.client_hosts:
        extra.append(f"stacks on {k.server_host or 'this machine'}, load from "
                     f"{', '.join(k.client_hosts) or 'this machine'} (docs/remote.md)")  # fmt: skip
    if extra:
        console.print("  " + "; ".join(extra))
    console.print(
        f"  plan: {cases} measurements in {len(todo)} server starts; "
        f"estimated [bold]{minutes(estimate)}[/] (builds not included)"
    )
    if run.unavailable:
        skipped = "; ".join(f"{name} ({why})" for name, why in run.unavailable.items())
        console.print(f"  [yellow]not in the plan, cannot run here:[/] {escape(skipped)}")
    if run.dry_run:
        named = run.folder.name.split("-", 2)[-1]  # after the start's date and time
        console.print(f"  results: {escape(str(run.folder.parent))}/<start time>-{named} "
                      "(a dry run writes nothing)")  # fmt: skip
    else:
        console.print(f"  results: {escape(str(run.folder))}")


def status_line(record: dict, position: str, sweep: bool) -> str:
    """One measurement's console line: `position` is "[done/total]", `sweep` a SERVER_CORES run."""
    result = record["result"]
    head = (
        f"{position} {record['stack']:<16} {record['scenario']:<7} "
        f"c={record['connections']:<5} {record['tool']}"
        + (f"@{record['rate']:g}/s" if record["rate"] else "")
        + (f" q={record['cpu_quota']:g}" if record["cpu_quota"] is not None else "")
        + (f" {record['server_cores']}c" if sweep else "")
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
    if record.get("jit_cold"):
        flag += (f"  [bold magenta]COLD[/] (its JIT spent {record['jit_last_window_ms']:g} ms "
                 "of the warm-up's last second compiling)")  # fmt: skip
    if record["shared_cores"]:
        flag += "  [bold yellow]SHARED CORES[/] (server and tool on the same cores)"
    if record.get("uneven"):
        fair = record["fairness"]
        flag += (
            f"  [bold magenta]UNEVEN[/] (per half-second, connections got "
            f"{fair['min_share']:.2f}x to {fair['max_share']:.1f}x an even split of the "
            "requests: the latency tail is connections left waiting)"
        )
    if record.get("reconnects"):
        renewed = record["fairness"]["renewed_share"]
        flag += (
            f"  [bold magenta]RECONNECTS[/] (the server closed kept-alive connections: "
            f"{renewed:.0%} of them new every half-second; the figure includes TCP handshakes)"
        )
    if record["noisy"]:
        foreign = record["foreign_load_pct"]
        flag += (
            f"  [bold magenta]NOISY[/] (other load on server cores "
            f"{pct(foreign['server_cores'])}, client cores {pct(foreign['client_cores'])})"
        )
    color = "yellow" if errors else "green"
    return f"[{color}]✓[/] {escape(head)}  " + "  ".join(p for p in parts if p) + flag


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


def rates(curve: list[float]) -> str:
    return ", ".join(f"{r:,.0f}" for r in curve)


def pct(value) -> str:
    return "-" if value is None else f"{value:.0f}%"


def cores_text(cpus: tuple[int, ...]) -> str:
    return ",".join(map(str, cpus))


def minutes(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"
