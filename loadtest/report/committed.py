"""The runs committed under docs/measurements, written again by the rules as they stand.

A committed run keeps its records (`results.jsonl`, `run.json`) and its text:
`summary.csv`, `summary.md` and, for an A/B run, `ab.md`. Its charts are not
kept (`make report RUN=docs/measurements/<run>` draws them, untracked). When a
rule of the report changes, `make measurements` writes that text again, and a
test holds every committed page to what it would write, so that no page shows
a verdict the harness no longer gives.
"""

from __future__ import annotations

import json
from pathlib import Path

from loadtest.bench.results import RESULTS_FILE, RUN_FILE
from loadtest.report import generate
from loadtest.report.compare import compare_sides
from loadtest.report.run_rounds import MEASUREMENTS_DIR

# What a committed run's folder keeps besides its records: each is written again here.
KEPT_TEXT = ("summary.csv", "summary.md", "ab.md")


def committed_runs(root: Path = MEASUREMENTS_DIR) -> list[Path]:
    """Every committed run that kept its records (older ones kept their summary alone)."""
    return sorted(path.parent for path in root.rglob(RESULTS_FILE))


def is_ab_run(folder: Path) -> bool:
    run = folder / RUN_FILE
    return run.is_file() and bool(json.loads(run.read_text()).get("ab"))


def write_again(folder: Path, root: Path = MEASUREMENTS_DIR,
                shown_as: str | None = None) -> list[Path]:  # fmt: skip
    """A committed run's text, from its records; the host's A/As are looked for among
    the committed ones under `root`. `shown_as`: the RUN= its page names."""
    written = generate(folder, drawn=False, shown_as=shown_as)
    if is_ab_run(folder):
        written.append(compare_sides(folder, drawn=False, aa_root=root))
    return written
