"""When two sets of rounds differ: the one rule of `make compare`, the leaderboard's
"gap to next", `make aa` and DRIFTED (docs/methodology.md, "Is it a change?").

1. Only rounds are tested, MIN_ROUNDS or more a side. The windows of one run do
   not show run-to-run noise, so such a side is shown, never called a change.
2. Each case is Welch's t-test on the logarithm of requests/s (core/stats.py
   `welch_log_test`); the ratio is that of the rounds' geometric means. Its
   degrees of freedom are estimated from the same rounds, so at three rounds a
   side its p-value is approximate.
3. Two sides from separate runs each carry a run's own offset (another hour,
   another boot), which more rounds do not average away: the noise model adds
   each side's run-to-run spread (`make aa` measures it per case for a host
   kind; DEFAULT_RUN_TO_RUN_SD without a measurement). Rounds of one invocation
   share it, and it cancels.
4. The p-values of one comparison are corrected together (Benjamini-Hochberg):
   twenty cases tested at once would otherwise give about one false alarm.
5. A difference smaller than MIN_EFFECT is not called a change, however small
   its p. "No change detected" is said only when the whole 95% interval lies
   within the floor; a ratio inside the floor whose interval reaches past it is
   "cannot tell": the rounds do not rule out a change the floor would call.
6. Every verdict that is not a change says what could have been seen: the
   smallest change this comparison detects with POWER at its noise, its rounds
   and the significance the correction would have asked of it.
7. DRIFTED: an instance's first case measured again at its end is a drift only
   beyond the same floor and beyond what the instance's own windows and the
   ceiling's re-checks of the same run swing by.
8. TWO STATES: a case's rounds that fall into two groups far apart, each tight,
   are two states of the stack or the host, not one figure with noise: shown
   both, and the comparison of such a case says so.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from loadtest.core.stats import (
    benjamini_hochberg,
    clean,
    log_values,
    t_quantile,
    welch_degrees_of_freedom,
    welch_log_test,
)

# False discovery rate over the cases of one comparison.
SIGNIFICANCE = 0.05
# The chance of calling a true change of the printed detection limit.
POWER = 0.80
# The smallest change called a change (share of the old figure). Six A/A pairs on a 2-core
# VM (120 case comparisons, docs/measurements/aa-false-alarms.md): none called a change with
# it (a bootstrap over the rounds alone called 13).
MIN_EFFECT = 0.10
# Fewer rounds a side are shown, not tested: at two, Welch's t has about one degree of
# freedom and its interval spans an order of magnitude.
MIN_ROUNDS = 3
# The sd of the log of a run's own offset when `make aa` has not measured one for the host
# kind and the settings: 5%, the run-to-run spread with which simulated A/A comparisons of a
# rule over rounds alone called about 15% of cases a change (issue of the comparison rule).
DEFAULT_RUN_TO_RUN_SD = 0.05
# The detection limit is also given at this many rounds a side: what more rounds would buy.
MORE_ROUNDS = 10
# DRIFTED without a ceiling re-check in the run: the sd of the log of a re-check's change
# on a warm instance here (ASP.NET Core, its MVC stack, Spring MVC re-checked 16-21% lower,
# the reference server 28% higher: run 20261128-102254-quick).
DEFAULT_RECHECK_SD = 0.20

REGRESSION, IMPROVEMENT = "regression", "improvement"
NO_CHANGE, CANNOT_TELL, NOT_TESTED = "no change detected", "cannot tell", "not tested"
VERDICTS = (REGRESSION, IMPROVEMENT, NO_CHANGE, CANNOT_TELL, NOT_TESTED)


@dataclass(frozen=True)
class Samples:
    """One case's two sides: requests/s per round (or per window, then `rounds` is False),
    and each side's run-to-run spread (sd of log; 0 when both are rounds of one invocation)."""

    old: list[float]
    new: list[float]
    rounds: bool = True
    run_to_run_sd: float = 0.0

    @property
    def testable(self) -> bool:
        return self.rounds and min(len(log_values(self.old)), len(log_values(self.new))) >= MIN_ROUNDS

    @property
    def extra_variance(self) -> float:
        return offsets_variance(self.run_to_run_sd)


