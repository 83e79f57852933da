"""The flags a summary row can carry, each with the note that explains it: one list,
read by the report's tables and notes, the bench's closing table, the leaderboard
and `make compare`, which mark (or leave out) each flagged round.

Each flag counts the runs of the row it applies to (`<column>` in summary.csv);
a row shows it as `NAME (runs/all)`. DRIFTED is judged here, over the whole
run, by core/change.py's rule: the ceiling's re-checks of the run are only all
known at its end.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass

from loadtest.core.change import MIN_EFFECT, STATE_GAP, drifted, window_spread
from loadtest.core.verdict import DRIFT_BOUND, JIT_QUIET_MS
from loadtest.measure.steady import window_rates

# A round of a JIT stack whose compiler could not be read (another host, no reading):
# the windows alone judged it warm. Shown where its figure is, not a flag of its own.
JIT_UNREAD = "JIT signal never arrived"


@dataclass(frozen=True)
class Flag:
    name: str
    column: str  # the summary column that counts the row's flagged runs
    note: str
    # Whether one measurement record carries it (the second argument: the run's DRIFTED
    # instances, from drifted_instances).
    applies: Callable[[dict, dict], bool] = lambda record, drifted: False


FLAGS = (
    Flag("NOT-STEADY", "not_steady_runs",
         f"NOT-STEADY marks a case whose throughput drifted by more than {DRIFT_BOUND:.0%} "
         "between the first "
         "and the second half of the run (loopback bytes per window), or whose warm-up did not "
         "settle within its bound: a JIT still compiling, a cache filling, a server degrading.",
         lambda r, d: bool(r.get("not_steady"))),
    Flag("COLD", "cold_runs",
         "COLD marks a case of a JIT stack measured before its compiler went quiet: after the "
         f"warm-up's bound its JIT still spent more than {JIT_QUIET_MS:g} ms of each second "
         "compiling (HotSpot's perf counters, .NET's dotnet.jit.compilation.time; "
         "loadtest/measure/jit.py). "
         "The figure is below what the warm stack serves.",
         lambda r, d: bool(r.get("jit_cold"))),
    Flag("DRIFTED", "drifted_runs",
         "DRIFTED marks every case of a stack instance whose first case, measured again after "
         f"its last, had changed by more than {MIN_EFFECT:.0%} and by more than the spread of the "
         "instance's own windows and of the ceiling's re-checks in the same run (how far the "
         "host moved meanwhile) allows, by Student's t: the stack changed pace while it was "
         "measured (a "
         "JIT still compiling, a cache, a leak). The report's list of re-checks gives both "
         "figures.",
         lambda r, d: instance_key(r) in d),
    Flag("STALL", "stalled_runs",
         "STALL marks a case in whose middle the server answered nothing for a quarter-second "
         "or more (loopback bytes per window under 1% of the median): the figure says more "
         "about the stall than about the server's pace, whatever its CPU did.",
         lambda r, d: r.get("cause") == "stall"),
    Flag("UNEVEN", "uneven_runs",
         "UNEVEN marks a case whose server served its connections unevenly: in the median "
         "half-second window one connection got under half of an even split of the requests, "
         "or one over twice as much (kernel counters per connection, loadtest/measure/"
         "fairness.py). Its latency percentiles describe connections left waiting, not the "
         "server's pace.",
         lambda r, d: bool(r.get("uneven"))),
    Flag("RECONNECTS", "reconnect_runs",
         "RECONNECTS marks a case whose server closed connections the load tool kept alive: in "
         "the median half-second window more than 10% of the connections were new. The figure "
         "then includes a TCP handshake for many of its requests (cheroot, for one, closes "
         "keep-alive connections beyond 10 idle ones).",
         lambda r, d: bool(r.get("reconnects"))),
)  # fmt: skip


# A row whose rounds fall into two states (core/change.py, rule 8): a flag of the case,
# not of a round, so no round is left out for it; the row shows both states.
TWO_STATES = "TWO-STATES"
TWO_STATES_NOTE = (
    f"{TWO_STATES} marks a case whose rounds fell into two groups far apart, each tight (a step "
    f"of {STATE_GAP - 1:.0%} or more between them, three times the wider group's own range): "
    "two states of the stack or of the host, or, where one group is a single round, one "
    "round far from the rest, which a few rounds cannot tell from a second state. Its median "
    "is one of them or neither; both are given, and a comparison of the case says so. "
    "docs/measurements/two-states.md has what was found of the cause."
)


def row_flags(row: dict) -> list[str]:
    """The flags of one row, as `NAME (flagged/runs)`; two states as both states."""
    flags = [f"{flag.name} ({row[flag.column]}/{row['runs']})" for flag in FLAGS
             if row.get(flag.column)]  # fmt: skip
    return flags + ([f"{TWO_STATES} ({row['two_states']})"] if row.get("two_states") else [])


def flag_names(row: dict) -> list[str]:
    names = [flag.name for flag in FLAGS if row.get(flag.column)]
    return names + ([TWO_STATES] if row.get("two_states") else [])


def flag_notes(rows: list[dict]) -> list[str]:
    """The note of every flag some row of `rows` carries."""
    notes = [flag.note for flag in FLAGS if any(r.get(flag.column) for r in rows)]
    return notes + ([TWO_STATES_NOTE] if any(r.get("two_states") for r in rows) else [])


def instance_key(record: dict) -> tuple:
    """The stack instance a record was measured on (one start of the server)."""
    return (record["stack"], record.get("repetition"), record.get("cpu_quota"),
            record.get("server_cores"))  # fmt: skip


def record_flags(record: dict, drifted_of_run: dict) -> list[str]:
    """The flags of one measurement (one round), with client-bound and NOISY, which the
    verdict column shows in the tables, and JIT_UNREAD."""
    names = [flag.name for flag in FLAGS if flag.applies(record, drifted_of_run)]
    names += ["client-bound"] if record.get("client_bound") else []
    names += ["NOISY"] if record.get("noisy") else []
    return names + ([JIT_UNREAD] if jit_unread(record) else [])


def jit_unread(record: dict) -> bool:
    """A JIT stack whose compiler was never read, so the windows alone called it warm."""
    return bool(record.get("jit_signal")) and record.get("jit_quiet_after_s") is None and not (
        record.get("jit_cold"))


def drifted_instances(records: list[dict]) -> dict[tuple, dict]:
    """The instances whose first case, measured again at their end, changed pace beyond
    their own windows' spread and the ceiling's re-checks of the run (core/change.py)."""
    ceilings = {r["stack"] for r in records if r.get("kind") == "measurement" and r.get("ceiling")}
    rechecks = [r for r in records if r.get("kind") == "recheck" and r.get("change") is not None]
    firsts = {r.get("seq"): r for r in records if r.get("kind") == "measurement"}
    found = {}
    for recheck in rechecks:
        host = [other["change"] for other in rechecks
                if other["stack"] in ceilings and other is not recheck]  # fmt: skip
        first = firsts.get(recheck.get("first_seq")) or {}
        windows = window_rates(recheck["first_rps"],
                               (first.get("server") or {}).get("loopback_bytes_per_s") or [])
        if drifted(recheck["first_rps"], recheck["again_rps"], window_spread(windows), host):
            found[instance_key(recheck)] = recheck
    return found


def mark_rounds(records: list[dict], leave_out: bool = False) -> tuple[list[dict], int]:
    """Each measurement record with its flags under `_flags`; with `leave_out`, the
    flagged ones taken out (a JIT that was not read is shown, not left out). Returns the
    records kept and how many were left out."""
    drifted_of_run = drifted_instances(records)
    kept, left_out = [], 0
    for record in records:
        if record.get("kind") == "measurement":
            record["_flags"] = record_flags(record, drifted_of_run)
            if leave_out and set(record["_flags"]) - {JIT_UNREAD}:
                left_out += 1
                continue
        kept.append(record)
    return kept, left_out


def flags_text(records: list[dict]) -> str:
    """The flags of a case's rounds (records marked by mark_rounds)."""
    return count_flags([record.get("_flags", []) for record in records])


def count_flags(per_round: list[list[str]]) -> str:
    """'COLD 1/3, JIT signal never arrived 3/3' from each round's flags, or ''."""
    names = [name for flags in per_round for name in flags]
    return ", ".join(f"{name} {names.count(name)}/{len(per_round)}" for name in dict.fromkeys(names))


# FLAGGED on make's command line reaches the harness in its environment.
FLAGGED_CHOICES = ("mark", "leave-out")


def add_flagged_argument(parser: argparse.ArgumentParser) -> None:
    """--flagged mark|leave-out (FLAGGED): flagged rounds marked, or left out as well."""
    parser.add_argument("--flagged", choices=FLAGGED_CHOICES,
                        default=os.environ.get("FLAGGED") or "mark",
                        help="flagged rounds (COLD, DRIFTED, NOT-STEADY...): mark them (default) "
                             "or leave them out")  # fmt: skip
