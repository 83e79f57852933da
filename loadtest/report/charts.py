"""PNG charts (matplotlib, Agg backend) from the summary rows and the records."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from loadtest.core.verdict import STEADY_MIN_WINDOWS, STEADY_TOLERANCE  # noqa: E402

SCENARIO_ORDER = ["hello", "kb1", "kb10", "kb100", "workday", "page"]
CEILING_STYLE = {"color": "black", "linestyle": "--", "linewidth": 1.5}
DPI = 110


def ordered_scenarios(names) -> list[str]:
    """Scenarios in the contract's order (smallest body first), unknown ones last."""
    return sorted(set(names), key=lambda s: SCENARIO_ORDER.index(s) if s in SCENARIO_ORDER else 99)


def stack_colors(stacks: list[str]) -> dict[str, tuple]:
    # tab10's strong colours first, then tab20's lighter ones for more stacks.
    palette = plt.get_cmap("tab10").colors + plt.get_cmap("tab20").colors[1::2]
    return {stack: palette[i % len(palette)] for i, stack in enumerate(sorted(stacks))}


def _thousands(value, _pos):
    return f"{value / 1000:g}k" if value >= 1000 else f"{value:g}"


def _save(fig, path: Path, note: str = "") -> Path:
    if note:
        fig.text(0.01, 0.01, note, fontsize=7, color="#555")
    # Leave room at the bottom for the note.
    fig.tight_layout(rect=(0, 0.04 if note else 0, 1, 1))
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def closed_rows(rows: list[dict]) -> list[dict]:
    """The throughput rows: measured closed-loop runs (not oha's fixed-rate runs)."""
    return [r for r in rows if not r["rate_spec"] and r["rps_median"] is not None]


def uncapped(items: list[dict]) -> list[dict]:
    """Rows or records without a CPU quota; in a core sweep, those of the fewest cores."""
    free = [r for r in items if r.get("cpu_quota") is None]
    cores = {r.get("server_cores") for r in free} - {None}
    return [r for r in free if r.get("server_cores") in (None, min(cores, default=None))]


def _share(item: dict) -> float | None:
    """The CPU quota as a share of the server cores (1 = uncapped)."""
    if item.get("cpu_share") is not None:
        return item["cpu_share"]
    if item.get("cpu_quota") is None:
        return 1.0
    return item["cpu_quota"] / item["server_cores"] if item.get("server_cores") else None


def _config_label(cores, share) -> str:
    return f"{cores} core{'s' if cores != 1 else ''}, {share * 100:g}%"


def _core_colors(cores: list[int]) -> dict[int, tuple]:
    palette = plt.get_cmap("tab10").colors
    return {c: palette[(i * 3) % len(palette)] for i, c in enumerate(sorted(cores))}


def _panels(count: int, width: float = 4.2, height: float = 3.6):
    """Up to four panels a row, sharing both axes so that panels compare at a glance."""
    columns = min(count, 4)
    rows = (count + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(max(8.5, width * columns + 1.5), height * rows),
                             squeeze=False, sharex=True, sharey=True)  # fmt: skip
    flat = [ax for line in axes for ax in line]
    for ax in flat[count:]:
        ax.set_visible(False)
    return fig, flat[:count]


