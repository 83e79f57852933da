"""Each column of a scenario's table aggregates over the rounds as the page's note says
(report/render.py TABLE_COLUMNS): every such figure of a committed three-round run is
computed again from its records by the rule its column names."""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict

import pytest

from loadtest.report.render import (CEILING_SHARE_NOTE, HIGHEST, MEDIAN, OWN_NOTE,
                                     TABLE_COLUMNS, TABLE_HEAD, aggregation_note, markdown,
                                     table_cells)  # fmt: skip
from loadtest.report.run_rounds import MEASUREMENTS_DIR
from loadtest.report.summary import group_key, measurement_rows

RUN = MEASUREMENTS_DIR / "20261129-145742-wsgi-2016"  # 3 rounds, 7 stacks, 5 levels


def _latency(key):
    return lambda r: r["result"]["latency_ms"].get(key)


# How the figure of each aggregated column is read from one round's record.
READ = {
    "req/s (median)": lambda r: r["result"]["rps"],
    "p50 ms": _latency("p50"),
    "max ms": _latency("max"),
    "MB/s": lambda r: r["result"]["bytes_per_s"] / 1e6,
    "CPU %": lambda r: r["server"].get("cpu_mean_pct"),
    "RSS MiB": lambda r: r["server"]["rss_peak_bytes"] / 2**20,
    "tool CPU %": lambda r: r.get("tool_cpu_share", 0) * 100,
    "errors": lambda r: sum(r["result"]["errors"].values()),
}
STATISTIC = {MEDIAN: statistics.median, HIGHEST: max, "the sum": sum}
# Figures that must differ between a case's rounds somewhere, or reading a median
# where the page says the highest (or the reverse) would pass unseen.
MUST_TELL = ("p50 ms", "max ms", "CPU %", "RSS MiB")


def statistic_of(rule: str):
    return next(function for phrase, function in STATISTIC.items() if rule.startswith(phrase))


def number(cell: str) -> tuple[float, int]:
    """A cell's number and its decimals ("1,234.5" -> 1234.5, 1)."""
    text = re.match(r"[\d,]+(?:\.(\d+))?", cell)
    assert text, f"no number in {cell!r}"
    return float(text.group(0).replace(",", "")), len(text.group(1) or "")


@pytest.fixture(scope="module")
def cases():
    records = [json.loads(line) for line in (RUN / "results.jsonl").read_text().splitlines()]
    rounds = defaultdict(list)
    for record in records:
        if record.get("kind") == "measurement":
            rounds[group_key(record)].append(record)
    return [(row, rounds[group_key(row)]) for row in measurement_rows(records)]


def test_every_column_that_aggregates_names_its_rule_on_the_page():
    note = aggregation_note()
    for head, rule in TABLE_COLUMNS:
        if rule == OWN_NOTE:
            assert head in CEILING_SHARE_NOTE and head not in note
        elif rule:
            assert head in note and rule in note, head
    names_the_case = [head for head, rule in TABLE_COLUMNS if not rule]
    assert names_the_case == ["stack", "conn", "tool", "cores", "quota"]
    assert set(READ) <= set(TABLE_HEAD)


@pytest.mark.parametrize("head", list(READ))
def test_each_figure_is_its_columns_rule_over_the_rounds(cases, head):
    rule = dict(TABLE_COLUMNS)[head]
    column = TABLE_HEAD.index(head)
    told_apart = False
    for row, records in cases:
        counted = records if head == "errors" else [r for r in records if r["status"] == "ok"]
        values = [READ[head](r) for r in counted]
        expected = statistic_of(rule)(values)
        shown, decimals = number(table_cells(row)[column])
        # 0.6, not 0.5, of the last digit shown: summary.csv rounds first, the cell again.
        assert abs(shown - expected) <= 0.6 * 10**-decimals, (row["stack"], head, values)
        told_apart |= statistics.median(values) != max(values)
    assert told_apart or head not in MUST_TELL, f"no case of {RUN.name} tells {head}'s rule"


def test_the_markdown_page_carries_the_note(cases):
    rows = [row for row, _ in cases]
    page = markdown(rows, {}, {"run_id": RUN.name}, None)
    assert aggregation_note() in page
    assert "max ms: the highest of the rounds;" in page
