"""The leaderboard: per scenario and connection level, stacks ranked by median
requests/s with a 95% interval, what limited each figure, and whether the gap
to the next stack is more than noise.

The gap is tested only over rounds, with Mann-Whitney U (p < 0.05) when both
stacks have at least MWU_MIN_SAMPLES of them; with fewer (three rounds cannot
reach p < 0.05) the intervals decide: a gap counts only when they do not
overlap. Each row says which rule decided. The ceiling is shown under the ranking, unranked.
"""

from __future__ import annotations

from loadtest.core.stats import mann_whitney_p
from loadtest.report.samples import ROUNDS

MWU_MIN_SAMPLES = 4
SIGNIFICANCE = 0.05
LEADERBOARD_HEAD = ["#", "stack", "req/s (median)", "95% interval", "limited by", "p99 ms",
                    "errors", "gap to next"]  # fmt: skip
LEADERBOARD_NOTE = (
    "Ranked by median requests/s (closed loop). The 95% interval is a bootstrap of the "
    "median over the rounds (REPEAT >= 2), or over the quarter-second windows of the one "
    "run, which are not independent and give a narrower interval: the caption says which. "
    "'gap to next' tells whether this stack is faster than the next one down beyond noise: "
    "Mann-Whitney U (p < 0.05) with 4 or more rounds each, else non-overlapping intervals; "
    "with one round it is not tested (windows of one run do not show run-to-run noise). "
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


def gap(faster: dict, slower: dict) -> str:
    """Whether `faster` beats `slower` beyond noise, and by which rule.

    Only rounds are independent: the windows of one run say nothing of how
    much the next run would differ (10-15% on a shared 2-core VM), so with
    one round a gap is not tested."""
    if faster.get("rps_ci_source") != ROUNDS or slower.get("rps_ci_source") != ROUNDS:
        return "not tested (one round: REPEAT >= 2)"
    a, b = faster.get("_rps_samples") or [], slower.get("_rps_samples") or []
    if len(a) >= MWU_MIN_SAMPLES and len(b) >= MWU_MIN_SAMPLES:
        p = mann_whitney_p(a, b)
        verdict = "significant" if p is not None and p < SIGNIFICANCE else "within noise"
        return f"{verdict} (MWU p={p:.3f})"
    low, high = faster.get("rps_ci_low"), slower.get("rps_ci_high")
    if low is None or high is None:
        return "unknown (one sample each)"
    verdict = "significant" if low > high else "within noise"
    return f"{verdict} (intervals)"


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
    for key, board in ranked_rows(rows).items():
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
                gap(row, following) if following else "-",
            ])  # fmt: skip
        tables.append((caption(key, board), cells))
    return tables
