"""tfb-parity.md's ten-round table is what the comparison rule computes from the committed rounds.

docs/measurements/tfb-parity/ keeps every round of the parity run (each target's
requests/s and p99, one wrk load each); this writes the table's rows again from
them with core/change (the ratio and its interval from Welch's test on log
requests/s, the detection limit) and finds each row, character for character,
in the page. A figure edited by hand, or a pair quoted from fewer than ten
rounds, fails here. Files only: no server is started.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from pathlib import Path

from loadtest.core.change import SIGNIFICANCE, Samples, detection_limit, judge_all
from loadtest.core.manifest import REPO_ROOT

MEASURED = REPO_ROOT / "docs" / "measurements"
PAGE = MEASURED / "tfb-parity.md"
ROUNDS_FILE = MEASURED / "tfb-parity" / "rounds-20261129.jsonl"
TARGETS = ("ours_workday", "ours_hello", "tfb_plaintext", "ceiling_hello")
MIN_ROUNDS = 10
PARITY = 0.9
TFB_ENTRY = {"gin": "gin-std", "go-nethttp": "go (go-std)", "fastify": "fastify",
             "axum": "axum (default)", "spring-webflux": "spring-webflux", "spring-mvc": "spring",
             "sanic": "sanic", "uwsgi": "uwsgi", "cherrypy": "cherrypy", "meinheld": "wsgi",
             "bjoern": "falcon-bjoern", "flask-gevent": "flask", "flask-pypy": "flask-pypy"}  # fmt: skip


def rounds_by_pair(path: Path = ROUNDS_FILE) -> dict[str, list[dict[str, dict]]]:
    """pair -> its rounds in order, each {target: record}."""
    found: dict[str, dict[int, dict]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        record = json.loads(line)
        found[record["pair"]].setdefault(record["round"], {})[record["target"]] = record
    return {pair: [rounds[n] for n in sorted(rounds)] for pair, rounds in found.items()}


def geometric_mean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def placed(interval: tuple[float, float]) -> str:
    low, high = interval
    if low >= PARITY:
        return "at or above 0.9"
    return "below 0.9" if high < PARITY else "cannot tell"


def table_rows(path: Path = ROUNDS_FILE) -> list[str]:
    pairs = rounds_by_pair(path)
    rps = {pair: {t: [r[t]["rps"] for r in rounds] for t in TARGETS} for pair, rounds in pairs.items()}
    workday = [Samples(old=rps[p]["tfb_plaintext"], new=rps[p]["ours_workday"]) for p in pairs]
    hello = [Samples(old=rps[p]["tfb_plaintext"], new=rps[p]["ours_hello"]) for p in pairs]
    verdicts = judge_all(workday + hello)  # every ratio of the table corrected together
    rows = []
    for i, (pair, rounds) in enumerate(pairs.items()):
        mine, theirs = verdicts[i], verdicts[len(pairs) + i]
        figures = rps[pair]
        per_round = [o / t for o, t in zip(figures["ours_workday"], figures["tfb_plaintext"])]
        limit = detection_limit(workday[i], len(rounds), len(rounds), SIGNIFICANCE)
        p99 = [statistics.median(r[t]["p99_ms"] for r in rounds)
               for t in ("ours_workday", "tfb_plaintext")]  # fmt: skip
        means = " | ".join(f"{geometric_mean(figures[t]):,.0f}" for t in TARGETS)
        rows.append(
            f"| {pair} | {TFB_ENTRY[pair]} | {len(rounds)} | {means} | "
            f"**{mine.ratio:.2f}** ({mine.interval[0]:.2f}-{mine.interval[1]:.2f}) | "
            f"{placed(mine.interval)} | {limit:.0%} | {min(per_round):.2f}-{max(per_round):.2f} | "
            f"{theirs.ratio:.2f} ({theirs.interval[0]:.2f}-{theirs.interval[1]:.2f}) | "
            f"{p99[0]:.1f} / {p99[1]:.1f} |"
        )
    return rows


def short_pairs(path: Path) -> list[str]:
    """Pairs quoted from fewer than ten rounds, or with a round that misses a target."""
    return [pair for pair, rounds in rounds_by_pair(path).items()
            if len(rounds) < MIN_ROUNDS or any(set(r) != set(TARGETS) for r in rounds)]  # fmt: skip


def missing_rows(path: Path) -> list[str]:
    page = PAGE.read_text()
    return [row for row in table_rows(path) if row not in page]


def edited_copy(tmp_path: Path, keep) -> Path:
    """The committed rounds with some records changed or left out by keep(record)."""
    lines = [json.loads(line) for line in ROUNDS_FILE.read_text().splitlines()]
    copy = tmp_path / ROUNDS_FILE.name
    copy.write_text("".join(json.dumps(r) + "\n" for r in map(keep, lines) if r is not None))
    return copy


def test_every_pair_has_ten_rounds_each_with_every_target():
    assert set(rounds_by_pair()) == set(TFB_ENTRY)
    assert short_pairs(ROUNDS_FILE) == []


def test_a_pair_with_nine_rounds_is_caught(tmp_path):
    nine = edited_copy(tmp_path, lambda r: None if (r["pair"], r["round"]) == ("gin", 10) else r)
    assert short_pairs(nine) == ["gin"]


def test_the_table_is_what_the_rule_computes_from_the_rounds():
    missing = missing_rows(ROUNDS_FILE)
    assert not missing, "rows the committed rounds give and the page lacks:\n" + "\n".join(missing)


def test_a_figure_that_is_not_the_rounds_is_caught(tmp_path):
    # One round of TFB's sanic 10% faster: the page's sanic row no longer follows.
    def faster(record):
        if (record["pair"], record["round"], record["target"]) == ("sanic", 1, "tfb_plaintext"):
            return dict(record, rps=record["rps"] * 1.1)
        return record

    assert [row.split(" |")[0] for row in missing_rows(edited_copy(tmp_path, faster))] == ["| sanic"]
