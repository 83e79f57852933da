"""summary.md and the self-contained report.html (charts embedded as base64)."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from loadtest.core.verdict import CAUSES
from loadtest.measure.tools import latency_decimals
from loadtest.report.chart_model import ordered_scenarios
from loadtest.report.flags import JIT_UNREAD, flag_notes, row_flags
from loadtest.report.interactive import OFFLINE_META, chart_div, scripts
from loadtest.report.leaderboard import (
    LEADERBOARD_HEAD,
    leaderboard_note,
    leaderboards,
    p99_text,
    rank_figure,
)
from loadtest.report.summary import aggregation
from loadtest.report.sustainable import SLO_HEAD, SLO_NOTE, slo_tables

CO_NOTE = (
    "wrk, ab and h2load are closed-loop tools: each connection waits for its answer before "
    "sending the next request, so a stalled server also stalls the load and the slow "
    "requests it would have received are never sent (coordinated omission). ab's and "
    "h2load's percentiles leave them out and understate the tail; wrk 4 adds back-filled "
    "latencies for them after the run, so its tail (and mean) is an estimate, not a "
    "measurement. oha runs at a constant rate with --latency-correction and measures it "
    "(profile `latency`)."
)
CLIENT_BOUND_NOTE = (
    "CLIENT-BOUND marks a case where the load tool used >= 90% of its cores: the "
    "requests/s may be the tool's limit, not the server's. Compare with the nginx ceiling."
)
NOISY_NOTE = (
    "NOISY marks a case where other processes used more than 15% of the pinned server "
    "or client cores during the measurement: the host was shared. With the priority raised "
    "they mostly used idle time, but such figures spread more; publish numbers from a quiet host."
)
CEILING_SHARE_NOTE = (
    "% ceiling: the stack's median requests/s as a share of the nginx ceiling's, same "
    "scenario, connections and tool. The ceiling runs without a CPU quota whatever the "
    "stack's: it is what this host and load tool can carry, so a capped stack far below it "
    "was held by its quota or its own cost, not by the harness; near 100%, the harness may "
    "have set the figure. 'above: ceiling invalid': the stack outran the ceiling, which then "
    "bounds nothing."
)
TTFB_NOTE = (
    "TTFB: time to first byte of a new visitor, measured after each case on the idle server "
    "with fresh connections one after another: TCP connect, a full TLS handshake (no "
    "session resumption), the request with the scenario's headers, and the first byte of "
    "the answer (p50 over the samples; split into connect, handshake and wait in summary.csv)."
)
H2LOAD_NOTE = (
    "h2load does not verify the server's certificate (it still does the full TLS handshake); "
    "its latency percentiles come from its per-request log. Over HTTP/2 it does not reconnect "
    "when a server ends a connection at its per-connection request limit (GOAWAY): the harness "
    "then sends the requests left with further h2load runs over new connections and merges "
    "them; a timed run cannot be continued and is flagged in the problems column."
)
VERDICT_NOTE = (
    "limited by: what stopped each figure from being higher, judged from the same window. "
    "server = the server used at least 85% of the CPU it was given (the figure is the "
    "stack's own); client = the load tool used at least 90% of its cores (a lower bound for "
    "the server); neither = both had CPU to spare, with the likely cause: "
    + "; ".join(f"{cause} ({meaning})" for cause, meaning in CAUSES.items())
    + ". A req/s marked (?) was limited by neither side: it is not the stack's capacity. "
    "See docs/methodology.md, \"What limited a figure\"."
)
SHARED_NOTE = (
    "SHARED CORES marks a case whose server cores include the load tool's (e.g. 2 server "
    "cores on a 2-core host): server and client compete, so such figures are lower bounds."
)


def fmt(value, digits=0, suffix=""):
    if value is None or value == "":
        return "-"
    if isinstance(value, float) and digits == 0:
        return f"{value:,.0f}{suffix}"
    if isinstance(value, (int, float)):
        return f"{value:,.{digits}f}{suffix}"
    return str(value)


def scenario_groups(rows: list[dict]) -> list[tuple[str, list[dict]]]:
    scenarios = ordered_scenarios(r["scenario"] for r in rows)
    return [(s, [r for r in rows if r["scenario"] == s]) for s in scenarios]


# Each column of a scenario's table and how it aggregates over the case's rounds, so that
# the page says it of every figure (summary.aggregation for a column summary.csv keeps); ""
# for the columns that name the case. OWN_NOTE: a column whose note (shown where the column
# has figures) says it.
# test_column_aggregation.py recomputes every aggregated column from the records by its phrase.
OWN_NOTE = "its own note"
TABLE_COLUMNS = [
    ("stack", ""), ("conn", ""), ("tool", ""), ("cores", ""), ("quota", ""),
    ("rate", aggregation("rate")),
    ("runs", "the rounds that did not fail"),
    ("req/s (median)", aggregation("rps_median")),
    ("limited by", "the verdict most rounds had, with each verdict's count where they differ"),
    ("CV", "the sample standard deviation of the rounds' req/s over their mean"),
    ("% ceiling", OWN_NOTE),  # CEILING_SHARE_NOTE
    ("p50 ms", aggregation("latency_p50_ms")),
    ("p99 ms (rounds' range)", "the median, with the lowest and highest round"),
    ("max ms", aggregation("latency_max_ms")),
    ("errors", aggregation("errors_total")),
    ("MB/s", aggregation("mb_per_s")),
    ("header B", aggregation("header_bytes")),
    ("body B", aggregation("body_bytes")),
    ("CPU %", aggregation("server_cpu_mean_pct") + " (each round's mean)"),
    ("RSS MiB", aggregation("rss_peak_mb") + " (each round's peak)"),
    ("tool CPU %", aggregation("tool_cpu_pct")),
    ("TTFB p50 ms",
     aggregation("ttfb_p50_ms") + " (measured apart from the load, failed rounds included)"),
    ("flags", "how many of the rounds carry each"),
]  # fmt: skip
TABLE_HEAD = [head for head, _ in TABLE_COLUMNS]


def aggregation_note() -> str:
    """How the table's columns aggregate over the rounds, columns of one rule together."""
    columns: dict[str, list[str]] = {}
    for head, rule in TABLE_COLUMNS:
        if rule and rule != OWN_NOTE:
            columns.setdefault(rule, []).append(head)
    rules = "; ".join(f"{', '.join(heads)}: {rule}" for rule, heads in columns.items())
    return (
        f"How each column aggregates over a case's rounds (with one round, its figure): "
        f"{rules}. `summary.csv` also has the mean of the middle rounds (with three rounds or "
        f"more, highest and lowest dropped); docs/methodology.md, \"Statistics\", explains "
        f"each of its columns."
    )