def offsets_variance(run_to_run_sd: float) -> float:
    """Variance of the log ratio of two separate runs from their own offsets, one a side."""
    return 2 * run_to_run_sd**2


@dataclass(frozen=True)
class Difference:
    ratio: float  # new / old, of the geometric means when tested
    interval: tuple[float, float] | None  # 95% interval of the ratio
    verdict: str  # one of VERDICTS
    detail: str  # why: "q=0.003", "within the 10% floor; at this noise 3 rounds a side ..."
    q: float | None = None  # Benjamini-Hochberg adjusted p-value
    limit: float | None = None  # smallest change detected at these rounds (share)

    @property
    def text(self) -> str:
        return f"{self.verdict} ({self.detail})" if self.detail else self.verdict

    @property
    def is_change(self) -> bool:
        return self.verdict in (REGRESSION, IMPROVEMENT)


def central(values: list[float], rounds: bool = True) -> float:
    """The figure a side is compared by: the geometric mean of its rounds (what the test
    compares), the median of anything else."""
    logs = log_values(values)
    if rounds and logs:
        return math.exp(statistics.fmean(logs))
    return statistics.median(clean(values))


def central_interval(rounds: list[float]) -> tuple[float, float] | None:
    """The 95% interval of central() over rounds: Student's t on their logarithms, the
    model the test assumes (None below two). At three rounds t has two degrees of freedom
    and the interval is wide, as three rounds are: a bootstrap of the median of three
    values can only return their range, which holds the median 75% of the time."""
    logs = log_values(rounds)
    if len(logs) < 2:
        return None
    half = t_quantile(1 - SIGNIFICANCE / 2, len(logs) - 1) * statistics.stdev(logs)
    mean, half = statistics.fmean(logs), half / math.sqrt(len(logs))
    return math.exp(mean - half), math.exp(mean + half)


def judge_all(cases: list[Samples]) -> list[Difference]:
    """The verdict of every case of one comparison, corrected together."""
    tests = [welch_log_test(c.old, c.new, c.extra_variance) if c.testable else None
             for c in cases]  # fmt: skip
    tested = [i for i, t in enumerate(tests) if t is not None]
    adjusted = dict(zip(tested, benjamini_hochberg([tests[i][3] for i in tested]), strict=True))
    discoveries = sum(1 for q in adjusted.values() if q < SIGNIFICANCE)
    # A case not called would have needed p <= this to join the discoveries (BH's step).
    level_needed = SIGNIFICANCE * (discoveries + 1) / max(len(tested), 1)
    return [_verdict(case, tests[i], adjusted.get(i), level_needed)
            for i, case in enumerate(cases)]  # fmt: skip


def _verdict(case: Samples, test, q: float | None, level: float) -> Difference:
    if test is None:
        ratio = central(case.new, False) / central(case.old, False)
        return Difference(ratio, None, NOT_TESTED, untested_reason(case))
    shift, se, df, _ = test
    ratio = math.exp(shift)
    half = t_quantile(1 - SIGNIFICANCE / 2, df) * se
    interval = (math.exp(shift - half), math.exp(shift + half))
    beyond_floor = abs(ratio - 1) >= MIN_EFFECT
    if q < SIGNIFICANCE and beyond_floor:
        return Difference(ratio, interval, REGRESSION if shift < 0 else IMPROVEMENT, q_text(q), q)
    limit = detection_limit(case, len(case.old), len(case.new), level)
    seen = limits_text(case, level)
    if beyond_floor:
        return Difference(ratio, interval, CANNOT_TELL, f"q={q:.2f}; {seen}", q, limit)
    size = f"{ratio - 1:+.1%}" + (f", {q_text(q)}" if q < SIGNIFICANCE else "")
    if within_floor(interval):
        return Difference(ratio, interval, NO_CHANGE,
                          f"{size}, interval within the {MIN_EFFECT:.0%} floor; {seen}", q, limit)
    return Difference(ratio, interval, CANNOT_TELL,
                      f"{size}, inside the {MIN_EFFECT:.0%} floor but its interval "
                      f"{interval[0]:.3f} - {interval[1]:.3f} reaches past it; {seen}", q, limit)


