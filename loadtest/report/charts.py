"""PNG charts (matplotlib, Agg backend) from the summary rows and the records.

The figures the interactive charts also draw (chart_model) are drawn here from
the same model; the others (distributions, warm-up, quotas, resources) only here.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

from matplotlib.ticker import FuncFormatter, MaxNLocator

from loadtest.bench.warmup import warmup_tool
from loadtest.core.verdict import STEADY_MIN_WINDOWS, STEADY_TOLERANCE
from loadtest.report.chart_model import (CEILING_STACK, RPS_AXIS, Figure, closed_rows,
                                         ordered_scenarios, rps_point, search_steps,
                                         slo_objective, stack_colors, uncapped)  # fmt: skip
from loadtest.report.png import CEILING_STYLE, plt, save, thousands
from loadtest.report.sweep_charts import config_cdf, rps_vs_quota, rps_vs_share, ttfb_chart


def rps_vs_connections(figure: Figure, path: Path, note: str) -> Path:
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    for line in figure.series:
        x = [p["connections"] for p in line.points]
        points = [rps_point(p) for p in line.points]
        y = [figure for figure, _, _ in points]
        if line.ceiling:
            ax.plot(x, y, marker="s", label=line.name, **CEILING_STYLE)
            continue
        ax.errorbar(x, y, yerr=[[m - lo for m, lo, _ in points], [hi - m for m, _, hi in points]],
                    marker="o", capsize=3, color=line.color, label=line.name)  # fmt: skip
    connections = sorted({r["connections"] for r in figure.rows})
    if len(connections) > 1 and connections[-1] / max(connections[0], 1) >= 10:
        ax.set_xscale("log")
    ax.set_xticks(connections)
    ax.set_xticklabels([str(c) for c in connections], rotation=45 if len(connections) > 8 else 0)
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(FuncFormatter(thousands))
    ax.set_xlabel("concurrent connections")
    ax.set_ylabel(RPS_AXIS)
    ax.set_title(f"Throughput, {figure.scenario}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return save(fig, path, note)


def latency_bars(figure: Figure, path: Path, note: str) -> Path:
    """p95 and p99 at the highest connection level, the lowest p99 first."""
    top = max(r["connections"] for r in figure.rows)
    data = sorted((r for r in figure.rows if r["connections"] == top),
                  key=lambda r: r["latency_p99_ms"])  # fmt: skip
    labels = [r["display_name"] for r in data]
    fig, ax = plt.subplots(figsize=(8.5, 0.45 * len(data) + 1.8))
    y = range(len(data))
    ax.barh([i + 0.2 for i in y], [r["latency_p95_ms"] or 0 for r in data], height=0.4,
            label="p95", color="#4c72b0")  # fmt: skip
    ax.barh([i - 0.2 for i in y], [r["latency_p99_ms"] or 0 for r in data], height=0.4,
            label="p99", color="#dd8452")  # fmt: skip
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("latency (ms)")
    ax.set_title(f"p95 and p99 latency, {figure.scenario}, {top} connections ({data[0]['tool']})")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, path, note)


def latency_cdf(
    records: list[dict], scenario: str, path: Path, note: str, open_loop: bool = False
) -> Path | None:
    """Share of requests answered within t, per stack, at the highest connection level.

    Closed loop: the wrk/ab runs. Open loop: the oha runs at the highest offered
    share of each stack's peak (e.g. 90%), where the tails differ most.
    """
    data = [
        r for r in records
        if r.get("kind") == "measurement" and r.get("status") == "ok" and r["scenario"] == scenario
        and bool(r.get("rate_spec")) == open_loop and r["result"]["latency_curve"]
    ]  # fmt: skip
    data = uncapped(data)
    if not data:
        return None
    if open_loop:
        top_spec = max({r["rate_spec"] for r in data}, key=_rate_order)
        data = [r for r in data if r["rate_spec"] == top_spec]
    top = max(r["connections"] for r in data)
    curves: dict[str, dict] = defaultdict(lambda: defaultdict(list))
    names = {}
    ceilings = set()
    for r in data:
        if r["connections"] != top:
            continue
        names[r["stack"]] = r.get("display_name", r["stack"])
        if r.get("ceiling"):
            ceilings.add(r["stack"])
        for percent, ms in r["result"]["latency_curve"]:
            if ms is not None and ms > 0:
                curves[r["stack"]][percent].append(ms)
    stacks = sorted(curves)
    colors = stack_colors(stacks)
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    for stack in stacks:
        points = sorted((p, statistics.median(v)) for p, v in curves[stack].items())
        style = CEILING_STYLE if stack in ceilings else {"color": colors[stack]}
        ax.plot([ms for _, ms in points], [p for p, _ in points], label=names[stack], **style)
    ax.set_xscale("log")
    ax.set_ylim(0, 100)
    ax.set_xlabel("latency (ms, log scale)")
    ax.set_ylabel("% of requests answered within")
    what = (
        f"oha at {data[0]['rate_spec']}{'' if data[0]['rate_spec'].endswith('%') else '/s'}"
        if open_loop
        else data[0]["tool"]
    )
    ax.set_title(f"Latency distribution, {scenario}, {top} connections ({what}; "
                 "each percentile the median of the rounds)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return save(fig, path, note)


def _rate_order(spec: str) -> float:
    """'90%' and '5000' sort by value; shares of the peak rank above absolute rates,
    the sustainable rate ('slo') last."""
    if spec == "slo":
        return 2e9
    return float(spec[:-1]) + 1e9 if spec.endswith("%") else float(spec)


def open_loop(rows: list[dict], scenario: str, path: Path) -> Path | None:
    data = [r for r in rows if r["scenario"] == scenario and r["rate_spec"] and r["latency_p99_ms"]]
    if not data:
        return None
    stacks = sorted({r["stack"] for r in data})
    colors = stack_colors(stacks)
    levels = sorted({r["connections"] for r in data})
    styles = ["-", ":", "-.", (0, (5, 1))]
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    for stack in stacks:
        for level_index, connections in enumerate(levels):
            points = sorted(
                (r for r in data if r["stack"] == stack and r["connections"] == connections),
                key=lambda r: r["rate"] or 0,
            )
            if not points:
                continue
            label = points[0]["display_name"] + (
                f", {connections} conn." if len(levels) > 1 else ""
            )
            color = "black" if points[0]["ceiling"] else colors[stack]
            ax.plot([p["rate"] for p in points], [p["latency_p99_ms"] for p in points],
                    marker="o", color=color, linestyle=styles[level_index % len(styles)],
                    label=label)  # fmt: skip
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(thousands))
    ax.set_xlabel("offered load (requests/s, constant rate)")
    ax.set_ylabel("p99 latency (ms, log scale)")
    ax.set_title(f"Open-loop p99 latency against offered load, {scenario} (oha)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return save(fig, path, "oha with --latency-correction: free of coordinated omission")


def resources(rows: list[dict], path: Path) -> Path | None:
    data = uncapped(closed_rows(rows))
    if not data:
        return None
    stacks = sorted({r["stack"] for r in data}, key=lambda s: (s == CEILING_STACK, s))
    names = {r["stack"]: r["display_name"] for r in data}
    cpu = {}
    rss = {}
    for stack in stacks:
        mine = [r for r in data if r["stack"] == stack]
        top = max(r["connections"] for r in mine)
        values = [
            r["server_cpu_mean_pct"]
            for r in mine
            if r["connections"] == top and r["server_cpu_mean_pct"] is not None
        ]
        cpu[stack] = statistics.median(values) if values else 0
        rss[stack] = max((r["rss_peak_mb"] or 0) for r in mine)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 0.4 * len(stacks) + 2))
    y = list(range(len(stacks)))
    labels = [names[s] for s in stacks]
    ax1.barh(y, [cpu[s] for s in stacks], color="#4c72b0")
    ax1.set_yticks(y)
    ax1.set_yticklabels(labels, fontsize=8)
    ax1.invert_yaxis()
    ax1.set_xlabel("server CPU % (100 = one core), median over scenarios")
    ax1.set_title("CPU at the highest connection level", fontsize=10)
    ax1.grid(True, axis="x", alpha=0.3)
    ax2.barh(y, [rss[s] for s in stacks], color="#55a868")
    ax2.set_yticks(y)
    ax2.set_yticklabels([])
    ax2.invert_yaxis()
    ax2.set_xlabel("peak RSS of the process tree (MiB)")
    ax2.set_title("Memory, peak over the run", fontsize=10)
    ax2.grid(True, axis="x", alpha=0.3)
    return save(fig, path)


def bytes_per_response(rows: list[dict], path: Path) -> Path | None:
    data = {}
    for r in rows:
        if r["header_bytes"] is None or r["scenario"] not in ("hello", "workday"):
            continue
        data[(r["stack"], r["scenario"])] = (
            r["display_name"],
            r["header_bytes"],
            r["body_bytes"] or 0,
        )
    if not data:
        return None
    keys = sorted(data, key=lambda k: (k[1], data[k][1] + data[k][2]))
    labels = [f"{data[k][0]} ({k[1]})" for k in keys]
    headers = [data[k][1] for k in keys]
    bodies = [data[k][2] for k in keys]
    fig, ax = plt.subplots(figsize=(8.5, 0.35 * len(keys) + 1.8))
    y = list(range(len(keys)))
    ax.barh(y, headers, color="#c44e52", label="headers (status line + headers)")
    ax.barh(y, bodies, left=headers, color="#8c8c8c", label="body")
    for i, (h, b) in enumerate(zip(headers, bodies)):
        ax.text(h + b + 2, i, f"{h} + {b} B", va="center", fontsize=7)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("bytes per response (one real request)")
    ax.set_title("Bytes per response: with tiny bodies, headers dominate")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_xlim(0, max(h + b for h, b in zip(headers, bodies)) * 1.25)
    return save(fig, path)


def warmup_curves(records: list[dict], scenario: str, path: Path) -> Path | None:
    """Requests/s of each warm-up window before the scenario's first case, a line per
    stack (first round): how long each stack took to reach its steady pace."""
    curves: dict[str, list[float]] = {}
    names: dict[str, str] = {}
    for record in records:
        curve = record.get("warmup_curve")
        if record.get("kind") != "measurement" or record["scenario"] != scenario or not curve:
            continue
        if record["stack"] not in curves:
            curves[record["stack"]] = curve
            names[record["stack"]] = record.get("display_name", record["stack"])
    if not curves:
        return None
    colors = stack_colors(list(curves))
    fig, ax = plt.subplots(figsize=(8.5, 4.4))
    for stack, curve in sorted(curves.items()):
        style = CEILING_STYLE if stack == CEILING_STACK else {"color": colors[stack]}
        ax.plot(range(1, len(curve) + 1), curve, marker="o", markersize=3,
                label=names[stack], **style)  # fmt: skip
    ax.set_xlabel("warm-up window (1 s each)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("requests/s")
    ax.yaxis.set_major_formatter(FuncFormatter(thousands))
    tool = warmup_tool({r["tool"] for r in records
                        if r.get("kind") == "measurement" and r["scenario"] == scenario})  # fmt: skip
    ax.set_title(f"warm-up until steady, {scenario}, with {tool} "
                 f"({STEADY_MIN_WINDOWS} windows within {STEADY_TOLERANCE:.0%})")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return save(fig, path, "a JIT (JVM, PyPy) climbs for several windows; others settle in two. "
                "The warm-up tool keeps its connections alive: its rate is not the measuring "
                "tool's")


def efficiency(figure: Figure, path: Path) -> Path:
    """Requests/s against the server CPU used, a point per stack and connection level
    (closed loop): up and to the left is more work per CPU-second."""
    fig, ax = plt.subplots(figsize=(8.5, 4.6))
    for line in figure.series:
        ax.plot([r["server_cpu_mean_pct"] / 100 for r in line.points],
                [r["rps_median"] for r in line.points], marker="o", markersize=4,
                linestyle=":", color=line.color, label=line.name)  # fmt: skip
        for r in line.points:
            ax.annotate(str(r["connections"]), (r["server_cpu_mean_pct"] / 100, r["rps_median"]),
                        fontsize=6, xytext=(3, 2), textcoords="offset points")  # fmt: skip
    ax.set_xlabel("server CPU used (cores, mean over the run)")
    ax.set_ylabel("requests/s")
    ax.yaxis.set_major_formatter(FuncFormatter(thousands))
    ax.set_title(f"efficiency, {figure.scenario}: throughput against CPU (labels: connections)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return save(fig, path, "requests per CPU-second = y / x (summary.csv: rps_per_cpu_s)")


def sustainable_steps(figure: Figure, path: Path) -> Path:
    """The sustainable-rate search (RATE=slo): the corrected percentile against the offered
    rate, every step of every stack's search (first round), the objective drawn."""
    fig, ax = plt.subplots(figsize=(8.5, 4.6))
    percentile, objective = slo_objective(figure)
    for line in figure.series:
        record = line.points[0]
        steps = search_steps(record)
        busy = search_steps(record, client_bound=True)
        style = CEILING_STYLE if line.ceiling else {"color": line.color}
        ax.plot([s[0] for s in steps], [s[2] for s in steps], marker="o", markersize=3,
                label=line.name, **style)  # fmt: skip
        if busy:  # the load tool fell behind: no verdict on the server there
            ax.scatter([s[0] for s in busy], [s[2] for s in busy], marker="x", s=30,
                       color=style["color"])  # fmt: skip
        if record.get("slo_rps"):
            ax.axvline(record["slo_rps"], color=style["color"], alpha=0.25, linewidth=1)
    ax.axhline(objective, color="#d33", linestyle=":", linewidth=1.2,
               label=f"objective: p{percentile:g} <= {objective:g} ms")  # fmt: skip
    ax.set_yscale("log")
    ax.set_xlabel("offered requests/s (constant rate, oha)")
    ax.set_ylabel(f"p{percentile:g} latency, ms (corrected)")
    ax.xaxis.set_major_formatter(FuncFormatter(thousands))
    ax.set_title(f"sustainable throughput, {figure.scenario}: every step of the search")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    return save(fig, path, "faint vertical lines: each stack's sustainable rate (confirmed); "
                 "x: the load tool could not keep that rate (no verdict on the server)")


