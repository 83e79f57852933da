"""PNG charts of runs that sweep the server's cores and CPU quota (the static TLS
experiments): throughput against the quota, latency distributions and time to first
byte per configuration."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

from matplotlib.ticker import FuncFormatter

from loadtest.report.chart_model import closed_rows, stack_colors
from loadtest.report.png import panels, plt, save, thousands


def cpu_share(item: dict) -> float | None:
    """The CPU quota as a share of the server cores (1 = uncapped)."""
    if item.get("cpu_share") is not None:
        return item["cpu_share"]
    if item.get("cpu_quota") is None:
        return 1.0
    return item["cpu_quota"] / item["server_cores"] if item.get("server_cores") else None


def config_label(cores, share) -> str:
    return f"{cores} core{'s' if cores != 1 else ''}, {share * 100:g}%"


def core_colors(cores: list[int]) -> dict[int, tuple]:
    palette = plt.get_cmap("tab10").colors
    return {c: palette[(i * 3) % len(palette)] for i, c in enumerate(sorted(cores))}


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
        ax.yaxis.set_major_formatter(FuncFormatter(thousands))
    axes[0][0].set_ylabel("requests/s (median)")
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.suptitle(f"Throughput against CPU quota, {scenario}: where does it saturate?", fontsize=10)
    return save(fig, path)


def rps_vs_share(rows: list[dict], scenario: str, path: Path) -> Path | None:
    """Requests/s against the CPU quota (share of the server cores), a line per core count.

    One panel per stack; solid lines at the highest connection level, faint ones
    below it: where a line flattens, more CPU no longer helps (saturation).
    """
    data = [r for r in closed_rows(rows) if r["scenario"] == scenario and not r["ceiling"]]
    data = [r for r in data if cpu_share(r) is not None]
    if len({cpu_share(r) for r in data}) < 2:
        return None
    stacks = sorted({r["stack"] for r in data})
    cores = sorted({r.get("server_cores") or 0 for r in data})
    colors = core_colors(cores)
    top = max(r["connections"] for r in data)
    fig, axes = panels(len(stacks))
    for ax, stack in zip(axes, stacks):
        mine = [r for r in data if r["stack"] == stack]
        for count in cores:
            for conn in sorted({r["connections"] for r in mine}):
                points = sorted((r for r in mine if (r.get("server_cores") or 0) == count
                                 and r["connections"] == conn), key=cpu_share)  # fmt: skip
                if not points:
                    continue
                label = f"{count} core{'s' if count != 1 else ''}" if conn == top else None
                ax.plot([cpu_share(p) * 100 for p in points], [p["rps_median"] for p in points],
                        marker="o" if conn == top else None, color=colors[count],
                        alpha=1.0 if conn == top else 0.25, linewidth=2 if conn == top else 1,
                        label=label)  # fmt: skip
        ax.set_title(mine[0]["display_name"], fontsize=9)
        ax.set_xlabel("CPU quota (% of the server cores)")
        ax.grid(True, alpha=0.3)
        ax.yaxis.set_major_formatter(FuncFormatter(thousands))
        ax.legend(fontsize=7, loc="lower right")
    # Once every panel is drawn: the panels share their y-axis, and a limit set on one
    # stops it from growing for the panels drawn after it (their highest points cut off).
    axes[0].set_ylim(bottom=0)
    axes[0].set_ylabel("requests/s (median)")
    fig.suptitle(f"Throughput against CPU quota, {scenario}, a line per core count "
                 f"({top} connections; faint: fewer)", fontsize=10)  # fmt: skip
    return save(fig, path, "where a line flattens, the server is no longer CPU-bound")


def config_cdf(records: list[dict], scenario: str, path: Path, note: str) -> Path | None:
    """Share of requests done within t, per stack (panel) and configuration (line).

    Configurations are core count x CPU quota; the highest connection level of
    the run. Colour: the quota; dashed: the second core count, and so on.
    """
    data = [
        r for r in records
        if r.get("kind") == "measurement" and r.get("status") == "ok"
        and r["scenario"] == scenario and not r.get("rate_spec") and not r.get("ceiling")
        and r["result"]["latency_curve"] and cpu_share(r) is not None
    ]  # fmt: skip
    configs = sorted({(r.get("server_cores") or 0, cpu_share(r)) for r in data})
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
    fig, axes = panels(len(stacks))
    for ax, stack in zip(axes, stacks):
        mine = [r for r in data if r["stack"] == stack]
        for cores, share in configs:
            curves: dict[float, list[float]] = defaultdict(list)
            for r in mine:
                if (r.get("server_cores") or 0, cpu_share(r)) == (cores, share):
                    for percent, ms in r["result"]["latency_curve"]:
                        if ms is not None and ms > 0:
                            curves[percent].append(ms)
            if not curves:
                continue
            points = sorted((p, statistics.median(v)) for p, v in curves.items())
            ax.plot([ms for _, ms in points], [p for p, _ in points], color=shade[share],
                    linestyle=styles[core_counts.index(cores) % len(styles)],
                    label=config_label(cores, share))  # fmt: skip
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
    return save(fig, path, note)


def ttfb_chart(rows: list[dict], scenario: str, path: Path) -> Path | None:
    """Time to first byte per stack and configuration: mean split into connect,
    TLS handshake and wait (stacked), with a p50..p90 whisker."""
    data = [r for r in rows if r["scenario"] == scenario and r.get("ttfb_mean_ms") is not None
            and not r["rate_spec"] and cpu_share(r) is not None]  # fmt: skip
    if not data:
        return None
    stacks = sorted({r["stack"] for r in data})
    names = {r["stack"]: r["display_name"] for r in data}
    colors = stack_colors(stacks)
    cores = sorted({r.get("server_cores") or 0 for r in data})
    fig, axes = panels(len(cores), width=max(4.5, 1.1 * len({cpu_share(r) for r in data})
                                              * len(stacks)), height=4.2)  # fmt: skip
    width = 0.8 / len(stacks)
    for ax, count in zip(axes, cores):
        mine = [r for r in data if (r.get("server_cores") or 0) == count]
        shares = sorted({cpu_share(r) for r in mine})
        for i, stack in enumerate(stacks):
            for j, share in enumerate(shares):
                group = [r for r in mine if r["stack"] == stack and cpu_share(r) == share]
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
    return save(fig, path, "bars: mean, split into connect (light), TLS handshake and wait "
                 "(dark); black: p50 with a whisker to p90; median over connection levels")  # fmt: skip
