"""`make then-and-now`: the published experiments' claims judged on the committed runs;
writes docs/measurements/then-and-now.md and the handouts (loadtest/report/then_and_now_page.py)."""

from __future__ import annotations

import argparse

from loadtest.core.manifest import REPO_ROOT
from loadtest.report.claims import ClaimError
from loadtest.report.then_and_now import VERDICTS, counts
from loadtest.report.then_and_now_page import judge_all_experiments, write_all


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("then-and-now", help="judge the experiments' claims on the committed runs")
    parser.set_defaults(func=cmd_then_and_now)


def cmd_then_and_now(args: argparse.Namespace) -> int:
    try:
        judgements = judge_all_experiments()
    except (ClaimError, OSError) as exc:
        print(f"then-and-now: {exc}")
        return 2
    for judgement in judgements:
        found = counts(judgement.judged)
        parts = ", ".join(f"{found[v]} {v}" for v in VERDICTS)
        print(f"{judgement.experiment.name}: {parts}; {len(judgement.experiment.untestable)} not testable")
    for path in write_all(judgements):
        print(f"then-and-now: {path.relative_to(REPO_ROOT)}")
    return 0