def table_cells(row: dict) -> list[str]:
    flags = []
    if row["ceiling"]:
        flags.append("ceiling")
    if row["client_bound_runs"]:
        flags.append(f"CLIENT-BOUND ({row['client_bound_runs']}/{row['runs']})")
    if row.get("noisy_runs"):
        flags.append(f"NOISY ({row['noisy_runs']}/{row['runs']})")
    if row["failed_runs"]:
        flags.append(f"{row['failed_runs']} failed run(s)")
    if row["phase"] == "peak":
        flags.append("peak for open loop")
    if row.get("shared_cores"):
        flags.append("SHARED CORES")
    flags += row_flags(row)
    if row.get("_jit_unread_runs"):
        flags.append(f"{JIT_UNREAD} ({row['_jit_unread_runs']}/{row['runs']})")
    cv = f"{row['rps_cv'] * 100:.1f}%" if row["rps_cv"] is not None else "-"
    share = f"{row['share_of_ceiling'] * 100:.0f}%" if row["share_of_ceiling"] else "-"
    if row.get("ceiling_invalid"):
        share = "above: ceiling invalid"
    return [
        row["display_name"],
        str(row["connections"]),
        row["tool"] + (f" ({row['protocol']})" if row.get("protocol") else ""),
        fmt(row.get("server_cores")),
        fmt(row["cpu_quota"], 2) if row["cpu_quota"] is not None else "-",
        (
            f"{fmt(row['rate'])}/s"
            + (f" ({row['rate_spec']})" if row["rate_spec"].endswith("%") else "")
        )
        if row["rate_spec"]
        else "-",
        str(row["runs"]),
        fmt(row["rps_median"]) + figure_mark(row),
        limited_by(row),
        cv,
        share,
        fmt(row["latency_p50_ms"], latency_decimals(row["tool"])),
        p99_text(row),
        fmt(row["latency_max_ms"], min(1, latency_decimals(row["tool"]))),
        fmt(row["errors_total"]),
        fmt(row["mb_per_s"], 2),
        fmt(row["header_bytes"]),
        fmt(row["body_bytes"]),
        fmt(row["server_cpu_mean_pct"]),
        fmt(row["rss_peak_mb"], 1),
        fmt(row["tool_cpu_pct"]),
        fmt(row.get("ttfb_p50_ms"), 2),
        ", ".join(flags),
    ]


