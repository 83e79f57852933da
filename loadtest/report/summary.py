"""Tidy summary rows from results.jsonl: one row per stack x scenario x connections
(x tool, rate and CPU quota when a run varies them), with the statistics over
the repetitions."""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path

from loadtest.core.change import central, central_interval, two_states_text
from loadtest.core.stats import bootstrap_ci, summarize
from loadtest.measure.tools.base import ERROR_KINDS, PERCENTILES, latency_key
from loadtest.report.flags import (
    FLAGS,
    drifted_instances,
    instance_key,
    jit_unread,
    record_flags,
)
from loadtest.report.samples import ROUNDS, figure_statistic, rps_samples

LATENCY_KEYS = ["mean", "stdev", *[latency_key(p) for p in PERCENTILES], "max"]
# Time to first byte over fresh connections (loadtest/ttfb.py): medians over runs.
TTFB_KEYS = [
    "ttfb_p50_ms", "ttfb_p90_ms", "ttfb_p99_ms", "ttfb_mean_ms",
    "ttfb_connect_p50_ms", "ttfb_handshake_p50_ms", "ttfb_wait_p50_ms",
    "ttfb_connect_mean_ms", "ttfb_handshake_mean_ms", "ttfb_wait_mean_ms",
]  # fmt: skip

# RATE=slo (core/slo.py): the sustainable rate; medians over rounds that found one.
SLO_COLUMNS = ["slo_rps", "slo_percentile_ms", "slo_objective_ms", "slo_share_of_peak",
               "slo_reason"]  # fmt: skip

# How aggregate() turns a case's rounds into the summary.csv columns whose rule a page names
# (the table's note, render.py TABLE_COLUMNS; a committed run's "summary.csv only" figure,
# run_rounds.py), said once here: each is the median of the rounds, or as NOT_MEDIAN says.
MEDIAN = "the median of the rounds"
HIGHEST = "the highest of the rounds"
ONE_RESPONSE = "one response, read before the load"
NOT_MEDIAN = {
    "latency_max_ms": HIGHEST,
    "rss_peak_mb": HIGHEST,
    "errors_total": "the sum over every round, failed ones included",
    "error_rate": "the errors of every round over the requests every round attempted, "
    "failed ones included",
    "header_bytes": ONE_RESPONSE,
    "body_bytes": ONE_RESPONSE,
}


def aggregation(column: str) -> str:
    """The rule of a summary.csv column whose rule a page names (see NOT_MEDIAN)."""
    return NOT_MEDIAN.get(column, MEDIAN)


COLUMNS = [
    "stack", "display_name", "ceiling", "scenario", "connections", "tool", "phase",
    "rate_spec", "rate", "cpu_quota", "server_cores", "cpu_share", "shared_cores", "protocol",
    "runs", "failed_runs",
    "rps_median", "rps_geomean", "rps_mid_mean", "rps_cv", "rps_min", "rps_max",
    "rps_ci_low", "rps_ci_high", "rps_ci_source", "rps_ci_note", "rps_per_cpu_s",
    "rss_per_1k_conn_mb",
    *[f"latency_{k.replace('.', '_')}_ms" for k in LATENCY_KEYS],
    "latency_p99_min_ms", "latency_p99_max_ms",
    "requests", *[f"errors_{kind}" for kind in ERROR_KINDS], "errors_total", "error_rate",
    "mb_per_s", "bytes_per_response", "header_bytes", "body_bytes", "server_header",
    "server_cpu_mean_pct", "server_cpu_peak_pct", "rss_peak_mb",
    "tool_cpu_pct", "client_bound_runs", "noisy_runs",
    "verdict", "cause", "verdict_runs", "server_cpu_active_pct", "little_ratio",
    "not_steady_runs", "uneven_runs", "reconnect_runs", "cold_runs", "drifted_runs",
    "stalled_runs", "two_states", "drift", "warmup_s", "jit_last_window_ms", "ceiling_rps",
    "share_of_ceiling", "ceiling_invalid",
    *TTFB_KEYS, *SLO_COLUMNS, "problems",
]  # fmt: skip


def group_key(record: dict) -> tuple:
    return (
        record["stack"], record["scenario"], record["connections"], record["tool"],
        record.get("phase", "measure"), record.get("rate_spec", ""), record.get("cpu_quota"),
        record.get("server_cores"),
    )  # fmt: skip


def _median(values):
    data = [v for v in values if v is not None]
    return statistics.median(data) if data else None


