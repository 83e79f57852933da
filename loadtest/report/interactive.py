"""Interactive charts of report.html and compare.html (plotly.js, embedded in the page).

Each chart is a plain Plotly figure (data and layout as JSON) built from the same
summary rows as the PNG charts; the page draws them with the pinned plotly.js from
the tooling venv, written into the page itself, so it opens from disk with no
network. Hover shows every figure with its verdict; a click on a legend entry
hides or shows a stack; the buttons above a chart switch its scale between
linear and log. A figure not limited by the server is drawn hollow, never as a
plain point.
"""

from __future__ import annotations

import html
import json

from loadtest.report.bundle import plotly_library
from loadtest.report.chart_model import (RPS_AXIS, Figure, Series, rps_point, search_steps,
                                         slo_objective, stack_colors)  # fmt: skip

CHART_CLASS = "ix-chart"
FIGURES_ID = "serverlab-figures"
CEILING_LINE = {"color": "#000000", "dash": "dash", "width": 1.5}
# server-bound points are filled; a figure some other limit stopped is hollow.
VERDICT_SYMBOL = {"server-bound": "circle", "client-bound": "triangle-up-open"}
OTHER_SYMBOL = "circle-open"
SYMBOL_NOTE = "filled: server-bound; triangle: client-bound; hollow circle: neither side"
CONFIG = {"responsive": True, "displaylogo": False, "showLink": False}
# A page may load nothing from anywhere: its charts, styles and scripts are inline.
OFFLINE_META = ('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
                "img-src data: blob:; style-src 'unsafe-inline'; "
                "script-src 'unsafe-inline' 'unsafe-eval'; font-src data:\">")  # fmt: skip


def scale_buttons(axis: str = "yaxis", default: str = "linear") -> list[dict]:
    """Linear/log buttons for one axis, the default first (shown as active)."""
    order = [default, "log" if default == "linear" else "linear"]
    buttons = [{"label": kind, "method": "relayout", "args": [{f"{axis}.type": kind}]}
               for kind in order]  # fmt: skip
    return [{"type": "buttons", "direction": "right", "x": 0, "y": 1.13, "xanchor": "left",
             "yanchor": "bottom", "showactive": True, "buttons": buttons}]  # fmt: skip


def layout(title: str, x_title: str, y_title: str, y_default: str = "linear", **extra) -> dict:
    base = {
        "title": {"text": title, "font": {"size": 14}},
        "xaxis": {"title": {"text": x_title}},
        # On a log axis plotly labels the ticks between decades with a digit alone ("5"
        # under 10 reads as 5 ms, not 50); every tick is labelled with its whole value.
        "yaxis": {"title": {"text": y_title}, "type": y_default, "rangemode": "tozero",
                  "minorloglabels": "complete"},
        "updatemenus": scale_buttons(default=y_default),
        "legend": {"title": {"text": "click to hide or show"}},
        "hovermode": "closest",
        "margin": {"t": 90},
        "height": 440,
    }
    base.update(extra)
    return base


def connections_axis(rows: list[dict]) -> dict:
    levels = sorted({r["connections"] for r in rows})
    wide = len(levels) > 1 and levels[-1] / max(levels[0], 1) >= 10
    return {"title": {"text": "concurrent connections"}, "type": "log" if wide else "linear",
            "tickvals": levels, "ticktext": [str(c) for c in levels]}  # fmt: skip


def verdict_text(row: dict) -> str:
    verdict = row.get("verdict") or "no verdict"
    return f"{verdict} ({row['cause']})" if row.get("cause") else verdict


def symbols(points: list[dict]) -> list[str]:
    return [VERDICT_SYMBOL.get(p.get("verdict"), OTHER_SYMBOL) for p in points]


def trace(line: Series, x: list, y: list, dash: str = "solid", **extra) -> dict:
    style = CEILING_LINE if line.ceiling else {"color": line.color, "dash": dash}
    return {"type": "scatter", "mode": "lines+markers", "name": line.name,
            "x": x, "y": y, "line": style,
            "marker": {"symbol": symbols(line.points), "size": 9, "color": style["color"]},
            **extra}  # fmt: skip


