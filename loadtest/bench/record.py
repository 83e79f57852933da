"""Judging one measurement from its record: other load on the pinned cores, the verdict, steadiness."""

from __future__ import annotations

from loadtest.core.knobs import Knobs
from loadtest.core.verdict import Figures, judge, stalled_windows
from loadtest.measure import steady
from loadtest.measure.metrics import SAMPLE_INTERVAL_S


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
