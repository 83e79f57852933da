"""Each claim of a published experiment judged on a committed run: holds, does not
hold, or cannot tell (`make then-and-now`).

A claim is one or more comparisons (its settings times its sides b). Each is
judged by the rule of `make compare` (core/change.py) over the run's rounds:

- `ratio`: figure a against `expected` times figure b. No change detected (within
  the rule's floor) is "holds"; a change either way is "does not hold".
- `greater` / `less`: figure a against figure b. A change the claimed way is
  "holds"; one the other way is "does not hold", and so is none beyond the floor
  when the run would have seen the original's own gap (`expected`).
- A change beyond the floor that the rounds cannot confirm, or fewer rounds than
  the rule tests, is "cannot tell"; beside it, the smallest difference the run
  could have detected.

The comparisons of one experiment are corrected together (Benjamini-Hochberg), as
the cases of one `make compare`. A figure that does not vary between rounds (the
bytes of a response) is judged against the floor alone; a count that may be zero
(errors) is a `bound`, met or missed by every round. A comparison resting on a
round with any flag (report/flags.py: client-bound, NOISY, NOT-STEADY, COLD,
DRIFTED, STALL, UNEVEN, RECONNECTS; the rounds `FLAGGED=leave-out` leaves out) is
"cannot tell", naming the flag, whatever the rule would say (the bytes of an
answer excepted: no flag's cause changes them). A claim holds when
every comparison holds, does not hold when any does not, and else cannot tell.

A claim may read again the figures an earlier claim read: in a closed loop the mean
latency is the connections over the requests/s (Little's law) and MB/s the requests/s
times the bytes of an answer. Such a claim is judged like any other and says which
claims it re-reads, so that one measurement is not counted as several findings.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field

from loadtest.core.change import (
    IMPROVEMENT,
    MIN_EFFECT,
    NO_CHANGE,
    REGRESSION,
    Difference,
    Samples,
    judge_all,
)
from loadtest.report.claims import Claim, Experiment, Setting
from loadtest.report.run_rounds import COUNT_METRICS, EXACT_METRICS, CommittedRun, Rounds

HOLDS, FAILS, UNDECIDED = "holds", "does not hold", "cannot tell"
VERDICTS = (HOLDS, FAILS, UNDECIDED)
# The figures a closed loop ties to requests/s (module docstring).
READ_AS_REQUESTS = frozenset({"rps", "latency_mean_ms", "mb_per_s"})


@dataclass
class Comparison:
    """One comparison of a claim: figure a against figure b (or a constant, or a bound)."""

    a: Setting
    b: Setting | None
    a_rounds: Rounds | None
    b_rounds: Rounds | None
    constant: float | None = None
    verdict: str = UNDECIDED
    detail: str = ""
    ratio: float | None = None  # a / b as the claim reads it
    interval: tuple[float, float] | None = None
    limit: float | None = None  # the smallest difference the run could have detected
    flags: dict[str, dict[str, int]] = field(default_factory=dict)  # label -> flag counts

    @property
    def label(self) -> str:
        if self.b is not None:
            return f"{self.a.label} / {self.b.label}"
        return self.a.label + (f" / {self.constant:g}" if self.constant is not None else "")


@dataclass
class Judged:
    claim: Claim
    run: str  # the run folder's name
    comparisons: list[Comparison]
    verdict: str = UNDECIDED
    rereads: tuple[Claim, ...] = ()  # when all its figures were read before: by which claims

    @property
    def reasons(self) -> list[str]:
        return [f"{c.label}: {c.detail}" for c in self.comparisons if c.detail]


def figure(rounds: Rounds | None) -> float | None:
    """The figure shown for a side: the median of its rounds (or the summary's median)."""
    if rounds is None:
        return None
    return statistics.median(rounds.values) if rounds.values else rounds.median


def comparisons_of(claim: Claim, run: CommittedRun) -> list[Comparison]:
    found = []
    for base in claim.grid:
        a = claim.a.at(base)
        a_rounds = run.rounds(a, claim.metric)
        if claim.kind == "bound":
            found.append(Comparison(a, None, a_rounds, None))
            continue
        for side in claim.b:
            b = side.at(base)
            b_rounds = run.rounds(b, claim.metric) if b else None
            found.append(Comparison(a, b, a_rounds, b_rounds, side.value))
    return found


def flag_counts(comparison: Comparison) -> dict[str, dict[str, int]]:
    sides = [(comparison.a, comparison.a_rounds), (comparison.b, comparison.b_rounds)]
    return {setting.label: rounds.flag_counts for setting, rounds in sides
            if setting is not None and rounds is not None and rounds.flag_counts}  # fmt: skip


def flags_text(flags: dict[str, dict[str, int]], rounds_of: dict[str, int]) -> str:
    return "; ".join(f"{label}: " + ", ".join(f"{name} {n}/{rounds_of[label]}"
                                             for name, n in counts.items())
                     for label, counts in flags.items())  # fmt: skip


def b_values(comparison: Comparison, claim: Claim) -> list[float] | None:
    """Side b's rounds as the claim compares them: times `expected` for a ratio, a
    constant repeated as often as side a has rounds."""
    scale = claim.expected if claim.kind == "ratio" else 1.0
    if comparison.constant is not None:
        return [comparison.constant * scale] * len(comparison.a_rounds.values)
    return [v * scale for v in comparison.b_rounds.values]


def missing(comparison: Comparison) -> str:
    """Why a comparison has nothing to test, or ''."""
    for setting, rounds in ((comparison.a, comparison.a_rounds), (comparison.b, comparison.b_rounds)):
        if setting is None:
            continue
        if rounds is None:
            return f"{setting.label} not in the run"
        if rounds.missing:
            return f"{setting.label}: {rounds.missing}"
    return ""


def judge_experiment(experiment: Experiment, runs: dict[str, CommittedRun]) -> list[Judged]:
    """Every claim of an experiment, its rule-tested comparisons corrected together."""
    judged = [Judged(c, runs[c.run].name, comparisons_of(c, runs[c.run])) for c in experiment.claims]
    tested: list[tuple[Judged, Comparison]] = []
    for item in judged:
        for comparison in item.comparisons:
            if not decide_without_rule(item.claim, comparison):
                tested.append((item, comparison))
    samples = [Samples(b_values(c, j.claim), c.a_rounds.values) for j, c in tested]
    for (item, comparison), difference in zip(tested, judge_all(samples), strict=True):
        read_difference(item.claim, comparison, difference)
    for item in judged:
        for comparison in item.comparisons:
            overrule_flagged(item.claim, comparison)
        item.verdict = combined([c.verdict for c in item.comparisons])
    mark_rereads(judged, runs)
    return judged


def figures_read(item: Judged, closed_loop: bool) -> frozenset[tuple]:
    """Each comparison's figures: the run, the measurement, the settings of both sides."""
    metric = item.claim.metric
    if closed_loop and metric in READ_AS_REQUESTS:
        metric = "rps"
    return frozenset((item.run, metric, frozenset(s for s in (c.a, c.b) if s is not None))
                     for c in item.comparisons)  # fmt: skip


def mark_rereads(judged: list[Judged], runs: dict[str, CommittedRun]) -> None:
    """On each claim that reads only figures earlier claims read, name the earlier claims
    with figures of their own that share one with it."""
    seen: set[tuple] = set()
    own: list[tuple[Judged, frozenset[tuple]]] = []
    for item in judged:
        read = figures_read(item, closed_loop=not runs[item.claim.run].knobs.get("rate"))
        if read and read <= seen:
            item.rereads = tuple(other.claim for other, theirs in own if theirs & read)
        else:
            own.append((item, read))
        seen |= read


def decide_without_rule(claim: Claim, comparison: Comparison) -> bool:
    """Judge what the change rule does not: a missing figure, a bound, an exact figure.
    Returns False when the comparison is left to the rule."""
    why = missing(comparison)
    if why:
        comparison.verdict, comparison.detail = UNDECIDED, why
        return True
    if claim.kind == "bound":
        judge_bound(claim, comparison)
        return True
    if claim.metric in COUNT_METRICS:
        raise ValueError(f"claim {claim.id}: {claim.metric} may be zero; test it as a bound")
    if claim.metric in EXACT_METRICS:
        judge_exact(claim, comparison)
        return True
    return False


def judge_bound(claim: Claim, comparison: Comparison) -> None:
    values = comparison.a_rounds.values
    inside = [(claim.at_least is None or v >= claim.at_least)
              and (claim.at_most is None or v <= claim.at_most) for v in values]  # fmt: skip
    comparison.ratio = statistics.median(values) if values else None
    shown = ", ".join(f"{v:.3g}" for v in values)
    can_hold, can_fail = stand_in_decides(claim)
    short_of = ""  # where a stand-in percentile falls that cannot decide the claim
    if values and all(inside):
        comparison.verdict, comparison.detail = HOLDS, f"every round within ({shown})"
        short_of = "" if can_hold else "within"
    elif values and not any(inside):
        comparison.verdict, comparison.detail = FAILS, f"no round within ({shown})"
        short_of = "" if can_fail else "outside"
    else:
        comparison.verdict = UNDECIDED
        comparison.detail = f"rounds on both sides ({shown})" if values else "no rounds"
    if short_of:
        measured, claimed = ordinal(metric_percentile(claim.metric)), ordinal(claim.percentile)
        comparison.verdict = UNDECIDED
        comparison.detail += (f", but the {measured} percentile {short_of} the bound does not "
                              f"put the claimed {claimed} {short_of} it")  # fmt: skip


def metric_percentile(metric: str) -> float | None:
    """75 for latency_p75_ms; None for a figure that is not a percentile."""
    found = re.fullmatch(r"latency_p(\d+)_ms", metric)
    return float(found.group(1)) if found else None


def ordinal(percentile: float | None) -> str:
    return f"{percentile:g}th"


def stand_in_decides(claim: Claim) -> tuple[bool, bool]:
    """(can hold, can fail) for a bound on a percentile standing in for the claimed one. A
    lower percentile under an upper bound can refute the claim (the claimed one is at least
    as high) but not confirm it; a higher one the other way round; and the same for a lower
    bound, reversed."""
    measured = metric_percentile(claim.metric)
    if claim.percentile is None or measured is None or measured == claim.percentile:
        return True, True
    lower = measured < claim.percentile
    can_hold = (claim.at_most is None or not lower) and (claim.at_least is None or lower)
    can_fail = (claim.at_most is None or lower) and (claim.at_least is None or not lower)
    return can_hold, can_fail


def judge_exact(claim: Claim, comparison: Comparison) -> None:
    """A figure without spread: the floor of core/change.py decides alone."""
    a = statistics.median(comparison.a_rounds.values)
    b = statistics.median(b_values(comparison, claim)) / (claim.expected or 1.0)
    comparison.ratio = a / b
    off = comparison.ratio / (claim.expected or 1.0) - 1
    if claim.kind == "ratio":
        near = abs(off) < MIN_EFFECT
        comparison.verdict = HOLDS if near else FAILS
        comparison.detail = f"exact figures, {off:+.0%} from the claimed ratio ({MIN_EFFECT:.0%} floor)"
        return
    above = off >= MIN_EFFECT if claim.kind == "greater" else off <= -MIN_EFFECT
    comparison.verdict = HOLDS if above else FAILS
    comparison.detail = f"exact figures, {off:+.0%} ({MIN_EFFECT:.0%} floor)"


# What each verdict of the change rule says of each kind of claim.
READINGS = {
    "ratio": {NO_CHANGE: HOLDS, IMPROVEMENT: FAILS, REGRESSION: FAILS},
    "greater": {IMPROVEMENT: HOLDS, REGRESSION: FAILS, NO_CHANGE: FAILS},
    "less": {REGRESSION: HOLDS, IMPROVEMENT: FAILS, NO_CHANGE: FAILS},
}


def read_difference(claim: Claim, comparison: Comparison, difference: Difference) -> None:
    scale = claim.expected if claim.kind == "ratio" else 1.0
    comparison.ratio = difference.ratio * scale
    if difference.interval:
        comparison.interval = (difference.interval[0] * scale, difference.interval[1] * scale)
    comparison.limit = difference.limit
    comparison.verdict = READINGS[claim.kind].get(difference.verdict, UNDECIDED)
    comparison.detail = claim_words(claim, difference)
    if difference.verdict == NO_CHANGE and claim.kind != "ratio":
        read_no_lead(claim, comparison)


def claim_words(claim: Claim, difference: Difference) -> str:
    """The rule's verdict in a claim's words: a change is 'regression' or 'improvement'
    between two runs; against a claim it is a figure below or above what was claimed."""
    if not difference.is_change:
        if claim.kind == "ratio":  # its sizes are shares of the claim, not of 1
            return f"{difference.verdict} (against the claimed {claim.expected:g}x: " \
                   f"{difference.detail})"
        return difference.text
    lower = difference.verdict == REGRESSION
    if claim.kind == "ratio":
        what = f"{'below' if lower else 'above'} the claimed {claim.expected:g}x"
    else:
        what = "the first lower than the second" if lower else "the first higher than the second"
    return f"{what} ({difference.detail})"


def read_no_lead(claim: Claim, comparison: Comparison) -> None:
    """An order claim with no difference beyond the floor: refuted only when the run
    would have seen the original's own gap (its ratio, `expected`), since a smaller lead
    than the detection limit may hide in the noise. Sizes compare as logs: a ratio of
    0.53 is as far from 1 as one of 1.89."""
    gap = abs(math.log(claim.expected)) if claim.expected else None
    if gap is not None and math.log(1 + comparison.limit) <= gap:
        comparison.detail += f"; the original's gap ({claim.expected:g}x) would have been seen"
        return
    comparison.verdict = UNDECIDED
    shown = f"the original's {claim.expected:g}x" if gap is not None else "a lead"
    comparison.detail += f"; {shown} could hide under the detection limit"


def overrule_flagged(claim: Claim, comparison: Comparison) -> None:
    """A comparison on a flagged round is not decided, whatever the rule said. The bytes
    of an answer are exempt: every flag judges a figure's pace, and a response's size
    does not depend on it."""
    comparison.flags = flag_counts(comparison)
    if not comparison.flags or claim.metric in EXACT_METRICS:
        return
    rounds_of = {setting.label: len(rounds.flags) for setting, rounds in
                 ((comparison.a, comparison.a_rounds), (comparison.b, comparison.b_rounds))
                 if setting is not None and rounds is not None}  # fmt: skip
    said = ""
    if comparison.detail.startswith(UNDECIDED):
        said = f"; unflagged, still {comparison.detail}"
    elif comparison.detail and comparison.verdict == UNDECIDED:
        said = f"; unflagged, still cannot tell: {comparison.detail}"
    elif comparison.detail:
        said = f"; unflagged it would be {comparison.verdict}: {comparison.detail}"
    comparison.detail = f"flagged: {flags_text(comparison.flags, rounds_of)}{said}"
    comparison.verdict = UNDECIDED


def combined(verdicts: list[str]) -> str:
    if verdicts and all(v == HOLDS for v in verdicts):
        return HOLDS
    return FAILS if FAILS in verdicts else UNDECIDED


def own_figures(judged: list[Judged]) -> list[Judged]:
    """The claims that read a figure no earlier claim read."""
    return [item for item in judged if not item.rereads]


def counts(judged: list[Judged]) -> dict[str, int]:
    verdicts = [j.verdict for j in judged]
    return {v: verdicts.count(v) for v in VERDICTS}