def q_text(q: float) -> str:
    return "q<0.001" if q < 0.001 else f"q={q:.3f}"


def within_floor(interval: tuple[float, float]) -> bool:
    """Whether every ratio of the interval is a difference under the floor."""
    return all(abs(bound - 1) < MIN_EFFECT for bound in interval)


def untested_reason(case: Samples) -> str:
    if not case.rounds:
        return f"windows of one run, not rounds: REPEAT >= {MIN_ROUNDS}"
    fewest = min(len(case.old), len(case.new))
    return f"{fewest} round{'s' if fewest != 1 else ''} on a side: REPEAT >= {MIN_ROUNDS}"


def round_variances(case: Samples) -> tuple[float, float]:
    """The round-to-round variance of each side's log requests/s."""
    return statistics.variance(log_values(case.old)), statistics.variance(log_values(case.new))


def detection_limit(case: Samples, n_old: int, n_new: int, level: float) -> float:
    """The smallest change (share of the old figure) called with POWER by a two-sided test
    at `level`, with n_old and n_new rounds of this case's noise: each side's spread of
    rounds and its run-to-run spread."""
    var_old, var_new = round_variances(case)
    return detection_limit_at(var_old, var_new, case.extra_variance, n_old, n_new, level)


def detection_limit_at(var_old: float, var_new: float, extra_variance: float,
                       n_old: int, n_new: int, level: float) -> float:  # fmt: skip
    """detection_limit from the noise itself: each side's round-to-round variance of log
    requests/s and the variance the runs' own offsets add (what `make aa` pools over a
    series to say what each REPEAT would detect). Student's t at Welch's degrees of
    freedom; never below the floor, under which nothing is called."""
    va, vb = var_old / n_old, var_new / n_new
    se = math.sqrt(va + vb + extra_variance)
    df = welch_degrees_of_freedom(va, vb, n_old, n_new)
    needed = (t_quantile(1 - level / 2, df) + t_quantile(POWER, df)) * se
    return max(MIN_EFFECT, math.exp(needed) - 1)


def limits_text(case: Samples, level: float) -> str:
    """'at this noise 3 rounds a side detect 18% or more, 10 rounds 9%'."""
    n_old, n_new = len(case.old), len(case.new)
    rounds = f"{n_old}" if n_old == n_new else f"{n_old}/{n_new}"
    first = detection_limit(case, n_old, n_new, level)
    text = f"at this noise {rounds} rounds a side detect {limit_text(first, 'or more')}"
    if min(n_old, n_new) < MORE_ROUNDS:
        more = detection_limit(case, MORE_ROUNDS, MORE_ROUNDS, level)
        text += f", {MORE_ROUNDS} rounds {limit_text(more)}"
    return text


# A detection limit past this is a figure of the noise, not a size anyone would look for.
UNINFORMATIVE_LIMIT = 1.0


def limit_text(limit: float, suffix: str = "") -> str:
    """'18%' (with its suffix: '18% or more'); 'only changes over 100%' past
    UNINFORMATIVE_LIMIT."""
    if limit > UNINFORMATIVE_LIMIT:
        return f"only changes over {UNINFORMATIVE_LIMIT:.0%}"
    return f"{limit:.0%} {suffix}".rstrip()


# ----------------------------------------------------------------------- DRIFTED