def rps_vs_connections(rows: list[dict], scenario: str, path: Path, note: str) -> Path | None:
    data = uncapped([r for r in closed_rows(rows) if r["scenario"] == scenario])
    if not data:
        return None
    stacks = sorted({r["stack"] for r in data if not r["ceiling"]})
    colors = stack_colors(stacks)
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    for stack in stacks + ["__ceiling__"]:
        points = sorted(
            (r for r in data if (r["ceiling"] if stack == "__ceiling__" else r["stack"] == stack)),
            key=lambda r: r["connections"],
        )
        if not points:
            continue
        x = [p["connections"] for p in points]
        y = [p["rps_median"] for p in points]
        low = [p["rps_median"] - (p["rps_min"] or p["rps_median"]) for p in points]
        high = [(p["rps_max"] or p["rps_median"]) - p["rps_median"] for p in points]
        if stack == "__ceiling__":
            ax.plot(x, y, marker="s", label=points[0]["display_name"], **CEILING_STYLE)
        else:
            ax.errorbar(x, y, yerr=[low, high], marker="o", capsize=3, color=colors[stack],
                        label=points[0]["display_name"])  # fmt: skip
    connections = sorted({r["connections"] for r in data})
    if len(connections) > 1 and connections[-1] / max(connections[0], 1) >= 10:
        ax.set_xscale("log")
    ax.set_xticks(connections)
    ax.set_xticklabels([str(c) for c in connections], rotation=45 if len(connections) > 8 else 0)
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(FuncFormatter(_thousands))
    ax.set_xlabel("concurrent connections")
    ax.set_ylabel("requests/s (median; bars: min..max)")
    ax.set_title(f"Throughput, {scenario}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return _save(fig, path, note)


def rps_vs_quota(rows: list[dict], scenario: str, path: Path) -> Path | None:
    data = [
        r for r in closed_rows(rows) if r["scenario"] == scenario and r["cpu_quota"] is not None
    ]
    quotas = sorted({r["cpu_quota"] for r in data})
    if len(quotas) < 2 or len({r.get("server_cores") for r in data}) > 1:
        return None  # a sweep over core counts: rps_vs_share draws it
    stacks = sorted({r["stack"] for r in data})
    colors = stack_colors(stacks)
    connections = sorted({r["connections"] for r in data})
    fig, axes = plt.subplots(1, len(connections), figsize=(3.2 * len(connections) + 1.5, 3.8),
                             sharey=True, squeeze=False)  # fmt: skip
    for ax, conn in zip(axes[0], connections):
        for stack in stacks:
            points = sorted((r for r in data if r["stack"] == stack and r["connections"] == conn),
                            key=lambda r: r["cpu_quota"])  # fmt: skip
            if points:
                ax.plot([p["cpu_quota"] for p in points], [p["rps_median"] for p in points],
                        marker="o", color=colors[stack], label=points[0]["display_name"])  # fmt: skip
        ax.set_title(f"{conn} connection{'s' if conn > 1 else ''}", fontsize=9)
        ax.set_xlabel("CPU quota (CPUs)")
        ax.grid(True, alpha=0.3)
        ax.yaxis.set_major_formatter(FuncFormatter(_thousands))
    axes[0][0].set_ylabel("requests/s (median)")
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.suptitle(f"Throughput against CPU quota, {scenario}: where does it saturate?", fontsize=10)
    return _save(fig, path)


def latency_bars(rows: list[dict], scenario: str, path: Path, note: str) -> Path | None:
    data = uncapped([r for r in closed_rows(rows) if r["scenario"] == scenario])
    data = [r for r in data if r["latency_p99_ms"] is not None]
    if not data:
        return None
    top = max(r["connections"] for r in data)
    data = sorted((r for r in data if r["connections"] == top), key=lambda r: r["latency_p99_ms"])
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
    ax.set_title(f"p95 and p99 latency, {scenario}, {top} connections ({data[0]['tool']})")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path, note)


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
    ax.set_title(f"Latency distribution, {scenario}, {top} connections ({what})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return _save(fig, path, note)


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
    ax.xaxis.set_major_formatter(FuncFormatter(_thousands))
    ax.set_xlabel("offered load (requests/s, constant rate)")
    ax.set_ylabel("p99 latency (ms, log scale)")
    ax.set_title(f"Open-loop p99 latency against offered load, {scenario} (oha)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return _save(fig, path, "oha with --latency-correction: free of coordinated omission")


def resources(rows: list[dict], path: Path) -> Path | None:
    data = uncapped(closed_rows(rows))
    if not data:
        return None
    stacks = sorted({r["stack"] for r in data}, key=lambda s: (s == "ceiling", s))
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
    return _save(fig, path)


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
    return _save(fig, path)


def rps_vs_share(rows: list[dict], scenario: str, path: Path) -> Path | None:
    """Requests/s against the CPU quota (share of the server cores), a line per core count.

    One panel per stack; solid lines at the highest connection level, faint ones
    below it: where a line flattens, more CPU no longer helps (saturation).
    """
    data = [r for r in closed_rows(rows) if r["scenario"] == scenario and not r["ceiling"]]
    data = [r for r in data if _share(r) is not None]
    if len({_share(r) for r in data}) < 2:
        return None
    stacks = sorted({r["stack"] for r in data})
    cores = sorted({r.get("server_cores") or 0 for r in data})
    colors = _core_colors(cores)
    top = max(r["connections"] for r in data)
    fig, axes = _panels(len(stacks))
    for ax, stack in zip(axes, stacks):
        mine = [r for r in data if r["stack"] == stack]
        for count in cores:
            for conn in sorted({r["connections"] for r in mine}):
                points = sorted((r for r in mine if (r.get("server_cores") or 0) == count
                                 and r["connections"] == conn), key=_share)  # fmt: skip
                if not points:
                    continue
                label = f"{count} core{'s' if count != 1 else ''}" if conn == top else None
                ax.plot([_share(p) * 100 for p in points], [p["rps_median"] for p in points],
                        marker="o" if conn == top else None, color=colors[count],
                        alpha=1.0 if conn == top else 0.25, linewidth=2 if conn == top else 1,
                        label=label)  # fmt: skip
        ax.set_title(mine[0]["display_name"], fontsize=9)
        ax.set_xlabel("CPU quota (% of the server cores)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.yaxis.set_major_formatter(FuncFormatter(_thousands))
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_ylabel("requests/s (median)")
    fig.suptitle(f"Throughput against CPU quota, {scenario}, a line per core count "
                 f"({top} connections; faint: fewer)", fontsize=10)  # fmt: skip
    return _save(fig, path, "where a line flattens, the server is no longer CPU-bound")


def config_cdf(records: list[dict], scenario: str, path: Path, note: str) -> Path | None:
    """Share of requests done within t, per stack (panel) and configuration (line).

    Configurations are core count x CPU quota; the highest connection level of
    the run. Colour: the quota; dashed: the second core count, and so on.
    """
    data = [
        r for r in records
        if r.get("kind") == "measurement" and r.get("status") == "ok"
        and r["scenario"] == scenario and not r.get("rate_spec") and not r.get("ceiling")
        and r["result"]["latency_curve"] and _share(r) is not None
    ]  # fmt: skip
    configs = sorted({(r.get("server_cores") or 0, _share(r)) for r in data})
    if len(configs) < 2:
        return None
    top = max(r["connections"] for r in data)
    data = [r for r in data if r["connections"] == top]
    stacks = sorted({r["stack"] for r in data})
    shares = sorted({share for _, share in configs})
    cmap = plt.get_cmap("viridis")
    shade = {s: cmap(0.85 * i / max(1, len(shares) - 1)) for i, s in enumerate(shares)}
    styles = ["-", "--", ":", "-."]
    core_counts = sorted({c for c, _ in configs})
    fig, axes = _panels(len(stacks))
    for ax, stack in zip(axes, stacks):
        mine = [r for r in data if r["stack"] == stack]
        for cores, share in configs:
            curves: dict[float, list[float]] = defaultdict(list)
            for r in mine:
                if (r.get("server_cores") or 0, _share(r)) == (cores, share):
                    for percent, ms in r["result"]["latency_curve"]:
                        if ms is not None and ms > 0:
                            curves[percent].append(ms)
            if not curves:
                continue
            points = sorted((p, statistics.median(v)) for p, v in curves.items())
            ax.plot([ms for _, ms in points], [p for p, _ in points], color=shade[share],
                    linestyle=styles[core_counts.index(cores) % len(styles)],
                    label=_config_label(cores, share))  # fmt: skip
        ax.set_xscale("log")
        ax.set_ylim(0, 100)
        ax.set_title(mine[0].get("display_name", stack) if mine else stack, fontsize=9)
        ax.set_xlabel("latency (ms, log scale)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, loc="lower right")
    axes[0].set_ylabel("% of requests done within")
    tool = data[0]["tool"] if data else ""
    fig.suptitle(f"Latency distribution per configuration, {scenario}, {top} connections "
                 f"({tool})", fontsize=10)  # fmt: skip
    return _save(fig, path, note)


def ttfb_chart(rows: list[dict], scenario: str, path: Path) -> Path | None:
    """Time to first byte per stack and configuration: mean split into connect,
    TLS handshake and wait (stacked), with a p50..p90 whisker."""
    data = [r for r in rows if r["scenario"] == scenario and r.get("ttfb_mean_ms") is not None
            and not r["rate_spec"] and _share(r) is not None]  # fmt: skip
    if not data:
        return None
    stacks = sorted({r["stack"] for r in data})
    names = {r["stack"]: r["display_name"] for r in data}
    colors = stack_colors(stacks)
    cores = sorted({r.get("server_cores") or 0 for r in data})
    fig, axes = _panels(len(cores), width=max(4.5, 1.1 * len({_share(r) for r in data})
                                              * len(stacks)), height=4.2)  # fmt: skip
    width = 0.8 / len(stacks)
    for ax, count in zip(axes, cores):
        mine = [r for r in data if (r.get("server_cores") or 0) == count]
        shares = sorted({_share(r) for r in mine})
        for i, stack in enumerate(stacks):
            for j, share in enumerate(shares):
                group = [r for r in mine if r["stack"] == stack and _share(r) == share]
                if not group:
                    continue

                def median(key, group=group):
                    values = [r[key] for r in group if r.get(key) is not None]
                    return statistics.median(values) if values else 0.0

                x = j - 0.4 + width * (i + 0.5)
                bottom = 0.0
                for part, alpha in (("connect", 0.35), ("handshake", 0.65), ("wait", 1.0)):
                    value = median(f"ttfb_{part}_mean_ms")
                    ax.bar(x, value, width * 0.9, bottom=bottom, color=colors[stack], alpha=alpha,
                           label=names[stack] if part == "wait" and j == 0 else None)  # fmt: skip
                    bottom += value
                p50, p90 = median("ttfb_p50_ms"), median("ttfb_p90_ms")
                ax.errorbar(x, p50, yerr=[[0], [max(0.0, p90 - p50)]], fmt="_", color="black",
                            capsize=2, markersize=6)  # fmt: skip
        ax.set_xticks(range(len(shares)))
        ax.set_xticklabels([f"{s * 100:g}%" for s in shares])
        ax.set_xlabel(f"CPU quota (% of {count} core{'s' if count != 1 else ''})")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    axes[0].set_ylabel("time to first byte (ms)")
    fig.suptitle(f"Time to first byte over a fresh connection, {scenario}", fontsize=10)
    return _save(fig, path, "bars: mean, split into connect (light), TLS handshake and wait "
                 "(dark); black: p50 with a whisker to p90; median over connection levels")  # fmt: skip


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
        style = CEILING_STYLE if stack == "ceiling" else {"color": colors[stack]}
        ax.plot(range(1, len(curve) + 1), curve, marker="o", markersize=3,
                label=names[stack], **style)  # fmt: skip
    ax.set_xlabel("warm-up window (1 s each)")
    ax.set_ylabel("requests/s")
    ax.yaxis.set_major_formatter(FuncFormatter(_thousands))
    ax.set_title(f"warm-up until steady, {scenario} "
                 f"({STEADY_MIN_WINDOWS} windows within {STEADY_TOLERANCE:.0%})")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, path, "a JIT (JVM, PyPy) climbs for several windows; others settle in two")


def efficiency(rows: list[dict], scenario: str, path: Path) -> Path | None:
    """Requests/s against the server CPU used, a point per stack and connection level
    (closed loop): up and to the left is more work per CPU-second."""
    points = [r for r in closed_rows(rows) if r["scenario"] == scenario
              and r["rps_median"] and r.get("server_cpu_mean_pct")]  # fmt: skip
    if not points:
        return None
    stacks = sorted({r["stack"] for r in points})
    colors = stack_colors(stacks)
    fig, ax = plt.subplots(figsize=(8.5, 4.6))
    for stack in stacks:
        mine = sorted((r for r in points if r["stack"] == stack), key=lambda r: r["connections"])
        style = CEILING_STYLE if stack == "ceiling" else {"color": colors[stack]}
        ax.plot([r["server_cpu_mean_pct"] / 100 for r in mine], [r["rps_median"] for r in mine],
                marker="o", markersize=4, linestyle=":", color=style["color"],
                label=mine[0].get("display_name", stack))  # fmt: skip
        for r in mine:
            ax.annotate(str(r["connections"]), (r["server_cpu_mean_pct"] / 100, r["rps_median"]),
                        fontsize=6, xytext=(3, 2), textcoords="offset points")  # fmt: skip
    ax.set_xlabel("server CPU used (cores, mean over the run)")
    ax.set_ylabel("requests/s")
    ax.yaxis.set_major_formatter(FuncFormatter(_thousands))
    ax.set_title(f"efficiency, {scenario}: throughput against CPU (labels: connections)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, path, "requests per CPU-second = y / x (summary.csv: rps_per_cpu_s)")


def sustainable_steps(records: list[dict], scenario: str, path: Path) -> Path | None:
    """The sustainable-rate search (RATE=slo): the corrected percentile against the offered
    rate, every step of every stack's search (first round), the objective drawn."""
    searches = [r for r in records if r.get("kind") == "measurement"
                and r["scenario"] == scenario and r.get("slo_steps")]  # fmt: skip
    if not searches:
        return None
    first: dict[str, dict] = {}
    for record in searches:
        first.setdefault(f"{record['stack']} c={record['connections']}", record)
    colors = stack_colors(list(first))
    fig, ax = plt.subplots(figsize=(8.5, 4.6))
    objective = searches[0]["slo_objective_ms"]
    percentile = searches[0]["slo_percentile"]
    for label, record in sorted(first.items()):
        steps = sorted(s for s in record["slo_steps"] if s[2] is not None and s[3] != "client")
        busy = [s for s in record["slo_steps"] if s[2] is not None and s[3] == "client"]
        style = CEILING_STYLE if record["stack"] == "ceiling" else {"color": colors[label]}
        name = record.get("display_name", record["stack"]) + label[len(record["stack"]):]
        ax.plot([s[0] for s in steps], [s[2] for s in steps], marker="o", markersize=3,
                label=name, **style)  # fmt: skip
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
    ax.xaxis.set_major_formatter(FuncFormatter(_thousands))
    ax.set_title(f"sustainable throughput, {scenario}: every step of the search")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, path, "faint vertical lines: each stack's sustainable rate (confirmed); "
                 "x: the load tool could not keep that rate (no verdict on the server)")


def all_charts(rows: list[dict], records: list[dict], folder: Path) -> dict[str, list[Path]]:
    """Every chart; returns {section: [paths]} in display order."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.png"):
        old.unlink()
    sections: dict[str, list[Path]] = {}
    scenarios = ordered_scenarios(r["scenario"] for r in rows)
    for scenario in scenarios:
        tools = {r["tool"] for r in closed_rows(rows) if r["scenario"] == scenario}
        note = (
            "closed loop (" + ", ".join(sorted(tools)) + "): latency subject to coordinated "
            "omission, tail understated; see the oha runs for honest tails"
        )
        charts = [
            rps_vs_connections(rows, scenario, folder / f"rps-{scenario}.png", note),
            rps_vs_quota(rows, scenario, folder / f"rps-quota-{scenario}.png"),
            rps_vs_share(rows, scenario, folder / f"rps-share-{scenario}.png"),
            latency_bars(rows, scenario, folder / f"latency-{scenario}.png", note),
            efficiency(rows, scenario, folder / f"efficiency-{scenario}.png"),
            latency_cdf(records, scenario, folder / f"cdf-{scenario}.png", note),
            config_cdf(records, scenario, folder / f"cdf-config-{scenario}.png", note),
            ttfb_chart(rows, scenario, folder / f"ttfb-{scenario}.png"),
            warmup_curves(records, scenario, folder / f"warmup-{scenario}.png"),
            open_loop(rows, scenario, folder / f"openloop-{scenario}.png"),
            sustainable_steps(records, scenario, folder / f"slo-{scenario}.png"),
            latency_cdf(
                records,
                scenario,
                folder / f"cdf-openloop-{scenario}.png",
                "oha with --latency-correction: free of coordinated omission",
                open_loop=True,
            ),  # fmt: skip
        ]
        sections[scenario] = [c for c in charts if c]
    overall = [
        resources(rows, folder / "resources.png"),
        bytes_per_response(rows, folder / "bytes-per-response.png"),
    ]
    sections["resources"] = [c for c in overall if c]
    return sections