def throughput(figure: Figure) -> dict:
    traces = []
    for line in figure.series:
        points = line.points
        drawn = [rps_point(p) for p in points]
        hover = [f"{p['display_name']}<br>{p['connections']} connections<br>"
                 f"{m:,.0f} req/s (95% interval {lo:,.0f}..{hi:,.0f}; "
                 f"median {p['rps_median']:,.0f})<br>"
                 f"p99 {p['latency_p99_ms'] or 0:.2f} ms<br>limited by: {verdict_text(p)}"
                 for p, (m, lo, hi) in zip(points, drawn)]  # fmt: skip
        error = {"type": "data", "symmetric": False,
                 "array": [hi - m for m, _, hi in drawn],
                 "arrayminus": [m - lo for m, lo, _ in drawn]}  # fmt: skip
        traces.append(trace(line, [p["connections"] for p in points], [m for m, _, _ in drawn],
                            error_y=error, text=hover, hoverinfo="text"))  # fmt: skip
    return {"id": figure.name, "data": traces,
            "layout": layout(f"Throughput, {figure.scenario} ({SYMBOL_NOTE})",
                             "concurrent connections", RPS_AXIS,
                             xaxis=connections_axis(figure.rows))}  # fmt: skip


def tail_latency(figure: Figure) -> dict:
    traces = []
    for line in figure.series:
        points = line.points
        hover = [f"{p['display_name']}<br>{p['connections']} connections<br>"
                 f"p50 {p.get('latency_p50_ms') or 0:.2f} ms, p99 {p['latency_p99_ms']:.2f} ms<br>"
                 f"{p['rps_median']:,.0f} req/s, limited by: {verdict_text(p)}"
                 for p in points]  # fmt: skip
        traces.append(trace(line, [p["connections"] for p in points],
                            [p["latency_p99_ms"] for p in points], text=hover, hoverinfo="text"))  # fmt: skip
    tools = ", ".join(sorted({r["tool"] for r in figure.rows}))
    return {"id": figure.name, "data": traces,
            "layout": layout(f"p99 latency, {figure.scenario} ({tools}, closed loop: coordinated "
                             "omission)", "concurrent connections", "p99 latency (ms)",
                             y_default="log", xaxis=connections_axis(figure.rows))}  # fmt: skip


def efficiency(figure: Figure) -> dict:
    traces = []  # dotted joins: the points are connection levels, not a curve
    for line in figure.series:
        points = line.points
        hover = [f"{p['display_name']}<br>{p['connections']} connections<br>"
                 f"{p['rps_median']:,.0f} req/s on {p['server_cpu_mean_pct'] / 100:.2f} cores"
                 f"<br>{p.get('rps_per_cpu_s') or 0:,.0f} requests per CPU-second<br>"
                 f"limited by: {verdict_text(p)}" for p in points]  # fmt: skip
        traces.append(trace(line, [p["server_cpu_mean_pct"] / 100 for p in points],
                            [p["rps_median"] for p in points], text=hover, hoverinfo="text",
                            dash="dot"))  # fmt: skip
    return {"id": figure.name, "data": traces,
            "layout": layout(f"Efficiency, {figure.scenario}: throughput against server CPU "
                             "(up and left: more requests per CPU-second)",
                             "server CPU used (cores, mean over the run)", "requests/s")}  # fmt: skip


def sustainable(figure: Figure) -> dict:
    percentile, objective = slo_objective(figure)
    traces = []
    for line in figure.series:
        # A step where the load tool fell behind says nothing of the server: not drawn.
        steps = search_steps(line.points[0])
        hover = [f"{line.name}<br>offered {s[0]:,.0f} req/s<br>p{percentile:g} {s[2]:.2f} ms<br>"
                 f"{'within' if s[2] <= objective else 'over'} the objective" for s in steps]  # fmt: skip
        traces.append({"type": "scatter", "mode": "lines+markers", "name": line.name,
                       "x": [s[0] for s in steps], "y": [s[2] for s in steps],
                       "line": {"color": line.color}, "marker": {"size": 6, "color": line.color},
                       "text": hover, "hoverinfo": "text"})  # fmt: skip
    objective_line = {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": objective,
                      "y1": objective, "line": {"color": "#dd3333", "dash": "dot"}}  # fmt: skip
    return {"id": figure.name, "data": traces,
            "layout": layout(f"Sustainable throughput, {figure.scenario}: p{percentile:g} against "
                             f"the offered rate (dotted: objective {objective:g} ms)",
                             "offered requests/s (constant rate, oha)",
                             f"p{percentile:g} latency, ms (corrected)", y_default="log",
                             shapes=[objective_line])}  # fmt: skip