def drifted(first_rps: float, again_rps: float, window_sd: float | None,
            host_changes: list[float]) -> bool:  # fmt: skip
    """Whether an instance's first case, measured again after its last, changed pace.

    A drift is a change beyond MIN_EFFECT and beyond what the re-check would show
    anyway: the sd of log of the instance's own windows (how its pace swings within
    one run) combined with that of the ceiling's re-checks in the same run
    (`host_changes`, each again/first - 1: how far the host moved between an
    instance's start and end), times Student's t at as many degrees of freedom as
    there are such re-checks (a spread read from three re-checks is rough, and the
    test says so by asking more). Without one, DEFAULT_RECHECK_SD, taken as known.
    """
    if first_rps <= 0 or again_rps <= 0:
        return first_rps > 0
    change = math.log(again_rps / first_rps)
    spread = math.sqrt((window_sd or 0.0) ** 2 + recheck_spread(host_changes) ** 2)
    read_from = len(recheck_logs(host_changes)) or math.inf
    beyond = abs(change) > t_quantile(1 - SIGNIFICANCE / 2, read_from) * spread
    return beyond and abs(math.exp(change) - 1) >= MIN_EFFECT


def recheck_logs(host_changes: list[float]) -> list[float]:
    return [math.log(1 + c) for c in host_changes if c is not None and c > -1]


def recheck_spread(host_changes: list[float]) -> float:
    """The sd of log of the host's re-check changes (root mean square: their expected
    change is none), or DEFAULT_RECHECK_SD without one."""
    logs = recheck_logs(host_changes)
    if not logs:
        return DEFAULT_RECHECK_SD
    return math.sqrt(statistics.fmean(x * x for x in logs))


# For a normal spread, the median absolute difference of two successive windows is this
# many standard deviations: 0.6745 (the median of |z|) times the square root of 2.
MEDIAN_STEP_PER_SD = 0.6745 * math.sqrt(2)


def window_spread(rates: list[float]) -> float | None:
    """How much one run's pace swings from window to window: the sd of log of its window
    rates, from the median absolute difference of successive windows, so that neither a
    climb across the run (a cold start) nor one step in it (an instance switching state
    mid-run) is counted as its noise."""
    logs = log_values(rates)
    if len(logs) < 2:
        return None
    steps = [abs(b - a) for a, b in zip(logs, logs[1:], strict=False)]
    return statistics.median(steps) / MEDIAN_STEP_PER_SD


# Two states (rule 8): the largest step between a case's sorted rounds is a ratio of
# STATE_GAP or more, and STATE_SEPARATION times the log range of the wider group or more.
# On this project's committed runs the slow group sits at 0.42-0.58 of the fast one
# (docs/measurements/two-states.md); a 40% step is over twice the largest round-to-round
# sd of a case without two states in the A/A runs (the ceiling's, 12-15%).
STATE_GAP = 1.4
STATE_SEPARATION = 3.0


def two_states(rates: list[float]) -> tuple[list[float], list[float]] | None:
    """The rounds as (slow group, fast group) when they fall into two states, else None."""
    values = sorted(rate for rate in rates if rate and rate > 0)
    if len(values) < MIN_ROUNDS:
        return None
    steps = [b / a for a, b in zip(values, values[1:], strict=False)]
    cut = max(range(len(steps)), key=steps.__getitem__)
    slow, fast = values[: cut + 1], values[cut + 1 :]
    widest = max(math.log(group[-1] / group[0]) for group in (slow, fast))
    if steps[cut] >= STATE_GAP and math.log(steps[cut]) >= STATE_SEPARATION * widest:
        return slow, fast
    return None


def two_states_text(rates: list[float]) -> str:
    """'1 round at 14,381 req/s, 2 at 36,582' for a case in two states, else ''."""
    groups = two_states(rates)
    if not groups:
        return ""
    (slow, fast) = groups
    return (f"{len(slow)} round{'s' if len(slow) > 1 else ''} at {statistics.median(slow):,.0f} "
            f"req/s, {len(fast)} at {statistics.median(fast):,.0f}")  # fmt: skip