def model_charts(figures: list[Figure], folder: Path, note: str) -> dict[str, Path]:
    """The PNG of each model figure, by kind; the file is named after the figure."""
    draw = {"throughput": lambda f, path: rps_vs_connections(f, path, note),
            "latency": lambda f, path: latency_bars(f, path, note),
            "efficiency": efficiency, "sustainable": sustainable_steps}  # fmt: skip
    return {f.kind: draw[f.kind](f, folder / f"{f.name}.png") for f in figures}


def scenario_charts(rows: list[dict], records: list[dict], scenario: str, folder: Path,
                    figures: list[Figure]) -> list[Path]:  # fmt: skip
    tools = {r["tool"] for r in closed_rows(rows) if r["scenario"] == scenario}
    note = ("closed loop (" + ", ".join(sorted(tools)) + "): the load pauses when the server "
            "stalls (coordinated omission); wrk's tail is back-filled, an estimate; oha runs "
            "measure it")  # fmt: skip
    model = model_charts(figures, folder, note)
    charts = [
        model.get("throughput"),
        rps_vs_quota(rows, scenario, folder / f"rps-quota-{scenario}.png"),
        rps_vs_share(rows, scenario, folder / f"rps-share-{scenario}.png"),
        model.get("latency"),
        model.get("efficiency"),
        latency_cdf(records, scenario, folder / f"cdf-{scenario}.png", note),
        config_cdf(records, scenario, folder / f"cdf-config-{scenario}.png", note),
        ttfb_chart(rows, scenario, folder / f"ttfb-{scenario}.png"),
        warmup_curves(records, scenario, folder / f"warmup-{scenario}.png"),
        open_loop(rows, scenario, folder / f"openloop-{scenario}.png"),
        model.get("sustainable"),
        latency_cdf(records, scenario, folder / f"cdf-openloop-{scenario}.png",
                    "oha with --latency-correction: free of coordinated omission", open_loop=True),
    ]  # fmt: skip
    return [c for c in charts if c]


def all_charts(rows: list[dict], records: list[dict], folder: Path,
               figures: dict[str, list[Figure]]) -> dict[str, list[Path]]:  # fmt: skip
    """Every chart, the model's `figures` of each scenario among them; returns
    {section: [paths]} in display order."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.png"):
        old.unlink()
    sections = {scenario: scenario_charts(rows, records, scenario, folder, figures.get(scenario, []))
                for scenario in ordered_scenarios(r["scenario"] for r in rows)}  # fmt: skip
    overall = [resources(rows, folder / "resources.png"),
               bytes_per_response(rows, folder / "bytes-per-response.png")]  # fmt: skip
    sections["resources"] = [c for c in overall if c]
    return sections