"""A/A: runs of the same thing compared pair by pair with `make compare`'s rules.

Nothing changed between the runs, so every case called a regression or an
improvement is a false alarm: their share over every pair is the false-alarm
rate of the rules on this host. The spread of the ratios says how far two
runs of the same thing drift apart here (the noise floor). Written to
results/aa-<first>-<last>/aa.json (read back by `make compare`) and aa.md.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
from pathlib import Path

from loadtest.core.stats import nearest_rank
from loadtest.report.change import IMPROVEMENT, MIN_EFFECT, REGRESSION
from loadtest.report.compare import CompareError, compared_cases, differences, load_run
from loadtest.report.noise import AA_FILE, AA_PREFIX, host_identity

# Knobs that must agree for runs to be of "the same thing".
SAME_KNOBS = ("profile", "servers", "scenarios", "connections", "duration", "repeat", "tool",
              "tls_tool", "front", "server_cpus", "client_cpus", "runner")  # fmt: skip


def analyse(folders: list[Path], out_root: Path) -> Path:
    """Compare every pair of `folders` (oldest first); returns the A/A folder.
    Raises CompareError when fewer than two runs or runs of different things."""
    if len(folders) < 2:
        raise CompareError("A/A needs two runs or more")
    runs = [load_run(folder) for folder in folders]
    first = runs[0][0]
    knobs = first.get("knobs") or {}
    for folder, (run, _) in zip(folders[1:], runs[1:], strict=True):
        different = [k for k in SAME_KNOBS if knobs.get(k) != (run.get("knobs") or {}).get(k)]
        if different or host_identity(run) != host_identity(first):
            what = ", ".join(different) or "host"
            raise CompareError(f"{folder.name} is not a run of the same thing ({what} differ)")
    pairs = []
    for (i, (old_run, old)), (j, (new_run, new)) in itertools.combinations(enumerate(runs), 2):
        cases = compared_cases(old, new, MIN_EFFECT)
        pairs.append({
            "old": folders[i].name, "new": folders[j].name,
            "cases": len(cases),
            "called": [f"{c['stack']} {c['label']}: {c['verdict']} ({c['ratio']:.3f})"
                       for c in cases if c["change"] in (REGRESSION, IMPROVEMENT)],
            "ratios": [round(c["ratio"], 4) for c in cases],
            "differences": differences(old_run, new_run),
        })  # fmt: skip
    summary = summarize(folders, first, pairs)
    folder = out_root / f"{AA_PREFIX}{folders[0].name}-{folders[-1].name}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / AA_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    (folder / "aa.md").write_text(markdown(summary))
    return folder


def summarize(folders: list[Path], first: dict, pairs: list[dict]) -> dict:
    compared = sum(p["cases"] for p in pairs)
    called = sum(len(p["called"]) for p in pairs)
    spread = sorted(abs(r - 1) for p in pairs for r in p["ratios"])
    knobs = first.get("knobs") or {}
    return {
        "written_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
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


def markdown(summary: dict) -> str:
    out = [
        f"# A/A: {len(summary['runs'])} runs of the same thing, every pair compared", "",
        f"{summary['knobs_text']}; runs {', '.join(summary['runs'])}.", "",
        f"- false alarms: **{summary['changes_called']} of {summary['cases_compared']}** case "
        f"comparisons called a regression or an improvement ({summary['false_alarm_rate']:.1%}) "
        f"over {summary['pairs']} pairs, with `make compare`'s rules (noise floor "
        f"{summary['min_effect_used']:.0%}, Benjamini-Hochberg at q < 0.05)",
        f"- noise: 95% of |new/old - 1| within {summary['floor']:.1%}; the largest "
        f"{summary['largest_difference']:.1%}", "",
        "| old | new | cases | called a change | what changed between the runs |",
        "| --- | --- | --- | --- | --- |",
    ]  # fmt: skip
    for pair in summary["by_pair"]:
        called = "; ".join(pair["called"]) or "none"
        changed = "; ".join(pair["differences"]) or "nothing recorded"
        out.append(f"| {pair['old']} | {pair['new']} | {pair['cases']} | {called} | {changed} |")
    return "\n".join(out) + "\n"