def unexplained(row: dict) -> bool:
    """A figure limited by neither side (an open loop's offered rate excepted)."""
    return row.get("verdict") == "neither" and row.get("cause") != "offered-rate"


def limited_by(row: dict) -> str:
    verdict = row.get("verdict")
    if not verdict:
        return "-"
    text = {"server-bound": "server", "client-bound": "client"}.get(verdict, f"neither: {row.get('cause')}")
    return text + (f" [{row['verdict_runs']}]" if row.get("verdict_runs") else "")


def stack_notes(outcomes: dict, run: dict) -> list[str]:
    notes = []
    for stack, entry in sorted(outcomes.items()):
        if entry.get("skipped"):
            notes.append(f"{stack}: skipped: {entry['skipped']}")
        for failure in entry.get("failures", []):
            notes.append(f"{stack}: {failure}")
        notes += [f"{stack}: {text}" for text in entry.get("drifted", [])]
        if entry.get("unclean_stops"):
            notes.append(
                f"{stack}: {entry['unclean_stops']} unclean stop(s): {entry.get('unclean_message', '')}"
            )
    return notes


def run_facts(run: dict) -> list[tuple[str, str]]:
    knobs = run.get("knobs", {})
    host = run.get("host", {})
    git = run.get("git", {})
    tools = run.get("tools", {})
    facts = [
        ("run", run.get("run_id", "?")),
        ("status", run.get("status", "?")),
        ("profile", f"{knobs.get('profile')} ({knobs.get('description', '')})"),
        ("started / finished", f"{run.get('started_at', '?')} / {run.get('finished_at', '-')}"),
        ("git commit", f"{git.get('commit', '?')}{' (uncommitted changes)' if git.get('dirty') else ''}"),
        ("host", f"{host.get('cpu_model', '?')}, {host.get('cores_logical', '?')} cores, "
                 f"{(host.get('memory_bytes') or 0) / 2**30:.1f} GiB, {host.get('os', '?')}, "
                 f"kernel {host.get('kernel', '?')}"),
        ("cores", f"server {knobs.get('server_cpus')}, client {knobs.get('client_cpus')} "
                  f"(wrk threads = client cores)"),
        ("load", f"duration {knobs.get('duration')} s, warm-up {knobs.get('warmup')} s, "
                 f"{knobs.get('repeat')} round(s) shuffled with seed {knobs.get('seed')}, "
                 f"timeout {knobs.get('timeout')} s"),
        ("limits", f"CPU quota {knobs.get('server_cpu_quota') or 'none'}, memory "
                   f"{knobs.get('server_memory') or 'no limit'}, runner {knobs.get('runner')} "
                   f"(load tools on: {run.get('client', {}).get('where', 'host')}), "
                   f"priority {run.get('priority_applied') or 'normal'}"),
        ("tools", ", ".join(f"{k}: {v}" for k, v in tools.items())),
    ]  # fmt: skip
    front = run.get("front") or {}
    if front.get("kind") == "self":
        who = ", ".join(f"{t} ({name})" for name, t in sorted(front.get("terminators", {}).items()))
        facts.append(
            ("TLS front", f"none: each stack serves HTTPS itself, TLS terminated by {who}")
        )
    elif front.get("terminators"):
        who = ", ".join(f"{name} (TLS terminated by {t})"
                        for name, t in sorted(front["terminators"].items()))  # fmt: skip
        facts.append(("TLS front", f"none; served over HTTPS by the stack itself: {who}"))
    elif front.get("kind", "none") != "none":
        behind = f"every stack behind {front['kind']} ({front.get('version')}) over HTTPS"
        facts.append(("TLS front", f"{behind}; config {front.get('template')}, rendered in "
                      "front/<stack>/"))  # fmt: skip
    return facts


