"""Each column of a scenario's table aggregates over the rounds as the page's note says
(report/render.py TABLE_COLUMNS), and each summary.csv figure a committed run's rounds are
read from as its rule says (report/summary.py aggregation): every such figure of a
committed three-round run is computed again from its records by the rule it names."""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict

import pytest

from loadtest.report.render import (CEILING_SHARE_NOTE, OWN_NOTE, TABLE_COLUMNS, TABLE_HEAD,
                                     aggregation_note, markdown, table_cells)  # fmt: skip
from loadtest.report.run_rounds import (MEASUREMENTS_DIR, READERS, SUMMARY_COLUMNS,
                                        summary_rounds)  # fmt: skip
from loadtest.report.summary import (HIGHEST, MEDIAN, ONE_RESPONSE, aggregation, group_key,
                                     measurement_rows)  # fmt: skip

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


def errors_over_attempted(records: list[dict]) -> float:
    errors = sum(sum(r["result"]["errors"].values()) for r in records)
    non2xx = sum(r["result"]["errors"].get("non2xx", 0) for r in records)
    return errors / (sum(r["result"]["requests"] for r in records) + errors - non2xx)


# Each rule a summary.csv figure can name, as a computation over the case's records.
BY_RULE = {
    MEDIAN: lambda read, records: statistics.median(read(r) for r in _ok(records)),
    HIGHEST: lambda read, records: max(read(r) for r in _ok(records)),
    ONE_RESPONSE: lambda read, records: read(records[0]),
    aggregation("errors_total"): lambda read, records: sum(read(r) for r in records),
    aggregation("error_rate"): lambda read, records: errors_over_attempted(records),
}


def _ok(records: list[dict]) -> list[dict]:
    return [r for r in records if r["status"] == "ok"]


@pytest.mark.parametrize("metric", list(SUMMARY_COLUMNS))
def test_a_summary_only_figure_names_the_rule_it_was_made_by(cases, metric):
    column = SUMMARY_COLUMNS[metric]
    rule = aggregation(column)
    for row, records in cases:
        expected = BY_RULE[rule](READERS[metric], records)
        assert float(row[column]) == pytest.approx(expected, rel=1e-3, abs=1e-3), (row["stack"],
                                                                                   column)
        shown = summary_rounds({**row, "runs": 4}, metric)  # four: no min-median-max to read
        if not shown.values:
            assert f"only: {rule}, no rounds" in shown.missing, (column, shown)
