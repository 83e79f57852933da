"""A measurement's record, built from one load-tool run and judged: other load on the
pinned cores, the verdict, steadiness; and the record of an instance's re-check."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from loadtest.bench import plan
from loadtest.bench.context import RunContext
from loadtest.bench.plan import Case
from loadtest.bench.provenance import runtime_ran
from loadtest.core.change import drifted, window_spread
from loadtest.core.knobs import Knobs
from loadtest.core.stats import bootstrap_ci
from loadtest.core.verdict import (
    NOISY_FOREIGN_PCT,
    Figures,
    judge,
    reconnects,
    stalled_windows,
    uneven,
)
from loadtest.measure import steady
from loadtest.measure.metrics import SAMPLE_INTERVAL_S
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.base import LoadSpec
from loadtest.measure.tools.group import client_load
from loadtest.runners import calibration
from loadtest.runners.engine import LOCAL
from loadtest.runners.front import tls_front


@dataclass
class Ran:
    """What one load-tool run gave: the record of a measurement is built from it."""

    spec: LoadSpec
    result: object  # the tool's LoadResult
    usage: object  # the server's and the cores' CPU (UsageSampler)
    started_at: str
    fairness: dict | None = None  # how evenly its connections were served (measure/fairness.py)


@dataclass(frozen=True)
class Offered:
    """The load a case offered: closed loop (no rate), a rate, or a fraction of the peak."""

    rate: float | None = None
    fraction: float | None = None


def measurement_record(
    context: RunContext, case: Case, server, ran: Ran, offered: Offered, seq: int, extra: dict
) -> dict:
    """The "measurement" record of one case; `extra` holds its response sizes, TTFB,
    warm-up and sustainable-rate fields. The record keeps a run the server did not
    survive, marked failed: it measured the crash, not the stack."""
    k = context.knobs
    spec, result, usage = ran.spec, ran.result, ran.usage
    cpus = plan.server_cpus_for(k, case.cores)
    alive = extra.pop("server_alive_after")
    share, bound, cores = client_load(get_tool(case.tool), spec, result)
    ok = result.ok and result.requests > 0 and alive
    if not alive:
        result.problem = "; ".join(
            p for p in ("server exited during the case", result.problem) if p
        )
    tool_used = result.tool_cpu_s / result.wall_s if result.wall_s else 0
    foreign = foreign_load(usage, tool_used, k, cpus)
    # Only ab may run without keep-alive (a profile's `keepalive`); the others always keep it.
    keepalive = k.keepalive if case.tool == "ab" else True
    manifest = context.manifests.get(case.stack)
    record = {
        "kind": "measurement",
        "seq": seq,
        "run_id": context.run_id,
        "key": case.key,
        "status": "ok" if ok else "failed",
        "problem": result.problem,
        "stack": case.stack,
        "display_name": context.display_name(case.stack),
        # The runtime version that ran (None for the ceiling): run.json has the details.
        "runtime": runtime_ran(context.run_info, manifest),
        "ceiling": case.stack == calibration.NAME,
        # The ceiling runs natively, or in a container on another host (SERVER_HOST).
        "runner": "native" if case.stack == calibration.NAME and not k.server_host else k.runner,
        # Who terminated TLS: a front, "self" (the stack), "none" (plain HTTP; the ceiling).
        "front": tls_front(k.front, manifest),
        # Where the load tool ran: "host" or "loadgen-container" (a Docker run).
        "client": context.executor.where,
        # The hosts of the server and of the load (docs/remote.md); "local" = this machine.
        "server_host": getattr(server, "engine", LOCAL).label,
        "client_hosts": list(context.client_hosts),
        "scenario": case.scenario,
        "path": case.path,
        "connections": case.connections,
        "tool": case.tool,
        "phase": case.phase,
        "rate_spec": case.rate,
        "rate": offered.rate,
        "rate_fraction": offered.fraction,
        "repetition": case.repetition,
        "cpu_quota": case.quota,
        "server_cores": len(cpus),
        # Share of the server cores the quota allows (1 = uncapped).
        "cpu_share": round(case.quota / len(cpus), 4) if case.quota is not None else 1.0,
        # Server and load tool on the same cores (e.g. 2 server cores on a 2-core host).
        "shared_cores": bool(set(cpus) & set(k.client_cpus)),
        "server_memory": k.server_memory or None,
        "server_cpus": list(cpus),
        "client_cpus": list(k.client_cpus),
        "threads": k.threads if case.tool in ("wrk", "h2load") else None,
        "headers": dict(case.headers),
        "duration_s": k.duration,
        "keepalive": keepalive,
        "started_at": ran.started_at,
        "result": result.to_dict(),
        "server": usage.to_dict(),
        "tool_cpu_share": round(share, 4),
        "tool_cores": cores,
        "priority": context.priority,
        "client_bound": bound,
        # CPU used on the pinned cores by anything but the server and the tool.
        "foreign_load_pct": foreign,
        "noisy": any(v is not None and v > NOISY_FOREIGN_PCT for v in foreign.values()),
        # How evenly the server served the connections, and whether it kept them
        # (None where unread), with the verdicts on both.
        "fairness": ran.fairness,
        "uneven": uneven(ran.fairness),
        "reconnects": reconnects(ran.fairness, keepalive),
        "response": extra.pop("response"),
        "server_alive_after": alive,
        **extra,
    }
    record.update(limits(record, offered.fraction is not None or offered.rate is not None))
    return record


def recheck_record(
    run_id: str, first: dict, case: Case, ran: Ran, ceiling_changes: list[float]
) -> dict:
    """The instance's first case measured again at its end, beside its first figure:
    DRIFTED when the two differ by more than the windows' spread and the host's own
    movement (`ceiling_changes`, the ceiling's re-checks so far) explain."""
    again = ran.result.rps if ran.result.ok else 0.0
    first_rps = first["result"]["rps"]
    rerun = {"result": {"rps": again}, "server": ran.usage.to_dict()}
    windows = steady.window_rates(first_rps, first["server"].get("loopback_bytes_per_s") or [])
    return {
        "kind": "recheck",
        "run_id": run_id,
        "stack": case.stack,
        "repetition": case.repetition,
        "cpu_quota": case.quota,
        "server_cores": first["server_cores"],
        "scenario": case.scenario,
        "connections": case.connections,
        "tool": case.tool,
        "first_seq": first["seq"],
        "first_rps": first_rps,
        "again_rps": round(again, 1),
        "change": round(again / first_rps - 1, 4) if first_rps else None,
        "first_interval": window_interval(first),
        "again_interval": window_interval(rerun),
        "drifted": drifted(first_rps, again, window_spread(windows), ceiling_changes),
        "started_at": ran.started_at,
        "problem": ran.result.problem,
    }


def window_interval(record: dict) -> list[float] | None:
    """The 95% interval of one run's rate over its quarter-second windows (report/samples)."""
    loopback = record["server"].get("loopback_bytes_per_s") or []
    samples = steady.window_rates(record["result"]["rps"], loopback)
    interval = bootstrap_ci(samples, statistic=statistics.fmean)
    return [round(interval[0], 1), round(interval[1], 1)] if interval else None


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


def stalls(rates: list[float]) -> int:
    """Windows with no traffic between the first and the last that carried load, the
    partial window at each end left out (measure/steady.active_span)."""
    start, end = steady.active_span(rates)
    return stalled_windows(rates, start + 1, end - 1)


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
        stalled_windows=stalls(usage.get("loopback_bytes_per_s") or []),
        window_s=SAMPLE_INTERVAL_S,
    )
    unsettled = record.get("warmup_steady") is False
    return {
        **judge(figures).to_dict(),
        "drift": usage.get("drift"),
        "drift_t": usage.get("drift_t"),
        "not_steady": steady.not_steady(usage.get("drift"), usage.get("drift_t")) or unsettled,
    }
