"""The leaderboard: per scenario and connection level, stacks ranked by the
statistic `make compare` tests (the geometric mean of their rounds), with the
median requests/s and its 95% interval, what limited each figure, which rounds
carry a flag, and whether the gap to the next stack is more than noise.

The gap is `make compare`'s verdict on the pair (core/change.py, through
`gap_samples`): both stacks are rounds of one invocation, so no run-to-run
spread enters; every gap of the report is corrected together. The ceiling is
shown under the ranking, unranked.
"""

from __future__ import annotations

from loadtest.core.change import (
    CANNOT_TELL,
    MIN_EFFECT,
    MIN_ROUNDS,
    MORE_ROUNDS,
    NO_CHANGE,
    NOT_TESTED,
    Samples,
    central,
    judge_all,
)
from loadtest.measure.tools import latency_decimals
from loadtest.report.flags import JIT_UNREAD, TWO_STATES, count_flags
from loadtest.report.samples import ROUNDS

LEADERBOARD_HEAD = ["#", "stack", "req/s (geometric mean)", "95% interval", "req/s (median)",
                    "limited by", "p99 ms (rounds' range)", "errors", "flagged rounds",
                    "gap to next"]  # fmt: skip
LEADERBOARD_NOTE = (
    "Ranked by the geometric mean of the rounds' requests/s (closed loop), the figure the gap "
    "tests, or by the median where there is one round. The median is shown beside it: where "
    "the rounds disagree (a stack in two states) the two can rank differently. The 95% "
    "interval is that of the geometric mean, Student's t on the logarithms of the rounds "
    "(REPEAT >= 2: wide at three rounds, as three rounds are), or, with one round, a bootstrap "
    "of the mean of its quarter-second windows, which are not independent and give a narrower "
    "interval: the caption says which. "
    "'gap to next' is make compare's verdict on this stack against the next one down: Welch's "
    f"t on log requests/s over the rounds ({MIN_ROUNDS} or more a side), corrected for every "
    f"gap of the report at once (Benjamini-Hochberg, q < 0.05), only beyond the {MIN_EFFECT:.0%} "
    "floor, and where it is not called, the smallest gap these rounds would detect with 80% "
    f"power and what {MORE_ROUNDS} rounds would. Fewer rounds are not tested (windows of one "
    "run do not show run-to-run noise). 'flagged rounds' counts the rounds carrying a flag "
    f"(COLD, DRIFTED, NOT-STEADY, client-bound...), those where the {JIT_UNREAD}, and "
    f"{TWO_STATES} with both states; "
    "A gap is tested over flagged rounds too, so read its verdict with the flags of both "
    "rows (docs/measurements/then-and-now.md decides nothing on a flagged figure); "
    "FLAGGED=leave-out ranks and tests without them. "
    "A figure marked (?) was limited by neither side and is not the stack's capacity."
)


def leaderboard_note(run: dict) -> str:
    """The note, with how many flagged rounds were left out when FLAGGED=leave-out."""
    left_out = run.get("_flagged_left_out")
    if left_out is None:
        return LEADERBOARD_NOTE
    return LEADERBOARD_NOTE + f" FLAGGED=leave-out: {left_out} flagged rounds left out."


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
        board.sort(key=lambda r: (r["ceiling"], -rank_figure(r)))
    return dict(sorted(boards.items(), key=lambda item: str(item[0])))


def rank_figure(row: dict) -> float:
    """The figure a row is ranked by: what the gap tests (core/change.py `central`)."""
    return rounds_mean(row) or row["rps_median"]


def rounds_mean(row: dict) -> float | None:
    """The geometric mean of the row's rounds, None for the windows of one run."""
    samples = row.get("_rps_samples")
    return central(samples) if samples and row.get("rps_ci_source") == ROUNDS else None


def gap_samples(slower: dict, faster: dict) -> Samples:
    """One gap as `make compare` sees a case: the slower stack 'old', the faster 'new',
    rounds of one invocation."""
    rounds = faster.get("rps_ci_source") == slower.get("rps_ci_source") == ROUNDS
    slow = slower.get("_rps_samples") or [slower["rps_median"]]
    fast = faster.get("_rps_samples") or [faster["rps_median"]]
    return Samples(slow, fast, rounds)


def gap_pairs(boards: dict[tuple, list[dict]]) -> list[tuple[dict, dict]]:
    """(faster row, next one down) for every gap of the report, in order."""
    pairs = []
    for board in boards.values():
        stacks = [r for r in board if not r["ceiling"]]
        pairs += list(zip(stacks, stacks[1:], strict=False))
    return pairs


def gaps(boards: dict[tuple, list[dict]]) -> dict[tuple[int, int], str]:
    """(id of the faster row, id of the next one down) -> the gap's verdict, every gap of
    the report judged together."""
    pairs = gap_pairs(boards)
    judged = judge_all([gap_samples(slower, faster) for faster, slower in pairs])
    return {(id(faster), id(slower)): gap_text(difference)
            for (faster, slower), difference in zip(pairs, judged, strict=True)}  # fmt: skip


def gap_text(difference) -> str:
    """A gap in the leaderboard's words: the faster stack is 'new', the slower 'old'."""
    if difference.verdict == NOT_TESTED:
        return f"not tested ({difference.detail})"
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
    if not sources:
        return ", ".join(parts) + " (no interval: too few rounds or windows to bound it)"
    over = "rounds" if sources == {ROUNDS} else ", ".join(sorted(sources))
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
            mean = rounds_mean(row)
            cells.append([
                "-" if row["ceiling"] else str(place),
                row.get("display_name") or row["stack"],
                f"{mean:,.0f}" if mean else "-",
                interval,
                f"{row['rps_median']:,.0f}{mark(row)}",
                limited_by(row),
                p99_text(row),
                str(row.get("errors_total") or 0),
                flagged_rounds(row),
                gap_of[(id(row), id(following))] if following else "-",
            ])  # fmt: skip
        tables.append((caption(key, board), cells))
    return tables


def p99_text(row: dict) -> str:
    """'18 (17 - 20)': the median p99 of the rounds and, with two or more, their range,
    to the decimals the tool measures."""
    digits = latency_decimals(row["tool"])
    value, low, high = (row.get(f"latency_{key}_ms") for key in ("p99", "p99_min", "p99_max"))
    if value is None:
        return "-"
    text = f"{value:,.{digits}f}"
    if low is None or high is None or low == high:
        return text
    return f"{text} ({low:,.{digits}f} - {high:,.{digits}f})"


def flagged_rounds(row: dict) -> str:
    """'COLD 1/3, JIT signal never arrived 3/3' from the flags of the row's samples, and
    the row's two states ('TWO-STATES (2 rounds at 12,232 req/s, 1 at 20,661)')."""
    per_sample = row.get("_rps_flags") or []
    if row.get("rps_ci_source") != ROUNDS:
        per_sample = per_sample[:1]  # the windows of one run share its record's flags
    states = [f"{TWO_STATES} ({row['two_states']})"] if row.get("two_states") else []
    return ", ".join(filter(None, [count_flags(per_sample), *states])) or "-"