RENDER = {"throughput": throughput, "latency": tail_latency, "efficiency": efficiency,
          "sustainable": sustainable}  # fmt: skip


def plotly_figures(figures: list[Figure]) -> list[dict]:
    """The model's figures as plotly figures (data and layout), the div id their name."""
    return [RENDER[figure.kind](figure) for figure in figures]


CHANGE_SYMBOL = {"regression": "triangle-down", "improvement": "triangle-up"}


def ratio_chart(cases: list[dict]) -> dict | None:
    """compare.html: new/old per case with its interval, a trace per stack."""
    if not cases:
        return None
    colors = stack_colors(sorted({c["stack"] for c in cases}))
    traces = []
    for stack in sorted({c["stack"] for c in cases}):
        mine = [c for c in cases if c["stack"] == stack]
        intervals = [c["interval"] or (c["ratio"], c["ratio"]) for c in mine]
        hover = [f"{c['stack']} {c['label']}<br>{c['old']:,.0f} -> {c['new']:,.0f} req/s<br>"
                 f"new/old {c['ratio']:.3f} (95% {lo:.3f}..{hi:.3f})<br>{c['verdict']}"
                 for c, (lo, hi) in zip(mine, intervals)]  # fmt: skip
        color = colors[stack]
        traces.append({
            "type": "scatter", "mode": "markers", "name": stack,
            "x": [c["label"] for c in mine], "y": [c["ratio"] for c in mine],
            "error_y": {"type": "data", "symmetric": False,
                        "array": [hi - c["ratio"] for c, (_, hi) in zip(mine, intervals)],
                        "arrayminus": [c["ratio"] - lo for c, (lo, _) in zip(mine, intervals)]},
            "marker": {"size": 10, "color": color,
                       "symbol": [CHANGE_SYMBOL.get(c["verdict"].split(" (")[0], "circle-open")
                                  for c in mine]},
            "text": hover, "hoverinfo": "text",
        })  # fmt: skip
    unchanged = {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1, "y1": 1,
                 "line": {"color": "#888888", "dash": "dot"}}  # fmt: skip
    return {"id": "ratio", "data": traces,
            "layout": layout("new/old requests/s per case (bars: 95% interval; triangles: "
                             "significant change; hollow: none or not tested)", "case",
                             "new / old", y_default="log", shapes=[unchanged],
                             xaxis={"type": "category", "automargin": True},
                             scattermode="group")}  # fmt: skip


def chart_div(figure: dict) -> str:
    return f'<div class="{CHART_CLASS}" id="{html.escape(figure["id"])}"></div>'


DRAW = """
(function () {
  var figures = JSON.parse(document.getElementById('%(figures)s').textContent);
  figures.forEach(function (figure) {
    var div = document.getElementById(figure.id);
    if (div) { Plotly.newPlot(div, figure.data, figure.layout, %(config)s); }
  });
})();
"""


def scripts(figures: list[dict]) -> str:
    """The library (the pinned plotly package's plotly.js), the figures as JSON and the
    code that draws them; empty with no figure."""
    if not figures:
        return ""
    # "</" cannot end the script element early once escaped.
    payload = json.dumps(figures).replace("</", "<\\/")
    draw = DRAW % {"figures": FIGURES_ID, "config": json.dumps(CONFIG)}
    return (f"<script>{plotly_library()}</script>"
            f'<script type="application/json" id="{FIGURES_ID}">{payload}</script>'
            f"<script>{draw}</script>")  # fmt: skip
