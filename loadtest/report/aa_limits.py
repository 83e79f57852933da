"""Choosing REPEAT: what two separate runs can tell on this host kind, from an A/A series.

For each case of the series, its noise as the runs measured it: the round-to-round
variance of log requests/s pooled over the runs, and the run-to-run spread that
`make compare` adds for runs of this host kind and settings (`make aa`'s own
measurement, report/noise.py). Then the smallest change `make compare` would call
between two separate runs at REPEAT 3, 5 and 10 a side: core/change's detection
limit at those rounds, computed from the measured spreads, not measured at each
REPEAT. It is taken at the single-test level (SIGNIFICANCE): a comparison of many
cases corrects them together (Benjamini-Hochberg) and asks more of each, so there
the limit is larger.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

from loadtest.core.change import (
    DEFAULT_RUN_TO_RUN_SD,
    MIN_EFFECT,
    MIN_ROUNDS,
    MORE_ROUNDS,
    POWER,
    SIGNIFICANCE,
    detection_limit_at,
    offsets_variance,
)
from loadtest.core.stats import log_values
from loadtest.report.compare import case_name
from loadtest.report.noise import RunToRun, settings_text
from loadtest.report.samples import ROUNDS, rps_samples

# The REPEATs a user chooses between: the fewest compare tests, a middle, and the
# "more rounds" every verdict already quotes.
REPEATS = (MIN_ROUNDS, 5, MORE_ROUNDS)
# A variance needs two rounds of a run; a run-to-run spread, two runs.
FEWEST_ROUNDS, FEWEST_RUNS = 2, 2


@dataclass(frozen=True)
class CaseNoise:
    """One case's noise over an A/A series, and what it lets each REPEAT detect."""

    name: str
    scenario: str  # "hello c=16": the row of the table it joins
    rounds: list[int]  # per run that has the case
    round_variance: float  # of log requests/s, pooled over the runs
    run_to_run_measured: float | None  # `make aa`'s figure for the case, None if none
    run_to_run_used: float  # what `make compare` adds across runs (RunToRun.sd)

    def limits(self) -> list[float]:
        """The smallest change called at each of REPEATS rounds a side (share)."""
        extra = offsets_variance(self.run_to_run_used)
        return [detection_limit_at(self.round_variance, self.round_variance, extra,
                                   repeat, repeat, SIGNIFICANCE) for repeat in REPEATS]  # fmt: skip

    def as_json(self) -> dict:
        return {
            "scenario": self.scenario,
            "runs": len(self.rounds),
            "rounds": self.rounds,
            "round_sd": round(self.round_variance**0.5, 4),
            "run_to_run_sd_measured": self.run_to_run_measured,
            "run_to_run_sd_used": round(self.run_to_run_used, 4),
            "limit_at_repeat": {str(n): round(x, 4)
                                for n, x in zip(REPEATS, self.limits(), strict=True)},
        }  # fmt: skip


def pooled_variance(logs_per_run: list[list[float]]) -> float:
    """The variance of log requests/s within a run, pooled over the runs: their squared
    deviations from their own run's mean over their degrees of freedom, so that a run's
    offset is not counted as round noise."""
    squares = sum(sum((x - statistics.fmean(logs)) ** 2 for x in logs) for logs in logs_per_run)
    return squares / sum(len(logs) - 1 for logs in logs_per_run)


def why_left_out(logs_per_run: list[list[float] | None]) -> str | None:
    """Why a case gives no figure, or None when it does."""
    if len(logs_per_run) < FEWEST_RUNS:
        return f"in one run only (a run-to-run spread needs {FEWEST_RUNS} runs)"
    if any(logs is None or len(logs) < FEWEST_ROUNDS for logs in logs_per_run):
        return (f"fewer than {FEWEST_ROUNDS} rounds in a run (a round-to-round spread needs "
                f"{FEWEST_ROUNDS})")  # fmt: skip
    return None


def case_noises(runs: list[dict], measured: dict, spread: RunToRun) -> tuple[list, dict]:
    """Each case's noise over `runs` (each a run's records by case key), and the cases
    left out with why. `measured` is `make aa`'s run_to_run; `spread` what compare adds."""
    found, left_out = [], {}
    for key in sorted(set().union(*runs), key=str):
        logs_per_run = [logs_of_rounds(run[key]) for run in runs if key in run]
        name = case_name(key)
        reason = why_left_out(logs_per_run)
        if reason:
            left_out[name] = reason
            continue
        found.append(CaseNoise(name, f"{key[1]} c={key[2]}", [len(x) for x in logs_per_run],
                               pooled_variance(logs_per_run), measured["by_case"].get(name),
                               spread.sd(name)))  # fmt: skip
    return found, left_out


def logs_of_rounds(records: list[dict]) -> list[float] | None:
    """The log requests/s of a run's rounds of one case; None for one round (its windows
    are not rounds)."""
    samples, source = rps_samples(records)
    return log_values(samples) if source == ROUNDS else None


