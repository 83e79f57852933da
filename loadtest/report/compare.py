"""Two runs side by side: `make compare RUNS=<old>,<new>`.

Per stack x scenario x connections (x tool, rate, quota, cores, phase) found
in both runs: the ratio new/old of the median requests/s with a 95%
bootstrap interval (core/stats.py `ratio_ci`) over the samples of each side
(report/samples.py: the rounds, or the windows of a one-round run). A case
is called a regression or an improvement only when the interval excludes 1
(and, with 4 or more rounds on each side, Mann-Whitney U agrees at
p < 0.05); anything else is "no significant change". A side with one round
has only the windows of that run: the change is shown, not tested. Then what differs
between the runs: commit, runtime and tool versions, dependencies, knobs
and host. Written to results/compare-<old>-vs-<new>/compare.md and .html.
"""

from __future__ import annotations

import html
import json
import statistics
from collections import defaultdict
from pathlib import Path

from loadtest.bench.results import RESULTS_FILE, RUN_FILE, read_records
from loadtest.core.stats import mann_whitney_p, ratio_ci
from loadtest.report.interactive import OFFLINE_META, chart_div, ratio_chart, scripts
from loadtest.report.leaderboard import MWU_MIN_SAMPLES, SIGNIFICANCE
from loadtest.report.samples import ROUNDS, rps_samples

HEAD = ["stack", "scenario", "conn", "tool/rate", "old req/s", "new req/s", "new/old",
        "95% interval", "verdict", "samples"]  # fmt: skip


class CompareError(Exception):
    """A run that cannot be compared: the message says which and why."""


def case_key(record: dict) -> tuple:
    return (record["stack"], record["scenario"], record["connections"], record["tool"],
            record.get("rate_spec", ""), record.get("cpu_quota"), record.get("server_cores"),
            record.get("phase", "measure"))  # fmt: skip


def load_run(folder: Path) -> tuple[dict, dict[tuple, list[dict]]]:
    """run.json and the successful measurement records per case."""
    if not folder.is_dir():
        raise CompareError(f"no run folder {folder}")
    if not (folder / RESULTS_FILE).is_file():
        raise CompareError(f"{folder.name}: no {RESULTS_FILE} (a run that measured nothing)")
    try:
        run = json.loads((folder / RUN_FILE).read_text())
    except (OSError, ValueError):
        run = {"run_id": folder.name}
    cases: dict[tuple, list[dict]] = defaultdict(list)
    for record in read_records(folder / RESULTS_FILE):
        if record.get("kind") == "measurement" and record.get("status") == "ok":
            cases[case_key(record)].append(record)
    if not cases:
        raise CompareError(f"{folder.name}: no successful measurement to compare")
    return run, cases


def judge(old: list[float], new: list[float], rounds: bool = True) -> tuple[float, tuple | None, str]:
    """(ratio of medians, its interval, verdict) for one case. `rounds`: both sides'
    samples are rounds; windows of one run do not show run-to-run noise, so a
    change between one-round runs is shown but not tested."""
    ratio = statistics.median(new) / statistics.median(old)
    interval = ratio_ci(old, new)
    if not rounds:
        return ratio, interval, "not tested (one round on a side: REPEAT >= 3)"
    if interval is None:
        return ratio, None, "no significant change (one sample each: no interval)"
    low, high = interval
    if low > 1 or high < 1:
        verdict = "improvement" if low > 1 else "regression"
        if len(old) >= MWU_MIN_SAMPLES and len(new) >= MWU_MIN_SAMPLES:
            p = mann_whitney_p(old, new)
            if p is None or p >= SIGNIFICANCE:
                return ratio, interval, f"no significant change (MWU p={p:.3f})"
            verdict += f" (MWU p={p:.3f})"
        return ratio, interval, verdict
    return ratio, interval, "no significant change"


def compared_cases(old: dict, new: dict) -> list[dict]:
    """Each case found in both runs with its medians, ratio, interval and verdict."""
    cases = []
    for key in sorted(set(old) & set(new), key=str):
        (before, source_a), (after, source_b) = rps_samples(old[key]), rps_samples(new[key])
        if not before or not after or statistics.median(before) <= 0:
            continue
        ratio, interval, verdict = judge(before, after, source_a == source_b == ROUNDS)
        stack, scenario, connections, tool, rate, quota, cores, phase = key
        shown = tool + (f" @{rate}" if rate else "") + (f" q{quota:g}" if quota else "")
        shown += f" ({phase})" if phase != "measure" else ""
        cases.append({
            "stack": stack, "scenario": scenario, "connections": connections, "tool": shown,
            "label": f"{scenario} c={connections} {shown}",
            "old": statistics.median(before), "new": statistics.median(after),
            "ratio": ratio, "interval": interval, "verdict": verdict,
            "samples": f"{len(before)} / {len(after)} ({source_a} / {source_b})",
        })  # fmt: skip
    return cases


def case_cells(case: dict) -> list[str]:
    interval = case["interval"]
    return [
        case["stack"], case["scenario"], str(case["connections"]), case["tool"],
        f"{case['old']:,.0f}", f"{case['new']:,.0f}", f"{case['ratio']:.3f}",
        f"{interval[0]:.3f} - {interval[1]:.3f}" if interval else "-",
        case["verdict"], case["samples"],
    ]  # fmt: skip


def only_in(one: dict, other: dict) -> list[str]:
    return sorted(" ".join(str(part) for part in key[:4]) for key in set(one) - set(other))


