"""A/A: runs of the same thing compared pair by pair with `make compare`'s rule.

Nothing changed between the runs, so every case called a regression or an
improvement is a false alarm: their share over every pair is the false-alarm
rate of the rule on this host, with the run-to-run spread `make compare` had
for these runs before this A/A (an earlier one's, or the default). Each case's
own run-to-run spread is then measured from the runs (`run_to_run`): what
`make compare` adds to the noise of two separate runs of the same host kind and
settings from then on. Written to results/aa-<first>-<last>/aa.json (read back
by `make compare`) and aa.md.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
from pathlib import Path

from loadtest.core.change import MIN_EFFECT, MIN_ROUNDS
from loadtest.core.stats import log_values, nearest_rank
from loadtest.report.aa_limits import detection_limits
from loadtest.report.aa_limits import markdown as limits_markdown
from loadtest.report.compare import (
    CompareError,
    case_name,
    compared_cases,
    differences,
    load_run,
)
from loadtest.report.noise import (
    AA_FILE,
    AA_PREFIX,
    default_spread,
    host_identity,
    matched_settings,
    measured_spread,
    run_to_run,
)
from loadtest.report.samples import ROUNDS, rps_samples

# Knobs that must agree for runs to be of "the same thing".
SAME_KNOBS = ("profile", "servers", "scenarios", "connections", "duration", "repeat", "tool",
              "tls_tool", "front", "server_cpus", "client_cpus", "runner")  # fmt: skip


def analyse(folders: list[Path], out_root: Path, leave_out_flagged: bool = False) -> Path:
    """Compare every pair of `folders` (oldest first); returns the A/A folder.
    Raises CompareError when fewer than two runs or runs of different things."""
    if len(folders) < 2:
        raise CompareError("A/A needs two runs or more")
    runs = [load_run(folder, leave_out_flagged) for folder in folders]
    first = runs[0][0]
    knobs = first.get("knobs") or {}
    for folder, (run, _) in zip(folders[1:], runs[1:], strict=True):
        different = [k for k in SAME_KNOBS if knobs.get(k) != (run.get("knobs") or {}).get(k)]
        if different or host_identity(run) != host_identity(first):
            what = ", ".join(different) or "host"
            raise CompareError(f"{folder.name} is not a run of the same thing ({what} differ)")
    folder = out_root / f"{AA_PREFIX}{folders[0].name}-{folders[-1].name}"
    pairs = []
    for (i, (old_run, old)), (j, (new_run, new)) in itertools.combinations(enumerate(runs), 2):
        spread = run_to_run(out_root, old_run, new_run, leave_out=folder.name)
        cases = compared_cases(old, new, spread)
        pairs.append({
            "old": folders[i].name, "new": folders[j].name,
            "cases": len(cases),
            "called": [f"{c['stack']} {c['label']}: {c['verdict']} ({c['ratio']:.3f})"
                       for c in cases if c["is_change"]],
            "ratios": [round(c["ratio"], 4) for c in cases],
            "differences": differences(old_run, new_run),
            "run_to_run_used": spread.source,
        })  # fmt: skip
    summary = summarize(folders, [run for run, _ in runs], pairs)
    measured = measured_run_to_run([cases for _, cases in runs], first)
    summary["run_to_run"] = measured
    # What `make compare` adds from now on for runs of these settings: this measurement.
    after = measured_spread(measured, folder.name) or default_spread(measured["matched_on"])
    summary["detection_limits"] = detection_limits([cases for _, cases in runs], measured, after)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / AA_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    (folder / "aa.md").write_text(markdown(summary))
    return folder


def summarize(folders: list[Path], run_files: list[dict], pairs: list[dict]) -> dict:
    compared = sum(p["cases"] for p in pairs)
    called = sum(len(p["called"]) for p in pairs)
    spread = sorted(abs(r - 1) for p in pairs for r in p["ratios"])
    first = run_files[0]
    knobs = first.get("knobs") or {}
    return {
        "measured_until": measured_until(run_files),
        "runs": [f.name for f in folders],
        "host_identity": list(host_identity(first)),
        "knobs_text": f"PROFILE={knobs.get('profile')} REPEAT={knobs.get('repeat')} "
                      f"SERVERS={','.join(knobs.get('servers') or []) or 'all'}",
        "pairs": len(pairs),
        "cases_compared": compared,
        "changes_called": called,
        "false_alarm_rate": called / compared if compared else math.nan,
        "floor": nearest_rank(spread, 95) if spread else math.nan,
        "largest_difference": spread[-1] if spread else math.nan,
        "min_effect_used": MIN_EFFECT,
        "by_pair": pairs,
    }


def measured_run_to_run(runs: list[dict], first: dict) -> dict:
    """Each case's run-to-run spread over the runs (sd of log requests/s of a run's offset)
    and their root mean square for a case not measured. The moment estimate of a one-way
    random-effects model: the variance of the runs' mean logs less what their own rounds
    explain, none when the rounds explain it all."""
    by_case = {}
    for key in sorted(set.intersection(*(set(run) for run in runs)), key=str):
        sides = [rps_samples(run[key]) for run in runs]
        logs = [log_values(samples) for samples, source in sides if source == ROUNDS]
        if len(logs) < 2 or min(len(side) for side in logs) < MIN_ROUNDS:
            continue
        between = statistics.variance([statistics.fmean(side) for side in logs])
        within = statistics.fmean(statistics.variance(side) / len(side) for side in logs)
        by_case[case_name(key)] = round(math.sqrt(max(0.0, between - within)), 4)
    pooled = math.sqrt(statistics.fmean(v * v for v in by_case.values())) if by_case else math.nan
    return {"matched_on": matched_settings(first), "by_case": by_case, "pooled": round(pooled, 4),
            "runs": len(runs)}  # fmt: skip


def measured_until(run_files: list[dict]) -> str:
    """When the last of the runs ended: what makes one A/A newer than another (`make
    compare` takes the newest), the same however often the summary is written again."""
    ends = [run.get("finished_at") or run.get("started_at") or "" for run in run_files]
    return max(ends)


def markdown(summary: dict) -> str:
    out = [
        f"# A/A: {len(summary['runs'])} runs of the same thing, every pair compared", "",
        f"{summary['knobs_text']}; runs {', '.join(summary['runs'])}.", "",
        f"- false alarms: **{summary['changes_called']} of {summary['cases_compared']}** case "
        f"comparisons called a regression or an improvement ({summary['false_alarm_rate']:.1%}) "
        f"over {summary['pairs']} pairs, with `make compare`'s rule (floor "
        f"{summary['min_effect_used']:.0%}, Benjamini-Hochberg at q < 0.05; "
        f"{summary['by_pair'][0]['run_to_run_used']})",
        f"- noise: 95% of |new/old - 1| within {summary['floor']:.1%}; the largest "
        f"{summary['largest_difference']:.1%}",
        f"- run-to-run spread (sd of log requests/s of a run's offset) per case, what "
        f"`make compare` adds from now on for runs of this host kind and these settings: "
        f"{run_to_run_text(summary['run_to_run'])}", "",
        "| old | new | cases | called a change | what changed between the runs |",
        "| --- | --- | --- | --- | --- |",
    ]  # fmt: skip
    for pair in summary["by_pair"]:
        called = "; ".join(pair["called"]) or "none"
        changed = "; ".join(pair["differences"]) or "nothing recorded"
        out.append(f"| {pair['old']} | {pair['new']} | {pair['cases']} | {called} | {changed} |")
    out += ["", *limits_markdown(summary["detection_limits"], summary["runs"],
                                 summary["host_identity"])]  # fmt: skip
    return "\n".join(out) + "\n"


def run_to_run_text(measured: dict) -> str:
    cases = measured["by_case"]
    if not cases:
        return f"none measured (fewer than {MIN_ROUNDS} rounds a run)"
    listed = ", ".join(f"{name} {sd:.1%}" for name, sd in cases.items())
    return f"{measured['pooled']:.1%} over {len(cases)} cases ({listed})"
