"""Two runs side by side: `make compare RUNS=<old>,<new>`.

Per stack x scenario x connections (x tool, rate, phase, and quota and server
cores when a run sweeps them) found in both runs: the ratio new/old of the
rounds' geometric means, its 95% interval and a verdict by the rule of
core/change.py (Welch's t-test on log requests/s with each side's run-to-run
spread when the runs are separate, Benjamini-Hochberg over the comparison's
cases, a floor, the detection limit beside every verdict that is not a change;
sides of fewer than three rounds are shown, not tested), and the flags of each
side's rounds (left out with `leave_out_flagged`). A quota or core count that is the same for every case of a run is a
setting of the run, not a case: two runs that differ in it are compared case
by case, and the setting is listed with what changed. Then what differs
between the runs: commit, runtime and tool versions, dependencies, knobs and
host; and what A/A runs on the same host showed (report/noise.py). Written to
results/compare-<old>-vs-<new>/compare.md and .html.
"""

from __future__ import annotations

import html
import json
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from loadtest.bench.results import RESULTS_FILE, RUN_FILE, read_records
from loadtest.core.change import (
    MIN_EFFECT,
    MIN_ROUNDS,
    MORE_ROUNDS,
    VERDICTS,
    Samples,
    judge_all,
    two_states_text,
)
from loadtest.report.flags import TWO_STATES, flags_text, mark_rounds
from loadtest.report.interactive import OFFLINE_META, chart_div, ratio_chart, scripts
from loadtest.report.noise import WITHIN, RunToRun, host_noise, noise_line, run_to_run
from loadtest.report.samples import ROUNDS, rps_samples

HEAD = ["stack", "scenario", "conn", "tool/rate", "old req/s (median)", "new req/s (median)",
        "new/old", "95% interval", "verdict", "samples", "flagged rounds (old; new)"]  # fmt: skip


class CompareError(Exception):
    """A run that cannot be compared: the message says which and why."""


def case_key(record: dict) -> tuple:
    return (record["stack"], record["scenario"], record["connections"], record["tool"],
            record.get("rate_spec", ""), record.get("cpu_quota"), record.get("server_cores"),
            record.get("phase", "measure"))  # fmt: skip


QUOTA, CORES = 5, 6  # the places of the sweepable settings in case_key


def settings_of_the_run(cases: dict[tuple, list[dict]]) -> dict[tuple, list[dict]]:
    """The cases keyed without the quota and the core count of each stack that has one
    value of it in the run (a setting of the run for that stack, not a dimension of its
    cases; the uncapped ceiling beside a capped stack does not make it a sweep)."""
    for place in (QUOTA, CORES):
        values: dict[str, set] = defaultdict(set)
        for key in cases:
            values[key[0]].add(key[place])
        cases = {
            (key[:place] + (None,) + key[place + 1:] if len(values[key[0]]) == 1 else key): rows
            for key, rows in cases.items()
        }
    return cases


def load_run(folder: Path, leave_out_flagged: bool = False) -> tuple[dict, dict[tuple, list[dict]]]:
    """run.json and the successful measurement records per case, each with its flags
    (`_flags`); with `leave_out_flagged`, the flagged rounds left out (their count in
    run["_left_out"])."""
    if not folder.is_dir():
        raise CompareError(f"no run folder {folder}")
    if not (folder / RESULTS_FILE).is_file():
        if (folder / "summary.csv").is_file():
            raise CompareError(f"{folder.name}: no {RESULTS_FILE}: this copy of the run kept "
                               "its summary alone, not the rounds a comparison tests")  # fmt: skip
        raise CompareError(f"{folder.name}: no {RESULTS_FILE} (a run that measured nothing)")
    try:
        run = json.loads((folder / RUN_FILE).read_text())
    except (OSError, ValueError):
        run = {"run_id": folder.name}
    cases: dict[tuple, list[dict]] = defaultdict(list)
    records, run["_left_out"] = mark_rounds(read_records(folder / RESULTS_FILE), leave_out_flagged)
    for record in records:
        if record.get("kind") == "measurement" and record.get("status") == "ok":
            cases[case_key(record)].append(record)
    if not cases:
        raise CompareError(f"{folder.name}: no successful measurement to compare")
    return run, cases