def stack_table(run: dict) -> list[list[str]]:
    rows = []
    runtime = run.get("runtime_versions", {})
    for name, m in sorted(run.get("stacks", {}).items()):
        rows.append([
            m.get("display_name", name), m.get("language", ""),
            f"{m.get('framework', '')} {m.get('framework_version', '')}",
            f"{m.get('runtime', '')} {m.get('runtime_version', '')}",
            runtime.get(name, {}).get("runtime_native", "-"),
            m.get("concurrency", {}).get("kind", ""),
        ])  # fmt: skip
    return rows


HEADROOM_TARGET = 1.5
HEADROOM_HEAD = ["scenario", "conn", "tool", "best stack", "its req/s", "ceiling req/s", "ratio"]


def headroom(rows: list[dict]) -> list[list[str]]:
    """Ceiling / best stack per closed-loop case: how much room the harness had."""
    table = []
    cases = sorted({(r["scenario"], r["connections"], r["tool"]) for r in rows
                    if r["ceiling"] and not r["rate_spec"] and r["cpu_quota"] is None})  # fmt: skip
    for scenario, connections, tool in cases:
        same = [r for r in rows if (r["scenario"], r["connections"], r["tool"]) == (scenario, connections, tool)
                and not r["rate_spec"] and r["cpu_quota"] is None and r["rps_median"]]  # fmt: skip
        ceiling = next((r for r in same if r["ceiling"]), None)
        stacks = [r for r in same if not r["ceiling"]]
        if not ceiling or not stacks:
            continue
        best = max(stacks, key=rank_figure)
        ratio = rank_figure(ceiling) / rank_figure(best)
        mark = "" if ratio >= HEADROOM_TARGET else " (below 1.5: stacks near the harness limit)"
        verdict = "ceiling invalid: a stack beat it" if ratio < 1 else f"{ratio:.2f}x{mark}"
        table.append([scenario, str(connections), tool, best["display_name"],
                      fmt(rank_figure(best)), fmt(rank_figure(ceiling)), verdict])  # fmt: skip
    return table


HEADROOM_NOTE = (
    "Headroom: the nginx ceiling's requests/s divided by the best stack's, same scenario, "
    "connections, tool and cores, by the figure the leaderboard ranks by (the geometric mean "
    "of the rounds, or the median of one). Below 1.5 the fastest stacks are close to what this "
    "harness can measure on this host, and their differences mean little."
)

# ------------------------------------------------------------------ markdown


