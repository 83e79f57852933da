"""`make measurements`: the text of every run committed under docs/measurements written
again by the report's rules as they stand (loadtest/report/committed.py)."""

from __future__ import annotations

import argparse

from loadtest.core.manifest import REPO_ROOT
from loadtest.report.committed import committed_runs, write_again
from loadtest.report.compare import CompareError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "measurements", help="write again the summaries and A/B pages of the committed runs"
    )
    parser.set_defaults(func=cmd_measurements)


def cmd_measurements(args: argparse.Namespace) -> int:
    failed = 0
    for folder in committed_runs():
        name = folder.relative_to(REPO_ROOT)
        try:
            written = write_again(folder)
        except (CompareError, OSError, ValueError) as exc:
            print(f"measurements: {name}: {exc}")
            failed += 1
            continue
        print(f"measurements: {name}: {', '.join(path.name for path in written)}")
    return 1 if failed else 0
