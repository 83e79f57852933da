"""When two sets of rounds differ: one rule for `make compare` and the leaderboard's
"gap to next", chosen from A/A runs (the same thing measured again with nothing
changed; docs/methodology.md, "Is it a change?").

1. Only rounds are tested. The windows of one run do not show run-to-run noise,
   so a one-round side is shown, never called a change.
2. Each case is Welch's t-test on the logarithm of requests/s (core/stats.py
   `welch_log_test`): exact at three rounds a side when the logs are normal,
   where Mann-Whitney cannot go below p = 0.1 and a bootstrap of three values
   is far narrower than the noise.
3. The p-values of one comparison are corrected together (Benjamini-Hochberg):
   twenty cases tested at once would otherwise give about one false alarm.
4. A difference smaller than the noise floor is not a change, however small its
   p: rounds of one run share the machine's state of that quarter-hour, so they
   agree with each other more closely than two runs do. The floor is
   MIN_EFFECT, or the one measured by `make aa` on this host when larger.
5. A difference beyond the floor that the test cannot confirm is "cannot tell",
   with about how many rounds a side would tell.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from loadtest.core.stats import benjamini_hochberg, t_quantile, welch_log_test

# False discovery rate over the cases of one comparison.
SIGNIFICANCE = 0.05
# The smallest change called a change (share of the old figure). Six A/A pairs on a 2-core
# VM (120 case comparisons, docs/measurements/aa-false-alarms.md): none called a change with
# it (a bootstrap over the rounds alone called 13). `make aa` measures a host's own floor.
MIN_EFFECT = 0.10
# For "cannot tell": the rounds a side that would find the observed change with 80% power.
Z_HALF_ALPHA, Z_POWER = 1.96, 0.84

REGRESSION, IMPROVEMENT = "regression", "improvement"
NO_CHANGE, CANNOT_TELL, NOT_TESTED = "no significant change", "cannot tell", "not tested"
VERDICTS = (REGRESSION, IMPROVEMENT, NO_CHANGE, CANNOT_TELL, NOT_TESTED)


@dataclass(frozen=True)
class Samples:
    """One case's two sides: requests/s per round (or per window, then `rounds` is False)."""

    old: list[float]
    new: list[float]
    rounds: bool = True


@dataclass(frozen=True)
class Difference:
    ratio: float  # new / old, of the geometric means when tested
    interval: tuple[float, float] | None  # 95% interval of the ratio
    verdict: str  # one of VERDICTS
    detail: str  # why: "q=0.003", "within the 10% noise floor", "about 7 rounds a side would tell"
    q: float | None = None  # Benjamini-Hochberg adjusted p-value

    @property
    def text(self) -> str:
        return f"{self.verdict} ({self.detail})" if self.detail else self.verdict

    @property
    def is_change(self) -> bool:
        return self.verdict in (REGRESSION, IMPROVEMENT)


def judge_all(cases: list[Samples], floor: float = MIN_EFFECT) -> list[Difference]:
    """The verdict of every case of one comparison, corrected together."""
    tests = [welch_log_test(c.old, c.new) if c.rounds else None for c in cases]
    tested = [i for i, t in enumerate(tests) if t is not None]
    adjusted = dict(zip(tested, benjamini_hochberg([tests[i][3] for i in tested]), strict=True))
    return [
        _verdict(case, tests[i], adjusted.get(i), floor) for i, case in enumerate(cases)
    ]


def _verdict(case: Samples, test, q: float | None, floor: float) -> Difference:
    if test is None:
        ratio = statistics.median(case.new) / statistics.median(case.old)
        why = "one round on a side: REPEAT >= 3" if not case.rounds else "one round: no spread"
        return Difference(ratio, None, NOT_TESTED, why)
    shift, se, df, _ = test
    ratio = math.exp(shift)
    half = t_quantile(1 - SIGNIFICANCE / 2, df) * se if math.isfinite(df) else 0.0
    interval = (math.exp(shift - half), math.exp(shift + half))
    beyond_floor = abs(ratio - 1) >= floor
    if q is not None and q < SIGNIFICANCE and beyond_floor:
        shown = "q<0.001" if q < 0.001 else f"q={q:.3f}"
        return Difference(ratio, interval, REGRESSION if shift < 0 else IMPROVEMENT, shown, q)
    if not beyond_floor:
        return Difference(ratio, interval, NO_CHANGE, f"within the {floor:.0%} noise floor", q)
    needed = rounds_to_tell(shift, se, len(case.old), len(case.new))
    return Difference(ratio, interval, CANNOT_TELL,
                      f"q={q:.2f}; about {needed} rounds a side would tell", q)  # fmt: skip


def rounds_to_tell(shift: float, se: float, n_old: int, n_new: int) -> int:
    """Rounds a side for a two-sample test to find `shift` with 80% power, from the
    spread seen (the per-round spread recovered from the standard error)."""
    per_round_variance = se * se / (1 / n_old + 1 / n_new)
    needed = 2 * per_round_variance * (Z_HALF_ALPHA + Z_POWER) ** 2 / (shift * shift) + 1
    return max(math.ceil(needed), max(n_old, n_new) + 1)

