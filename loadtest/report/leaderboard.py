"""The leaderboard: per scenario and connection level, stacks ranked by median
requests/s with a 95% interval, what limited each figure, and whether the gap
to the next stack is more than noise.

The gap obeys `make compare`'s rules (report/change.py): only rounds are
tested, Welch's t-test on log requests/s between the two stacks' rounds,
Benjamini-Hochberg over every gap of the report, and a gap smaller than the
noise floor is "within noise" however small its p. The ceiling is shown
under the ranking, unranked.
"""

from __future__ import annotations

from loadtest.report.change import CANNOT_TELL, NO_CHANGE, NOT_TESTED, Samples, judge_all
from loadtest.report.samples import ROUNDS

LEADERBOARD_HEAD = ["#", "stack", "req/s (median)", "95% interval", "limited by", "p99 ms",
                    "errors", "gap to next"]  # fmt: skip
LEADERBOARD_NOTE = (
    "Ranked by median requests/s (closed loop). The 95% interval is a bootstrap of the "
    "median over the rounds (REPEAT >= 2), or over the quarter-second windows of the one "
    "run, which are not independent and give a narrower interval: the caption says which. "
    "'gap to next' tells whether this stack is faster than the next one down beyond noise, "
    "by the rules of make compare: Welch's t on log requests/s over the rounds, corrected for "
    "every gap of the report at once (Benjamini-Hochberg, q < 0.05), and only beyond the noise "
    "floor (10%); with one round it is not tested (windows of one run do not show run-to-run "
    "noise). "
    "A figure marked (?) was limited by neither side and is not the stack's capacity."
)


def board_key(row: dict) -> tuple:
    return (row["scenario"], row["connections"], row["tool"], row.get("cpu_quota"),
            row.get("server_cores"))  # fmt: skip


def ranked_rows(rows: list[dict]) -> dict[tuple, list[dict]]:
    """Closed-loop measurement rows grouped per board, fastest first, ceiling last."""
    boards: dict[tuple, list[dict]] = {}
    for row in rows:
        if row.get("rate_spec") or row.get("phase") != "measure" or row["rps_median"] is None:
            continue
        boards.setdefault(board_key(row), []).append(row)
    for board in boards.values():
        board.sort(key=lambda r: (r["ceiling"], -r["rps_median"]))
    return dict(sorted(boards.items(), key=lambda item: str(item[0])))


def gaps(boards: dict[tuple, list[dict]]) -> dict[tuple[int, int], str]:
    """(id of the faster row, id of the next one down) -> the gap's verdict, every gap of
    the report judged together."""
    pairs, samples = [], []
    for board in boards.values():
        stacks = [r for r in board if not r["ceiling"]]
        for faster, slower in zip(stacks, stacks[1:], strict=False):
            rounds = faster.get("rps_ci_source") == slower.get("rps_ci_source") == ROUNDS
            pairs.append((id(faster), id(slower)))
            slow = slower.get("_rps_samples") or [slower["rps_median"]]
            fast = faster.get("_rps_samples") or [faster["rps_median"]]
            samples.append(Samples(slow, fast, rounds))
    judged = judge_all(samples)
    return {pair: gap_text(difference) for pair, difference in zip(pairs, judged, strict=True)}


def gap_text(difference) -> str:
    """A gap in the leaderboard's words: the faster stack is 'new', the slower 'old'."""
    if difference.verdict == NOT_TESTED:
        return "not tested (one round: REPEAT >= 2)"
    if difference.verdict == NO_CHANGE:
        return f"within noise ({difference.detail})"
    if difference.verdict == CANNOT_TELL:
        return f"cannot tell ({difference.detail})"
    return f"significant ({difference.detail})"


def caption(key: tuple, board: list[dict]) -> str:
    scenario, connections, tool, quota, cores = key
    parts = [f"{scenario}, {connections} connections, {tool}"]
    if quota is not None:
        parts.append(f"CPU quota {quota:g}")
    if cores is not None:
        parts.append(f"{cores} server core" + ("s" if cores != 1 else ""))
    sources = {r.get("rps_ci_source") for r in board if r.get("rps_ci_source")}
    over = "rounds" if sources == {ROUNDS} else ", ".join(sorted(sources)) or "no interval"
    return ", ".join(parts) + f" (interval over {over})"


def leaderboards(rows: list[dict], limited_by, mark) -> list[tuple[str, list[list[str]]]]:
    """(caption, table rows) per board. `limited_by(row)` and `mark(row)` come from
    the renderer, so the verdict reads the same here as in the detailed tables."""
    tables = []
    boards = ranked_rows(rows)
    gap_of = gaps(boards)
    for key, board in boards.items():
        stacks = [r for r in board if not r["ceiling"]]
        cells = []
        for place, row in enumerate(board, start=1):
            following = stacks[place] if not row["ceiling"] and place < len(stacks) else None
            interval = (f"{row['rps_ci_low']:,.0f} - {row['rps_ci_high']:,.0f}"
                        if row.get("rps_ci_low") is not None else "-")  # fmt: skip
            p99 = row.get("latency_p99_ms")
            cells.append([
                "-" if row["ceiling"] else str(place),
                row.get("display_name") or row["stack"],
                f"{row['rps_median']:,.0f}{mark(row)}",
                interval,
                limited_by(row),
                f"{p99:.2f}" if p99 is not None else "-",
                str(row.get("errors_total") or 0),
                gap_of[(id(row), id(following))] if following else "-",
            ])  # fmt: skip
        tables.append((caption(key, board), cells))
    return tables
