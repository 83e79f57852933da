"""The flags a summary row can carry, each with the note that explains it: one list,
read by the report's tables and notes and by the bench's closing table.

Each flag counts the runs of the row it applies to (`<column>` in summary.csv);
a row shows it as `NAME (runs/all)`.
"""

from __future__ import annotations

from dataclasses import dataclass

from loadtest.core.verdict import DRIFT_BOUND, JIT_QUIET_MS, RECHECK_BOUND


@dataclass(frozen=True)
class Flag:
    name: str
    column: str  # the summary column that counts the row's flagged runs
    note: str


FLAGS = (
    Flag("NOT-STEADY", "not_steady_runs",
         f"NOT-STEADY marks a case whose throughput drifted by more than {DRIFT_BOUND:.0%} "
         "between the first "
         "and the second half of the run (loopback bytes per window), or whose warm-up did not "
         "settle within its bound: a JIT still compiling, a cache filling, a server degrading."),
    Flag("COLD", "cold_runs",
         "COLD marks a case of a JIT stack measured before its compiler went quiet: after the "
         f"warm-up's bound its JIT still spent more than {JIT_QUIET_MS:g} ms of each second "
         "compiling (HotSpot's perf counters, .NET's dotnet.jit.compilation.time; "
         "loadtest/measure/jit.py). "
         "The figure is below what the warm stack serves."),
    Flag("DRIFTED", "drifted_runs",
         "DRIFTED marks every case of a stack instance whose first case, measured again after "
         f"its last, had changed by more than {RECHECK_BOUND:.0%} with intervals that do not "
         "overlap: the stack "
         "changed pace while it was measured (a JIT still compiling, a cache, a leak). The "
         "report's list of re-checks gives both figures."),
    Flag("STALL", "stalled_runs",
         "STALL marks a case in whose middle the server answered nothing for a quarter-second "
         "or more (loopback bytes per window under 1% of the median): the figure says more "
         "about the stall than about the server's pace, whatever its CPU did."),
    Flag("UNEVEN", "uneven_runs",
         "UNEVEN marks a case whose server served its connections unevenly: in the median "
         "half-second window one connection got under half of an even split of the requests, "
         "or one over twice as much (kernel counters per connection, loadtest/measure/"
         "fairness.py). Its latency percentiles describe connections left waiting, not the "
         "server's pace."),
    Flag("RECONNECTS", "reconnect_runs",
         "RECONNECTS marks a case whose server closed connections the load tool kept alive: in "
         "the median half-second window more than 10% of the connections were new. The figure "
         "then includes a TCP handshake for many of its requests (cheroot, for one, closes "
         "keep-alive connections beyond 10 idle ones)."),
)  # fmt: skip


def row_flags(row: dict) -> list[str]:
    """The flags of one row, as `NAME (flagged/runs)`."""
    return [f"{flag.name} ({row[flag.column]}/{row['runs']})" for flag in FLAGS
            if row.get(flag.column)]  # fmt: skip


def flag_names(row: dict) -> list[str]:
    return [flag.name for flag in FLAGS if row.get(flag.column)]


def flag_notes(rows: list[dict]) -> list[str]:
    """The note of every flag some row of `rows` carries."""
    return [flag.note for flag in FLAGS if any(r.get(flag.column) for r in rows)]
