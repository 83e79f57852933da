"""The figures a run's reports draw, chosen once for both renderers.

The PNG charts (`charts`) and the interactive ones (`interactive`) draw the
same four figures of a scenario: throughput and tail latency against the
connections, efficiency (throughput against the server CPU) and the steps of
the sustainable-rate search. Which rows each figure shows, in which series,
with which colour and interval, is decided here; the renderers only draw.
A figure's `name` is both its PNG's file stem and its interactive chart's id,
so report.html embeds the PNG only of a chart it does not draw live.
"""

from __future__ import annotations

from dataclasses import dataclass

from loadtest.runners.ceiling_site import NAME as CEILING_STACK

SCENARIO_ORDER = ["hello", "kb1", "kb10", "kb100", "workday", "page"]
CEILING_COLOR = "#000000"
# matplotlib's tab10 first, then tab20's lighter shades: distinct colours for many stacks.
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
    "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
)  # fmt: skip
# The PNG file stem of each kind of figure (and so its chart's id in the page).
STEMS = {"throughput": "rps", "latency": "latency", "efficiency": "efficiency",
         "sustainable": "slo"}  # fmt: skip


@dataclass(frozen=True)
class Series:
    """One line of a figure: a stack (or a stack's search), its points in x order."""

    key: str
    name: str
    color: str
    ceiling: bool
    points: list[dict]


@dataclass(frozen=True)
class Figure:
    kind: str
    scenario: str
    series: list[Series]

    @property
    def name(self) -> str:
        return f"{STEMS[self.kind]}-{self.scenario}"

    @property
    def rows(self) -> list[dict]:
        return [point for line in self.series for point in line.points]


def ordered_scenarios(names) -> list[str]:
    """Scenarios in the contract's order (smallest body first), unknown ones last."""
    return sorted(set(names), key=lambda s: SCENARIO_ORDER.index(s) if s in SCENARIO_ORDER else 99)


def stack_colors(stacks) -> dict[str, str]:
    """A colour per stack (hex), the same one in every chart of a run whether or not the
    run measured the ceiling, which is black."""
    stacks = set(stacks)
    colors = {stack: PALETTE[i % len(PALETTE)]
              for i, stack in enumerate(sorted(stacks - {CEILING_STACK}))}  # fmt: skip
    return colors | ({CEILING_STACK: CEILING_COLOR} if CEILING_STACK in stacks else {})


def closed_rows(rows: list[dict]) -> list[dict]:
    """The throughput rows: measured closed-loop runs (not oha's fixed-rate runs)."""
    return [r for r in rows if not r["rate_spec"] and r["rps_median"] is not None]


def uncapped(items: list[dict]) -> list[dict]:
    """Rows or records without a CPU quota; in a core sweep, those of the fewest cores."""
    free = [r for r in items if r.get("cpu_quota") is None]
    cores = {r.get("server_cores") for r in free} - {None}
    return [r for r in free if r.get("server_cores") in (None, min(cores, default=None))]


def rps_point(row: dict) -> tuple[float, float, float]:
    """A row's throughput as a chart draws it: (figure, low, high). Over rounds, their
    geometric mean and its 95% interval, as the leaderboard ranks; with one round, its
    figure and the interval of its windows (min..max where none was computed)."""
    figure = row.get("rps_geomean") or row["rps_median"]
    low = row["rps_ci_low"] if row.get("rps_ci_low") is not None else row.get("rps_min")
    high = row["rps_ci_high"] if row.get("rps_ci_high") is not None else row.get("rps_max")
    return figure, (low if low is not None else figure), (high if high is not None else figure)


# The throughput charts' axis: what the point and its bars are.
RPS_AXIS = "requests/s (geometric mean of the rounds; bars: 95% interval)"


def per_stack(kind: str, scenario: str, data: list[dict]) -> Figure | None:
    """A series per stack, each sorted by connections, the ceiling last."""
    if not data:
        return None
    colors = stack_colors({r["stack"] for r in data})
    series = []
    for stack in sorted(colors, key=lambda s: (s == CEILING_STACK, s)):
        points = sorted((r for r in data if r["stack"] == stack), key=lambda r: r["connections"])
        series.append(Series(stack, points[0].get("display_name", stack), colors[stack],
                             stack == CEILING_STACK, points))  # fmt: skip
    return Figure(kind, scenario, series)


def throughput(rows: list[dict], scenario: str) -> Figure | None:
    return per_stack("throughput", scenario,
                     uncapped([r for r in closed_rows(rows) if r["scenario"] == scenario]))  # fmt: skip


def tail_latency(rows: list[dict], scenario: str) -> Figure | None:
    data = uncapped([r for r in closed_rows(rows) if r["scenario"] == scenario
                     and r["latency_p99_ms"] is not None])  # fmt: skip
    return per_stack("latency", scenario, data)


def efficiency(rows: list[dict], scenario: str) -> Figure | None:
    data = [r for r in closed_rows(rows) if r["scenario"] == scenario
            and r["rps_median"] and r.get("server_cpu_mean_pct")]  # fmt: skip
    return per_stack("efficiency", scenario, data)


def sustainable(records: list[dict], scenario: str) -> Figure | None:
    """Every search of the sustainable rate (RATE=slo), the first round's per stack and
    connection level; a series' points are the search's measured steps, by offered rate."""
    searches = [r for r in records if r.get("kind") == "measurement"
                and r["scenario"] == scenario and r.get("slo_steps")]  # fmt: skip
    if not searches:
        return None
    first: dict[str, dict] = {}
    for record in searches:
        first.setdefault(f"{record['stack']} c={record['connections']}", record)
    colors = stack_colors(first)
    series = []
    for key, record in sorted(first.items()):
        ceiling = record["stack"] == CEILING_STACK
        name = record.get("display_name", record["stack"]) + key[len(record["stack"]):]
        series.append(Series(key, name, CEILING_COLOR if ceiling else colors[key], ceiling,
                             [record]))  # fmt: skip
    return Figure("sustainable", scenario, series)


def search_steps(record: dict, client_bound: bool = False) -> list[list]:
    """The measured steps of a search (offered rate first): those the server answered
    for, or with `client_bound` those where the load tool fell behind (no verdict)."""
    return sorted(s for s in record["slo_steps"]
                  if s[2] is not None and (s[3] == "client") == client_bound)  # fmt: skip


def slo_objective(figure: Figure) -> tuple[float, float]:
    """The objective of a sustainable-rate figure: (its percentile, its bound in ms)."""
    record = figure.series[0].points[0]
    return record["slo_percentile"], record["slo_objective_ms"]


def scenario_figures(rows: list[dict], records: list[dict], scenario: str) -> list[Figure]:
    """The figures both renderers draw for a scenario, in display order."""
    figures = [throughput(rows, scenario), tail_latency(rows, scenario),
               efficiency(rows, scenario), sustainable(records, scenario)]  # fmt: skip
    return [f for f in figures if f]
