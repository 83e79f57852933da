"""Lab 5's report from its data (bench/coordinated_omission.py): a chart of each run's
latency percentiles and lab5.md, the table and what the numbers say."""

from __future__ import annotations

import statistics
from pathlib import Path

from loadtest.bench.coordinated_omission import ROUND_SUFFIX, ms, ordered_runs
from loadtest.report.png import plt

REPORT_FILE = "lab5.md"
CHART_FILE = "lab5-latency.png"


def write_report(data: dict, folder: Path) -> Path:
    """The chart and lab5.md into `folder`; the report's path."""
    chart = lab5_chart(data, folder / CHART_FILE)
    report = folder / REPORT_FILE
    report.write_text(lab5_markdown(data, chart))
    return report


def lab5_chart(data: dict, path: Path) -> Path | None:
    """p50/p90/p99/p99.9 of each run as grouped bars on a log scale."""
    marks = ["p50", "p90", "p99", "p99.9"]
    # One bar group per measurement; a measurement repeated in rounds shows its medians.
    groups: dict[str, list[dict]] = {}
    for key, run in ordered_runs(data["runs"]):
        if run.get("latency_ms"):
            groups.setdefault(ROUND_SUFFIX.sub("", key), []).append(run)
    if not groups:
        return None
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(groups)
    for i, runs in enumerate(groups.values()):
        values = [
            max(statistics.median(r["latency_ms"].get(m) or 0 for r in runs), 0.01) for m in marks
        ]
        xs = [j + (i - (len(groups) - 1) / 2) * width for j in range(len(marks))]
        label = runs[0]["label"].split(", round")[0]
        ax.bar(
            xs, values, width, label=label + (f" (median of {len(runs)})" if len(runs) > 1 else "")
        )
    ax.set_yscale("log")
    ax.set_xticks(range(len(marks)), marks)
    ax.set_ylabel("latency (ms, log scale)")
    s = data["settings"]
    ax.set_title(
        f"{data['stack']['display_name']} paused {s['stall_for']:g} s during "
        f"{s['duration']:g} s runs ({s['rate']:g} req/s open loop, {s['connections']} connections)",
        fontsize=10,
    )
    ax.axhline(s["stall_for"] * 1000, color="black", linestyle=":", linewidth=1)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def lab5_markdown(data: dict, chart: Path | None) -> str:
    s, summary = data["settings"], data["summary"]
    lines = [
        "# Lab 5: coordinated omission",
        "",
        f"Stack **{data['stack']['display_name']}** (`{data['stack']['name']}`), server cores "
        f"{s['server_cpus']}, client cores {s['client_cpus']}. Each run lasts {s['duration']:g} s;"
        f" in the stalled runs the server's whole process group is stopped with SIGSTOP "
        f"{s['stall_at']:g} s in and resumed with SIGCONT {s['stall_for']:g} s later. oha "
        f"offers {s['rate']:g} requests/s over {s['connections']} connections; wrk keeps "
        f"{s['connections']} connections busy. Tools: {data['tools']['oha']}, "
        f"{data['tools']['wrk']}.",
        "",
        "| run | responses | req/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | stall |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for _, run in ordered_runs(data["runs"]):
        lat = run.get("latency_ms") or {}
        stall = run.get("stall")
        stall_text = f"{stall['length_s']:.2f} s at {stall['started_s']:.1f} s" if stall else "none"
        lines.append(
            f"| {run['label']} | {run['requests']:,} | {run['rps']:,.0f} | {ms(lat.get('p50'))} | "
            f"{ms(lat.get('p90'))} | {ms(lat.get('p99'))} | {ms(lat.get('p99.9'))} | "
            f"{ms(lat.get('max'))} | {stall_text} |"
        )
    lines += ["", "## What the numbers say", ""]
    if summary.get("corrected_over_uncorrected"):
        rounds = len(summary["p99_corrected_rounds_ms"])
        lines.append(
            f"- With the stall, oha's corrected p99 is {ms(summary['p99_corrected_ms'])} ms and "
            f"its uncorrected p99 {ms(summary['p99_uncorrected_ms'])} ms"
            + (f" (medians of {rounds} rounds)" if rounds > 1 else "")
            + ": "
            f"{summary['corrected_over_uncorrected']:g} times apart, for the same stall. "
            "Measured from when each request was due, the requests the stall delayed carry the "
            "wait; measured from when they were finally sent, they look fast."
        )
    if summary.get("p99_wrk_ms") is not None:
        lines.append(
            f"- wrk reports a p99 of {ms(summary['p99_wrk_ms'])} ms. wrk 4 back-fills: after "
            "the run it adds the latencies that requests due at its average rate would have "
            "seen during each long response, so its tail lands near the corrected one. Its "
            "load still paused: no request was sent while the server stood still."
        )
    if summary.get("wrk_requests_missing") is not None:
        lines.append(
            f"- wrk completed {summary['wrk_requests_missing']:,} fewer requests than its "
            f"no-stall baseline. A {s['stall_for']:g} s pause at the baseline's "
            f"{summary['wrk_baseline_rps']:,} requests/s accounts for about "
            f"{summary['wrk_requests_missing_stall_only']:,} of them"
            + (
                " (the rest is this host's run-to-run noise)"
                if summary["wrk_requests_missing"] > summary["wrk_requests_missing_stall_only"]
                else " (run-to-run noise hides part of it)"
            )
            + ": the closed loop waited with the server instead of receiving the requests "
            "that users would have kept sending."
        )
    if chart:
        lines += ["", f"![latency percentiles per run]({chart.name})"]
    lines += ["", "What to look for and the questions: docs/labs/5-coordinated-omission.md.", ""]
    return "\n".join(lines)