def case_name(key: tuple) -> str:
    """A case as `make aa` names its run-to-run spread: stack, scenario, connections, tool."""
    stack, scenario, connections, tool = key[:4]
    return f"{stack} {scenario} c={connections} {tool}"


def compared_cases(old: dict, new: dict, spread: RunToRun = WITHIN) -> list[dict]:
    """Each case found in both runs with its medians, ratio, interval and verdict,
    judged together (core/change.py), and its sides' flagged rounds."""
    found = []
    for key in sorted(set(old) & set(new), key=str):
        (before, source_a), (after, source_b) = rps_samples(old[key]), rps_samples(new[key])
        if before and after and statistics.median(before) > 0:
            rounds = source_a == source_b == ROUNDS
            found.append((key, Samples(before, after, rounds, spread.sd(case_name(key))),
                          f"{len(before)} / {len(after)} ({source_a} / {source_b})"))  # fmt: skip
    judged = judge_all([samples for _, samples, _ in found])
    cases = []
    for (key, samples, counted), difference in zip(found, judged, strict=True):
        stack, scenario, connections, tool, rate, quota, cores, phase = key
        shown = tool + (f" @{rate}" if rate else "") + (f" q{quota:g}" if quota else "")
        shown += f" ({phase})" if phase != "measure" else ""
        cases.append({
            "stack": stack, "scenario": scenario, "connections": connections, "tool": shown,
            "label": f"{scenario} c={connections} {shown}", "name": case_name(key),
            "old": statistics.median(samples.old), "new": statistics.median(samples.new),
            "ratio": difference.ratio, "interval": difference.interval,
            "verdict": difference.text, "change": difference.verdict, "samples": counted,
            "is_change": difference.is_change,
            "limit": difference.limit,
            "flagged": f"{side_flags(old[key], samples.old)}; {side_flags(new[key], samples.new)}",
        })  # fmt: skip
    return cases


def side_flags(rows: list[dict], rates: list[float]) -> str:
    """One side's flagged rounds, and its two states when its rounds fell into two."""
    states = two_states_text(rates) if len(rates) == len(rows) else ""
    text = ", ".join(part for part in (flags_text(rows), states and f"{TWO_STATES} ({states})")
                     if part)  # fmt: skip
    return text or "-"