def differences(old: dict, new: dict) -> list[str]:
    """What changed between the runs' provenance, one line per fact."""
    lines = []

    def differ(label: str, a, b) -> None:
        if a != b:
            lines.append(f"{label}: {a!r} -> {b!r}")

    differ("commit", (old.get("git") or {}).get("commit"), (new.get("git") or {}).get("commit"))
    differ("uncommitted changes", (old.get("git") or {}).get("dirty"),
           (new.get("git") or {}).get("dirty"))  # fmt: skip
    for field in ("cpu_model", "cores_available", "kernel", "os", "memory_bytes"):
        differ(f"host {field}", (old.get("host") or {}).get(field),
               (new.get("host") or {}).get(field))  # fmt: skip
    old_knobs, new_knobs = old.get("knobs") or {}, new.get("knobs") or {}
    for knob in sorted(set(old_knobs) | set(new_knobs)):
        if knob not in ("sources", "seed", "servers_from_profile"):
            differ(f"knob {knob}", old_knobs.get(knob), new_knobs.get(knob))
    for tool in sorted(set(old.get("tools") or {}) | set(new.get("tools") or {})):
        differ(f"tool {tool}", (old.get("tools") or {}).get(tool), (new.get("tools") or {}).get(tool))
    old_rt, new_rt = old.get("runtime_versions") or {}, new.get("runtime_versions") or {}
    for stack in sorted(set(old_rt) & set(new_rt)):
        differ(f"{stack} runtime", old_rt[stack], new_rt[stack])
    old_stacks, new_stacks = old.get("stacks") or {}, new.get("stacks") or {}
    for stack in sorted(set(old_stacks) & set(new_stacks)):
        before = set((old_stacks[stack] or {}).get("dependencies") or [])
        after = set((new_stacks[stack] or {}).get("dependencies") or [])
        if before != after:
            lines.append(f"{stack} dependencies: -{sorted(before - after)} +{sorted(after - before)}")
    return lines


def compare(old_folder: Path, new_folder: Path, out_root: Path) -> Path:
    """Write the comparison; returns its folder. Raises CompareError."""
    old_run, old_cases = load_run(old_folder)
    new_run, new_cases = load_run(new_folder)
    cases = compared_cases(old_cases, new_cases)
    rows = [case_cells(case) for case in cases]
    changes = differences(old_run, new_run)
    gone, added = only_in(old_cases, new_cases), only_in(new_cases, old_cases)
    folder = out_root / f"compare-{old_folder.name}-vs-{new_folder.name}"
    folder.mkdir(parents=True, exist_ok=True)
    title = f"serverlab comparison: {old_folder.name} -> {new_folder.name}"
    (folder / "compare.md").write_text(markdown(title, rows, changes, gone, added))
    (folder / "compare.html").write_text(page(title, rows, changes, gone, added, ratio_chart(cases)))
    return folder


def counts(rows: list[list[str]]) -> str:
    verdicts = [row[8].split(" (")[0] for row in rows]
    kinds = ("regression", "improvement", "no significant change", "not tested")
    return ", ".join(f"{verdicts.count(kind)} {kind}" for kind in kinds)


NOTE = ("new/old is the ratio of median requests/s; its 95% interval is a bootstrap over each "
        "side's rounds. A case is a regression or an improvement only when the interval excludes 1 "
        "(and Mann-Whitney U agrees, p < 0.05, with 4 or more rounds each); 3 rounds against 3 "
        "often cannot tell. A one-round run has only the windows of that run, which do not show "
        "run-to-run noise (10-15% on a shared host): its changes are shown, not tested.")  # fmt: skip


def markdown(title, rows, changes, gone, added) -> str:
    out = [f"# {title}", "", NOTE, "", f"{len(rows)} cases in both runs: {counts(rows)}.", ""]
    out += ["| " + " | ".join(HEAD) + " |", "|" + " --- |" * len(HEAD)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    out += ["", "## What changed between the runs", ""]
    out += [f"- {line}" for line in changes] or ["- nothing recorded differs"]
    if gone or added:
        out += ["", "## Cases in one run only", ""]
        out += [f"- only in the old run: {c}" for c in gone] + [f"- only in the new run: {c}" for c in added]
    return "\n".join(out) + "\n"


def page(title, rows, changes, gone, added, chart: dict | None) -> str:
    def table(head, body):
        cells = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                        for row in body)  # fmt: skip
        return ("<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head)
                + f"</tr></thead><tbody>{cells}</tbody></table>")  # fmt: skip

    items = "".join(f"<li>{html.escape(line)}</li>" for line in changes) or "<li>nothing</li>"
    one_side = "".join(f"<li>only in the old run: {html.escape(c)}</li>" for c in gone)
    one_side += "".join(f"<li>only in the new run: {html.escape(c)}</li>" for c in added)
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}"
             "td,th{border:1px solid #ddd;padding:3px 6px}th{background:#f4f4f4}")  # fmt: skip
    figures = [chart] if chart else []
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">{OFFLINE_META}<title>'
            f"{html.escape(title)}</title><style>{style}</style></head><body>"
            f"<h1>{html.escape(title)}</h1><p>{html.escape(NOTE)}</p>"
            f"<p>{len(rows)} cases in both runs: {html.escape(counts(rows))}.</p>"
            + "".join(chart_div(figure) for figure in figures) + table(HEAD, rows) + f"<h2>What changed between the runs</h2><ul>{items}</ul>"
            + (f"<h2>Cases in one run only</h2><ul>{one_side}</ul>" if one_side else "")
            + scripts(figures) + "</body></html>\n")  # fmt: skip