def md_table(head: list[str], rows: list[list[str]]) -> str:
    def clean(cell: str) -> str:
        return str(cell).replace("|", "\\|")

    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(clean(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def extra_notes(rows: list[dict]) -> list[str]:
    """Notes that apply only when the run has such measurements."""
    notes = []
    if any(r.get("share_of_ceiling") for r in rows):
        notes.append(CEILING_SHARE_NOTE)
    if any(r.get("ttfb_p50_ms") is not None for r in rows):
        notes.append(TTFB_NOTE)
    if any(r.get("shared_cores") for r in rows):
        notes.append(SHARED_NOTE)
    notes += flag_notes(rows)
    if any(r["tool"] == "h2load" for r in rows):
        notes.append(H2LOAD_NOTE)
    return notes


def figure_mark(row: dict) -> str:
    return " (?)" if unexplained(row) else ""


def boards(rows: list[dict]) -> list[tuple[str, list[list[str]]]]:
    return leaderboards(rows, limited_by, figure_mark)


def report_run(run: dict) -> str:
    """What `make report RUN=` takes to write this run's pages again."""
    return run.get("_report_run", run.get("run_id", ""))


def markdown(rows: list[dict], outcomes: dict, run: dict,
             charts: dict[str, list[Path]] | None) -> str:  # fmt: skip
    """summary.md; `charts` None: not drawn (a committed run keeps its text alone), and
    the page says how to draw them."""
    out = [f"# serverlab results: {run.get('run_id', '')}", ""]
    if charts is None:
        out += [f"Charts are not kept with this copy of the run: `make report "
                f"RUN={report_run(run)}` draws them.", ""]
        charts = {}
    ranked = boards(rows)
    if ranked:
        out += ["## Leaderboard", "", leaderboard_note(run)]
        for title, cells in ranked:
            out += ["", f"### {title}", "", md_table(LEADERBOARD_HEAD, cells)]
        out += ["", "## This run", ""]
    out += [f"- **{k}**: {v}" for k, v in run_facts(run)]
    out += ["", "## Notes", "", f"- {VERDICT_NOTE}", f"- {CO_NOTE}", f"- {CLIENT_BOUND_NOTE}", f"- {NOISY_NOTE}",
            f"- {aggregation_note()}"]  # fmt: skip
    out += [f"- {note}" for note in extra_notes(rows)]
    notes = stack_notes(outcomes, run)
    if notes:
        out += ["", "## Stacks with problems", ""] + [f"- {n}" for n in notes]
    room = headroom(rows)
    if room:
        out += [
            "",
            "## Headroom of the harness",
            "",
            HEADROOM_NOTE,
            "",
            md_table(HEADROOM_HEAD, room),
        ]
    sustained = slo_tables(rows)
    if sustained:
        out += ["", "## Sustainable throughput", "", SLO_NOTE]
        for title, cells in sustained:
            out += ["", f"### {title}", "", md_table(SLO_HEAD, cells)]
    for scenario, group in scenario_groups(rows):
        out += ["", f"## {scenario}", "", md_table(TABLE_HEAD, [table_cells(r) for r in group])]
        for chart in charts.get(scenario, []):
            out += ["", f"![{chart.stem}](charts/{chart.name})"]
    if charts.get("resources"):
        out += ["", "## Resources and bytes", ""]
        out += [f"![{c.stem}](charts/{c.name})" for c in charts["resources"]]
    stacks = stack_table(run)
    if stacks:
        out += ["", "## Stacks", "", md_table(
            ["stack", "language", "framework", "runtime (image)", "runtime (native)", "concurrency"],
            stacks)]  # fmt: skip
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------- html

CSS = """
body { font-family: -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif; margin: 2em auto;
       max-width: 1250px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: .2em; }
table { border-collapse: collapse; font-size: 12px; margin: .8em 0; }
th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; } td:first-child, th:first-child { text-align: left; }
td.flags { text-align: left; color: #a05a00; }
td.flags, td:last-child { white-space: normal; min-width: 14em; text-align: left; }
tr.ceiling td { background: #f7f7f7; font-style: italic; }
.facts td { text-align: left; white-space: normal; }
.note { background: #fff8e6; border-left: 4px solid #f0b400; padding: .5em 1em; margin: .6em 0; }
.problem { background: #fdecec; border-left: 4px solid #d33; padding: .5em 1em; margin: .6em 0; }
img { max-width: 100%; border: 1px solid #eee; margin: .6em 0; display: block; }
.scroll { overflow-x: auto; }
"""


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}">'


# A section of more captioned tables than this shows the first ones and folds the rest.
OPEN_TABLES = 6


def _html_tables(heading: str, note: str, tables: list, head: list[str], classes=None) -> list[str]:
    """A section of captioned tables under one heading and note; nothing when there is none.
    `classes(cells)` gives each row's CSS class."""
    if not tables:
        return []
    section = [f"<h2>{html.escape(heading)}</h2>", f"<p>{html.escape(note)}</p>"]
    flag_col = head.index("flagged rounds") if "flagged rounds" in head else None
    for number, (caption, cells) in enumerate(tables):
        row_classes = classes(cells) if classes else None
        table = f"<h3>{html.escape(caption)}</h3>" + _html_table(head, cells, row_classes, flag_col)
        if number >= OPEN_TABLES:
            # A sweep's many tables fold, so that its charts are not pages away.
            table = f"<details><summary>{html.escape(caption)}</summary>{table}</details>"
        section.append(table)
    return section


def _html_table(head: list[str], rows: list[list[str]], row_classes=None, flag_col=None) -> str:
    parts = ['<div class="scroll"><table><thead><tr>']
    parts += [f"<th>{html.escape(h)}</th>" for h in head]
    parts.append("</tr></thead><tbody>")
    for i, row in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        parts.append(f"<tr{cls}>")
        for j, cell in enumerate(row):
            cell_cls = ' class="flags"' if flag_col is not None and j == flag_col else ""
            parts.append(f"<td{cell_cls}>{html.escape(str(cell))}</td>")
        parts.append("</tr>")
    parts.append("</tbody></table></div>")
    return "".join(parts)


def _static_charts(paths: list[Path], figures: list[dict]) -> list[str]:
    """The PNGs of the charts not drawn live: a figure drawn live (its id is its PNG's
    stem) stays in charts/ and summary.md, not twice in the page."""
    live = {figure["id"] for figure in figures}
    return [_img(path) for path in paths if path.stem not in live]


def html_report(rows: list[dict], outcomes: dict, run: dict, charts: dict[str, list[Path]],
                figures: dict[str, list[dict]] | None = None) -> str:  # fmt: skip
    figures = figures or {}
    title = f"serverlab results: {run.get('run_id', '')}"
    body = [f"<h1>{html.escape(title)}</h1>"]
    ranked = boards(rows)
    body += _html_tables("Leaderboard", leaderboard_note(run), ranked, LEADERBOARD_HEAD,
                         lambda cells: ["ceiling" if c[0] == "-" else "" for c in cells])
    if ranked:
        body.append("<h2>This run</h2>")
    facts = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
        for k, v in run_facts(run)
    )
    body.append(f'<table class="facts">{facts}</table>')
    body.append(f'<div class="note">{html.escape(VERDICT_NOTE)}</div>')
    body.append(f'<div class="note">{html.escape(CO_NOTE)}</div>')
    body.append(f'<div class="note">{html.escape(CLIENT_BOUND_NOTE)}</div>')
    body.append(f'<div class="note">{html.escape(aggregation_note())}</div>')
    body += [f'<div class="note">{html.escape(note)}</div>' for note in extra_notes(rows)]
    if any(r.get("noisy_runs") for r in rows):
        body.append(f'<div class="problem">{html.escape(NOISY_NOTE)}</div>')
    for note in stack_notes(outcomes, run):
        body.append(f'<div class="problem">{html.escape(note)}</div>')
    room = headroom(rows)
    if room:
        body.append("<h2>Headroom of the harness</h2>")
        body.append(f"<p>{html.escape(HEADROOM_NOTE)}</p>")
        body.append(_html_table(HEADROOM_HEAD, room))
    if run.get("status") == "interrupted":
        body.append('<div class="problem">This run was interrupted: the tables show what was '
                    "measured before it stopped.</div>")  # fmt: skip
    if not rows:
        body.append('<div class="problem">No measurement in this run.</div>')
    body += _html_tables("Sustainable throughput", SLO_NOTE, slo_tables(rows), SLO_HEAD)
    for scenario, group in scenario_groups(rows):
        body.append(f"<h2>{html.escape(scenario)}</h2>")
        body.append(_html_table(TABLE_HEAD, [table_cells(r) for r in group],
                                ["ceiling" if r["ceiling"] else "" for r in group],
                                flag_col=len(TABLE_HEAD) - 1))  # fmt: skip
        body += [chart_div(figure) for figure in figures.get(scenario, [])]
        body += _static_charts(charts.get(scenario, []), figures.get(scenario, []))
    if charts.get("resources"):
        body.append("<h2>Resources and bytes per response</h2>")
        body += [_img(chart) for chart in charts["resources"]]
    stacks = stack_table(run)
    if stacks:
        body.append("<h2>Stacks</h2>")
        body.append(_html_table(
            ["stack", "language", "framework", "runtime (image)", "runtime (native)", "concurrency"],
            stacks))  # fmt: skip
    again = report_run(run)
    raw = "raw tool outputs are in <code>raw/</code>, " if run.get("_has_raw", True) else ""
    body.append(f"<p>Regenerate with <code>make report RUN={html.escape(again)}</code>; {raw}"
                "every measurement is in <code>results.jsonl</code>, provenance in "
                "<code>run.json</code>.</p>")  # fmt: skip
    drawn = [figure for group in figures.values() for figure in group]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"{OFFLINE_META}"
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head>"
        f"<body>{''.join(body)}{scripts(drawn)}</body></html>\n"
    )