def case_cells(case: dict) -> list[str]:
    interval = case["interval"]
    return [
        case["stack"], case["scenario"], str(case["connections"]), case["tool"],
        f"{case['old']:,.0f}", f"{case['new']:,.0f}", f"{case['ratio']:.3f}",
        f"{interval[0]:.3f} - {interval[1]:.3f}" if interval else "-",
        case["verdict"], case["samples"], case["flagged"],
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
        if knob not in ("sources", "seed", "servers_from_profile", "description"):
            # An empty knob and one the older run did not record are the same: unset.
            before, after = (knobs.get(knob) for knobs in (old_knobs, new_knobs))
            differ(f"knob {knob}", "" if before is None else before, "" if after is None else after)
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


@dataclass(frozen=True)
class Comparison:
    title: str
    cases: list[dict]
    changes: list[str]  # what differs between the runs' provenance
    gone: list[str]
    added: list[str]
    noise: str  # what A/A runs on this host showed
    unit: str  # one invocation or separate runs, and the run-to-run spread used
    left_out: str  # the flagged rounds left out, or ""
    caution: str = ""  # the settings the runs differ in, when they do

    @property
    def rows(self) -> list[list[str]]:
        return [case_cells(case) for case in self.cases]

    @property
    def counts(self) -> str:
        verdicts = [case["change"] for case in self.cases]
        return ", ".join(f"{kind} {verdicts.count(kind)}" for kind in VERDICTS)

    def in_both(self) -> str:
        """The count line: '3 cases in both runs, by verdict: regression 1, ...'."""
        n = len(self.cases)
        return f"{n} case{'' if n == 1 else 's'} in both runs, by verdict: {self.counts}"


def compare(old_folder: Path, new_folder: Path, out_root: Path,
            leave_out_flagged: bool = False) -> Path:  # fmt: skip
    """Write the comparison; returns its folder. Raises CompareError."""
    old_run, old_cases = load_run(old_folder, leave_out_flagged)
    new_run, new_cases = load_run(new_folder, leave_out_flagged)
    old_cases, new_cases = settings_of_the_run(old_cases), settings_of_the_run(new_cases)
    # The host's A/As: in the results folder, and beside either run (committed ones).
    evidence = list(dict.fromkeys([out_root, old_folder.parent, new_folder.parent]))
    spread = run_to_run(evidence, old_run, new_run)
    left_out = old_run["_left_out"] + new_run["_left_out"]
    if not set(old_cases) & set(new_cases):
        raise CompareError(f"{old_folder.name} and {new_folder.name} share no case (stack, "
                           "scenario, connections, tool, rate, quota, cores): nothing to compare")  # fmt: skip
    changes = differences(old_run, new_run)
    result = Comparison(
        f"serverlab comparison: {old_folder.name} -> {new_folder.name}",
        compared_cases(old_cases, new_cases, spread), changes,
        only_in(old_cases, new_cases), only_in(new_cases, old_cases),
        noise_line(host_noise(evidence, new_run), new_run), f"The unit: {spread.source}.",
        left_out_line(left_out, leave_out_flagged), caution(changes),
    )  # fmt: skip
    return write_comparison(result, out_root / f"compare-{old_folder.name}-vs-{new_folder.name}")


def left_out_line(count: int, leave_out_flagged: bool) -> str:
    """How many flagged rounds FLAGGED=leave-out left out ("" when it was not asked)."""
    return f"{count} flagged rounds left out (FLAGGED=leave-out)." if leave_out_flagged else ""


def write_comparison(result: Comparison, folder: Path) -> Path:
    """compare.md and compare.html into `folder`; returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "compare.md").write_text(markdown(result))
    (folder / "compare.html").write_text(page(result, ratio_chart(result.cases)))
    return folder


def compare_stacks(folder: Path, old_stack: str, new_stack: str, out_root: Path,
                   leave_out_flagged: bool = False) -> Path:  # fmt: skip
    """Two stacks of one run compared case by case, `old_stack` as old: what the
    leaderboard's gap says of neighbours, for any pair (one invocation: the run's offset
    falls on both). Writes compare-<run>-<old>-vs-<new>/ under `out_root`; returns its
    folder. Raises CompareError."""
    run, cases = load_run(folder, leave_out_flagged)
    cases = settings_of_the_run(cases)
    present = sorted({key[0] for key in cases})
    missing = [stack for stack in (old_stack, new_stack) if stack not in present]
    if missing or old_stack == new_stack:
        raise CompareError(f"{folder.name}: give two of its stacks, old first "
                           f"({'no ' + ', '.join(missing) + '; ' if missing else ''}"
                           f"it measured {', '.join(present)})")  # fmt: skip
    pair = f"{new_stack} / {old_stack}"
    old, new = side_cases(cases, old_stack, pair), side_cases(cases, new_stack, pair)
    if not set(old) & set(new):
        raise CompareError(f"{folder.name}: {old_stack} and {new_stack} share no case "
                           "(scenario, connections, tool, rate, quota, cores)")  # fmt: skip
    result = Comparison(
        f"serverlab comparison: {old_stack} as old -> {new_stack} as new, run {folder.name}",
        compared_cases(old, new, WITHIN), stack_lines(run, old_stack, new_stack),
        only_in(old, new), only_in(new, old),
        noise_line(host_noise([out_root, folder.parent], run), run),
        f"The unit: {WITHIN.source}. The comparisons are corrected together as this pair's "
        "cases; the leaderboard corrects each gap with every other gap of the run.",
        left_out_line(run["_left_out"], leave_out_flagged),
    )  # fmt: skip
    return write_comparison(result, out_root / f"compare-{folder.name}-{old_stack}-vs-{new_stack}")


def stack_lines(run: dict, *stacks: str) -> list[str]:
    """Each stack with the runtime it ran on, as run.json recorded it."""
    runtimes = run.get("runtime_versions") or {}
    return [f"{stack}: " + (", ".join(str(v) for v in (runtimes.get(stack) or {}).values())
                            or "no runtime recorded") for stack in stacks]  # fmt: skip


# An A/B run's comparison of its sides, in the run's own folder.
AB_FILE, AB_PAGE = "ab.md", "ab.html"


def compare_sides(folder: Path, leave_out_flagged: bool = False, drawn: bool = True,
                  aa_root: Path | None = None) -> Path:  # fmt: skip
    """An A/B run's sides compared (`make ab`), A as old and B as new, in the run's folder
    (ab.md, and ab.html when `drawn`); returns the markdown's path. The host's A/A runs are
    looked for beside the run, or under `aa_root`. Raises CompareError."""
    run, cases = load_run(folder, leave_out_flagged)
    ab = run.get("ab")
    if not ab:
        raise CompareError(f"{folder.name}: not an A/B run (run.json has no \"ab\")")
    sides = ab["sides"]
    cases = settings_of_the_run(cases)
    old = side_cases(cases, sides["A"]["stack_id"], ab["stack"])
    new = side_cases(cases, sides["B"]["stack_id"], ab["stack"])
    paired = {key: old[partner] for key in new if (partner := partner_key(key, old))}
    partners = dict.fromkeys(partner_key(key, old) for key in paired)
    result = Comparison(
        f"serverlab A/B: {ab['stack']}, A ({sides['A']['describe']}) as old -> "
        f"B ({sides['B']['describe']}) as new, run {folder.name}",
        compared_cases(paired, new, WITHIN),
        side_differences(run, sides),
        only_in(old, partners), only_in(new, paired),
        noise_line(host_noise(aa_root or folder.parent, run), run),
        f"The unit: {WITHIN.source}; the rounds alternate the sides, each start fresh, in the "
        "order the run's seed shuffled, beside the nginx ceiling.",
        left_out_line(run["_left_out"], leave_out_flagged),
    )  # fmt: skip
    (folder / AB_FILE).write_text(markdown(result))
    if drawn:
        (folder / AB_PAGE).write_text(page(result, ratio_chart(result.cases)))
    return folder / AB_FILE


def side_differences(run: dict, sides: dict) -> list[str]:
    """What each side is, then what differs between their runtimes and dependencies."""
    lines = [f"{name}: {side['describe']}" + (f" (commit {side['commit']})" if side["commit"] else "")
             for name, side in sorted(sides.items())]  # fmt: skip
    a, b = sides["A"]["stack_id"], sides["B"]["stack_id"]
    runtimes, stacks = run.get("runtime_versions") or {}, run.get("stacks") or {}
    if runtimes.get(a) != runtimes.get(b):
        lines.append(f"runtime: {runtimes.get(a)!r} -> {runtimes.get(b)!r}")
    before = set((stacks.get(a) or {}).get("dependencies") or [])
    after = set((stacks.get(b) or {}).get("dependencies") or [])
    if before != after:
        lines.append(f"dependencies: -{sorted(before - after)} +{sorted(after - before)}")
    return lines


def side_cases(cases: dict, side_id: str, stack: str) -> dict:
    """One side's cases, keyed under the stack's own name."""
    return {(stack, *key[1:]): rows for key, rows in cases.items() if key[0] == side_id}


def partner_key(key: tuple, other: dict) -> tuple | None:
    """The other side's case for `key`: the same case, or, when the other side ran at one
    quota (its key holds none), the same case at that quota."""
    if key in other:
        return key
    uncapped = key[:QUOTA] + (None,) + key[QUOTA + 1:]
    return uncapped if uncapped in other else None


NOTE = (
    "new/old is the ratio of the rounds' geometric means, with its 95% interval (Welch's t on "
    "log requests/s, with each side's run-to-run spread when the runs are separate); the old "
    "and new columns are medians, shown for scale, and need not divide to it where the rounds "
    "disagree. A case is "
    "a regression or an improvement only when the test says so after the correction for "
    "testing every case at once (Benjamini-Hochberg, q < 0.05) and the change is beyond the "
    f"{MIN_EFFECT:.0%} floor; 'no change detected' only when the whole interval lies within "
    "the floor; a change beyond the floor that the rounds cannot confirm, or an interval that "
    "reaches past the floor, is 'cannot tell'. Beside every verdict that is not a change: the "
    "smallest change this "
    "comparison would detect with 80% power at its noise and rounds, at the significance the "
    f"correction would have asked of it, and at {MORE_ROUNDS} rounds a side. A side of fewer than "
    f"{MIN_ROUNDS} rounds is shown, not tested. 'flagged rounds' counts each side's rounds "
    "that carry a flag (COLD, DRIFTED, NOT-STEADY, client-bound...; docs/methodology.md); "
    "FLAGGED=leave-out compares without them."
)


def heads(result: Comparison) -> list[str]:
    """The sentences above the table: the rule, the unit, what A/A showed, what was left out."""
    return [line for line in (result.caution, NOTE, result.unit, result.noise, result.left_out)
            if line]  # fmt: skip


# What a comparison's two runs may differ in and still be compared, with a caution: the
# settings of the load and of the host. Anything else (commit, runtime, dependencies) is
# what a comparison is for.
SETTINGS = ("knob ", "tool ", "host ")
# Knobs that choose which cases run, not how: a case in one run only is listed apart.
CHOOSING_CASES = ("knob servers:", "knob scenarios:", "knob connections:")


def caution(changes: list[str]) -> str:
    """A sentence above the table when the runs were measured with other settings."""
    differ = [line for line in changes
              if line.startswith(SETTINGS) and not line.startswith(CHOOSING_CASES)]  # fmt: skip
    if not differ:
        return ""
    return (f"Measured with other settings ({'; '.join(differ)}): a difference below may be "
            "the settings', not the stacks'.")


def markdown(result: Comparison) -> str:
    rows = result.rows
    changes, gone, added = result.changes, result.gone, result.added
    out = [f"# {result.title}", ""]
    for line in heads(result):
        out += [line, ""]
    out += [f"{result.in_both()}.", ""]
    out += ["| " + " | ".join(HEAD) + " |", "|" + " --- |" * len(HEAD)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    out += ["", "## What differs between the two sides", ""]
    out += [f"- {line}" for line in changes] or ["- nothing recorded differs"]
    if gone or added:
        out += ["", "## Cases in one run only", ""]
        out += [f"- only in the old run: {c}" for c in gone] + [f"- only in the new run: {c}" for c in added]
    return "\n".join(out) + "\n"


def page(result: Comparison, chart: dict | None) -> str:
    title, rows, changes = result.title, result.rows, result.changes
    gone, added = result.gone, result.added

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
            f"<h1>{html.escape(title)}</h1>"
            + "".join(f"<p>{html.escape(line)}</p>" for line in heads(result)) +
            f"<p>{html.escape(result.in_both())}.</p>"
            + "".join(chart_div(figure) for figure in figures) + table(HEAD, rows) + f"<h2>What differs between the two sides</h2><ul>{items}</ul>"
            + (f"<h2>Cases in one run only</h2><ul>{one_side}</ul>" if one_side else "")
            + scripts(figures) + "</body></html>\n")  # fmt: skip