def by_scenario(cases: list[CaseNoise]) -> dict[str, dict]:
    """Per scenario: the median limit over its cases at each REPEAT, and their range."""
    grouped = defaultdict(list)
    for case in cases:
        grouped[case.scenario].append(case)
    table = {}
    for scenario, members in sorted(grouped.items()):
        columns = list(zip(*(case.limits() for case in members), strict=True))
        table[scenario] = {
            "cases": len(members),
            "round_sd_median": round(statistics.median(c.round_variance**0.5 for c in members), 4),
            "run_to_run_sd_used_median": round(statistics.median(
                c.run_to_run_used for c in members), 4),
            "median": {str(n): round(statistics.median(col), 4)
                       for n, col in zip(REPEATS, columns, strict=True)},
            "range": {str(n): [round(min(col), 4), round(max(col), 4)]
                      for n, col in zip(REPEATS, columns, strict=True)},
        }  # fmt: skip
    return table


def detection_limits(runs: list[dict], measured: dict, spread: RunToRun) -> dict:
    """aa.json's `detection_limits`: per scenario, per case, and the cases left out."""
    cases, left_out = case_noises(runs, measured, spread)
    return {
        "repeats": list(REPEATS),
        "level": SIGNIFICANCE,
        "power": POWER,
        "floor": MIN_EFFECT,
        "matched_on": measured["matched_on"],
        "run_to_run_measured": bool(spread.by_case),
        "run_to_run_pooled": round(spread.pooled, 4),
        "by_scenario": by_scenario(cases),
        "by_case": {case.name: case.as_json() for case in cases},
        "left_out": left_out,
    }


def markdown(limits: dict, runs: list[str], host: list) -> list[str]:
    """aa.md's section "Choosing REPEAT": the table per scenario and how it was made."""
    settings = settings_text(limits["matched_on"])
    cpu, cores = (list(host) + [None, None])[:2]
    cases = sum(row["cases"] for row in limits["by_scenario"].values())
    out = [
        "## Choosing REPEAT: the smallest change two separate runs can tell", "",
        f"From the {len(runs)} runs above ({settings}; host {cpu}, {cores} cores): each "
        "case's round-to-round spread of log requests/s pooled over the runs, and the "
        f"run-to-run spread `make compare` adds to each side of two separate runs "
        f"({run_to_run_words(limits)}). For "
        "each REPEAT, the smallest change `make compare` would call between two separate "
        f"runs of that many rounds a side with {limits['power']:.0%} power, by its own "
        "rule (core/change.py, `detection_limit`), never below its "
        f"{limits['floor']:.0%} floor. Computed from the measured spreads, not measured "
        f"at each REPEAT, and at the level of a single test (q < {limits['level']}): "
        "compared with other cases, each case is asked more (Benjamini-Hochberg: with "
        f"{cases} cases and none called a change, p < {limits['level']} / {cases}) and the "
        "limit is larger. The run-to-run spread is taken as the same at every REPEAT: more "
        "rounds do not average a run's offset away, and `make compare` takes a measured "
        "one only from an A/A at the runs' own REPEAT (until then its default of "
        f"{DEFAULT_RUN_TO_RUN_SD:.0%}). A change smaller than the figure will usually be "
        'reported "no change detected".', "",
        "| scenario | cases | round sd (median) | run-to-run sd (median) | "
        + " | ".join(f"REPEAT {n}: median (range)" for n in limits["repeats"]) + " |",
        "| --- | --- | --- | --- | " + " | ".join("---" for _ in limits["repeats"]) + " |",
    ]  # fmt: skip
    for scenario, row in limits["by_scenario"].items():
        cells = [f"{row['median'][str(n)]:.0%} ({row['range'][str(n)][0]:.0%} - "
                 f"{row['range'][str(n)][1]:.0%})" for n in limits["repeats"]]  # fmt: skip
        out.append(f"| {scenario} | {row['cases']} | {row['round_sd_median']:.1%} | "
                   f"{row['run_to_run_sd_used_median']:.1%} | " + " | ".join(cells) + " |")
    out += ["", left_out_text(limits["left_out"])]
    return out


def run_to_run_words(limits: dict) -> str:
    pooled = limits["run_to_run_pooled"]
    if limits["run_to_run_measured"]:
        return (f"each case's own, as these runs measure it, and at the least their root "
                f"mean square, {pooled:.1%}")  # fmt: skip
    return f"none measured here, so the default of {pooled:.0%}"


def left_out_text(left_out: dict[str, str]) -> str:
    if not left_out:
        return "Every case of the runs has a figure (per case in aa.json)."
    named = "; ".join(f"{name}: {why}" for name, why in left_out.items())
    return f"Left out (per case in aa.json): {named}."