def _max(values):
    data = [v for v in values if v is not None]
    return max(data) if data else None


def _min(values):
    data = [v for v in values if v is not None]
    return min(data) if data else None


def _round(value, digits=3):
    return None if value is None else round(value, digits)


def measurement_rows(records: list[dict], whole_run: list[dict] | None = None) -> list[dict]:
    """One row per group of `records`; DRIFTED judged over `whole_run` (every record of
    the run, also the rounds FLAGGED=leave-out took out of `records`)."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for record in records:
        if record.get("kind") == "measurement":
            groups[group_key(record)].append(record)
    drifted = drifted_instances(whole_run or records)
    rows = [aggregate(group, drifted) for group in groups.values()]
    attach_ceiling(rows)
    rows.sort(key=sort_key)
    return rows


def sort_key(row: dict):
    """Closed-loop rows first, then by quota, connections, rate; fastest stack first."""
    return (
        row["scenario"], bool(row["rate_spec"]), row["tool"], row["server_cores"] or 0,
        row["cpu_quota"] or 0, row["connections"], row["rate"] or 0, row["ceiling"], -(row["rps_median"] or 0),
    )  # fmt: skip


def _protocol(records: list[dict]) -> str:
    """The protocol the tool negotiated (h2load: h2 or http/1.1), where it says."""
    for record in records:
        protocol = record["result"].get("details", {}).get("protocol")
        if protocol:
            return protocol
    return ""


def aggregate(group: list[dict], drifted: dict[tuple, dict] | None = None) -> dict:
    first = group[0]
    ok = [r for r in group if r.get("status") == "ok"]
    results = [r["result"] for r in ok]
    rps = summarize(r["rps"] for r in results)
    row = {
        "stack": first["stack"],
        "display_name": first.get("display_name", first["stack"]),
        "ceiling": bool(first.get("ceiling")),
        "scenario": first["scenario"],
        "connections": first["connections"],
        "tool": first["tool"],
        "phase": first.get("phase", "measure"),
        "rate_spec": first.get("rate_spec", ""),
        "rate": _round(_median(r.get("rate") for r in ok), 0),
        "cpu_quota": first.get("cpu_quota"),
        "server_cores": first.get("server_cores"),
        "cpu_share": first.get("cpu_share"),
        "shared_cores": bool(first.get("shared_cores")),
        "protocol": _protocol(ok),
        "runs": len(ok),
        "failed_runs": len(group) - len(ok),
        "rps_median": _round(rps.median, 1),
        "rps_mid_mean": _round(rps.mid_mean, 1),
        "rps_cv": _round(rps.cv, 4),
        "rps_min": _round(rps.min, 1),
        "rps_max": _round(rps.max, 1),
    }
    for key in LATENCY_KEYS:
        values = [r["latency_ms"].get(key) for r in results]
        value = _max(values) if key == "max" else _median(values)
        row[f"latency_{key.replace('.', '_')}_ms"] = _round(value, 3)
    # The p99's spread over the rounds, beside its median: a tail moves more than a rate.
    p99s = [r["latency_ms"].get("p99") for r in results]
    spread = len(results) > 1
    row["latency_p99_min_ms"] = _round(_min(p99s), 3) if spread else None
    row["latency_p99_max_ms"] = _round(_max(p99s), 3) if spread else None
    errors = {kind: sum(r["result"]["errors"].get(kind, 0) for r in group) for kind in ERROR_KINDS}
    requests = sum(r["result"]["requests"] for r in group)
    total_errors = sum(errors.values())
    row.update({f"errors_{kind}": n for kind, n in errors.items()})
    row["requests"] = requests
    row["errors_total"] = total_errors
    # Errors per attempted request (non-2xx responses are among the requests).
    attempted = requests + total_errors - errors["non2xx"]
    row["error_rate"] = _round(total_errors / attempted, 6) if attempted else None
    row["mb_per_s"] = _round(_median(r["bytes_per_s"] / 1e6 for r in results), 3)
    row["bytes_per_response"] = _round(
        _median(r["bytes_total"] / r["requests"] for r in results if r["requests"]), 1
    )
    response = next((r.get("response") for r in group if r.get("response")), None) or {}
    row["header_bytes"] = response.get("header_bytes")
    row["body_bytes"] = response.get("body_bytes")
    row["server_header"] = response.get("server_header") or ""
    row["server_cpu_mean_pct"] = _round(_median(r["server"].get("cpu_mean_pct") for r in ok), 1)
    row["server_cpu_peak_pct"] = _round(_max(r["server"].get("cpu_peak_pct") for r in ok), 1)
    rss = _max(r["server"].get("rss_peak_bytes") for r in ok)
    row["rss_peak_mb"] = _round(rss / 2**20, 1) if rss else None
    row["tool_cpu_pct"] = _round(_median(r.get("tool_cpu_share", 0) * 100 for r in ok), 1)
    row["client_bound_runs"] = sum(1 for r in ok if r.get("client_bound"))
    row["noisy_runs"] = sum(1 for r in ok if r.get("noisy"))
    row.update(verdict_columns(ok))
    row["server_cpu_active_pct"] = _round(_median(r["server"].get("cpu_active_pct") for r in ok), 1)
    row["little_ratio"] = _round(_median(r.get("little_ratio") for r in ok), 3)
    for flag in FLAGS:
        row[flag.column] = sum(1 for r in ok if flag.applies(r, drifted or {}))
    row["_jit_unread_runs"] = sum(1 for r in ok if jit_unread(r))
    row["jit_last_window_ms"] = _max(r.get("jit_last_window_ms") for r in ok)
    row["drift"] = _round(_median(r.get("drift") for r in ok), 4)
    row["warmup_s"] = _round(_max(r.get("warmup_s") for r in ok), 1)
    problems = sorted({r.get("problem") for r in group if r.get("problem")})
    row["problems"] = "; ".join(problems)[:300]
    row["ceiling_rps"] = None
    row["share_of_ceiling"] = None
    row["ceiling_invalid"] = False
    for key in TTFB_KEYS:  # measured apart from the load: also after a failed load
        row[key] = _round(_median(r.get(key) for r in group), 3)
    row.update(slo_columns(ok))
    row.update(interval_columns(ok, row["rps_median"], drifted or {}))
    row.update(efficiency_columns(row))
    return row


def interval_columns(ok: list[dict], figure: float | None, drifted: dict) -> dict:
    """The figure a comparison uses and its 95% interval. Over rounds (REPEAT >= 2): their
    geometric mean (`rps_geomean`), which the leaderboard ranks by and the gap tests, and
    Student's t on their logarithms (core/change.py central_interval). Over the windows of
    one run: a bootstrap of their mean (report/samples.py), which are not independent and
    give a narrower interval; one that leaves out the figure says so (`rps_ci_note`).
    `_rps_samples` and each sample's flags (`_rps_flags`) stay in the row for the
    leaderboard's test. Rounds in two states give both (`two_states`), from the same
    samples."""
    samples, source = rps_samples(ok)
    flags = ([record_flags(r, drifted) for r in ok] if len(samples) == len(ok)
             else [record_flags(ok[0], drifted)] * len(samples) if ok else [])  # fmt: skip
    rounds = source == ROUNDS
    if rounds:
        interval = central_interval(samples)
    else:
        interval = bootstrap_ci(samples, statistic=figure_statistic(source))
    note = ""
    if interval and not rounds and figure is not None and not interval[0] <= figure <= interval[1]:
        note = (f"the interval of {len(samples)} {source} leaves out the figure "
                f"{figure:,.0f}: the samples are too few or too skewed to bound it")  # fmt: skip
    geomean = central(samples) if rounds and len(samples) >= 2 else None
    return {
        "rps_geomean": _round(geomean, 1),
        "rps_ci_low": _round(interval[0], 1) if interval else None,
        "rps_ci_high": _round(interval[1], 1) if interval else None,
        "rps_ci_source": source if interval else "",
        "rps_ci_note": note,
        "_rps_samples": samples,
        "_rps_flags": flags,
        "two_states": two_states_text(samples) if rounds else "",
    }


def efficiency_columns(row: dict) -> dict:
    """Requests per CPU-second of the server (median req/s over median CPU cores used)
    and peak RSS per 1,000 connections."""
    cores_used = (row["server_cpu_mean_pct"] or 0) / 100
    rps = row["rps_median"]
    rss = row["rss_peak_mb"]
    return {
        "rps_per_cpu_s": _round(rps / cores_used, 1) if rps and cores_used > 0 else None,
        "rss_per_1k_conn_mb": _round(rss / row["connections"] * 1000, 1) if rss else None,
    }


def slo_columns(ok: list[dict]) -> dict:
    """The sustainable rate of one row. Aggregation: medians over the rounds whose
    search found a rate (none found in any round: empty); the most frequent reason."""
    found = [r for r in ok if r.get("slo_rps")]
    searched = [r for r in ok if "slo_rps" in r]
    if not searched:
        return dict.fromkeys(SLO_COLUMNS)
    # Why none was found, or what bounds the one found (a load tool short of CPU).
    reasons = [r.get("slo_reason", "") for r in (found or searched)]
    return {
        "slo_rps": _round(_median(r["slo_rps"] for r in found), 1),
        "slo_percentile_ms": _round(_median(r.get("slo_percentile_ms") for r in found), 3),
        "slo_objective_ms": searched[0].get("slo_objective_ms"),
        "slo_share_of_peak": _round(_median(r.get("slo_share_of_peak") for r in found), 4),
        "slo_reason": max(dict.fromkeys(reasons), key=reasons.count),
    }


def attach_ceiling(rows: list[dict]) -> None:
    """Each stack row gets the ceiling measured with the same scenario, connections and tool."""
    # The wrk peak runs of the latency profile are closed-loop wrk runs too.
    ceilings = {
        (r["scenario"], r["connections"], r["tool"], r["rate_spec"]): r["rps_median"]
        for r in rows
        if r["ceiling"] and not r["rate_spec"]
    }
    for row in rows:
        if row["rate_spec"]:
            continue  # open loop: the offered rate, not the server, sets requests/s
        ceiling = ceilings.get((row["scenario"], row["connections"], row["tool"], row["rate_spec"]))
        row["ceiling_rps"] = ceiling
        if ceiling and row["rps_median"] is not None:
            row["share_of_ceiling"] = round(row["rps_median"] / ceiling, 4)
            # A stack faster than the ceiling: the ceiling is no ceiling for this case.
            row["ceiling_invalid"] = not row["ceiling"] and row["rps_median"] > ceiling


def verdict_columns(ok: list[dict]) -> dict:
    """What limited the runs of one row. Aggregation: the verdict most runs had
    (ties: the least flattering, neither before client-bound before server-bound),
    its most frequent cause, and the count per verdict when the runs disagree."""
    verdicts = [r.get("verdict") for r in ok if r.get("verdict")]
    if not verdicts:
        return {"verdict": None, "cause": "", "verdict_runs": ""}
    order = ("neither", "client-bound", "server-bound")
    counts = {v: verdicts.count(v) for v in order if v in verdicts}
    verdict = max(counts, key=lambda v: (counts[v], -order.index(v)))
    causes = [r.get("cause", "") for r in ok if r.get("verdict") == verdict and r.get("cause")]
    # A tie goes to the cause seen first: a set's order changes with each process's hash seed.
    cause = max(dict.fromkeys(causes), key=causes.count) if causes else ""
    mixed = ", ".join(f"{v} {n}" for v, n in counts.items()) if len(counts) > 1 else ""
    return {"verdict": verdict, "cause": cause, "verdict_runs": mixed}


def stack_outcomes(records: list[dict]) -> dict[str, dict]:
    """The latest verify/failure/stop news per stack."""
    outcomes: dict[str, dict] = {}
    drifted = drifted_instances(records)  # judged over the run, not as the bench went
    for record in records:
        if record.get("kind") == "recheck" and drifted.get(instance_key(record)) is record:
            outcomes.setdefault(record["stack"], {"failures": [], "unclean_stops": 0}).setdefault(
                "drifted", []).append(recheck_text(record))  # fmt: skip
        if record.get("kind") != "stack":
            continue
        entry = outcomes.setdefault(record["stack"], {"failures": [], "unclean_stops": 0})
        if record["status"] == "failed":
            entry["failures"].append(f"{record['step']}: {record['message']}")
            entry["failure_output"] = record.get("output", "")
        elif record["status"] == "skipped":
            entry["skipped"] = record["message"]
        elif record["step"] == "verify":
            entry["verified"] = record["message"]
            entry["observed"] = record.get("observed", {})
        elif record["status"] == "unclean":
            entry["unclean_stops"] += 1
            entry["unclean_message"] = record["message"]
    return outcomes


def recheck_text(record: dict) -> str:
    """A DRIFTED re-check in words, with both figures."""
    return (f"DRIFTED (round {record['repetition']}): {record['scenario']} at "
            f"{record['connections']} connections served {record['first_rps']:,.0f} req/s as the "
            f"instance's first case and {record['again_rps']:,.0f} when measured again after its "
            f"last ({record['change']:+.0%}); every figure of that instance is flagged")  # fmt: skip


def write_csv(rows: list[dict], path: Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in COLUMNS})
