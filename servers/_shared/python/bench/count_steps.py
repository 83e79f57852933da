"""The Python contract library's step program for ``scripts/count_instructions.py``.

``make instructions`` runs this under valgrind's callgrind, which dumps its
counters before every ``os.getppid()`` (a function the interpreter does not
otherwise call while the benchmarks run): for each benchmark of
``contract_bench.py`` a marker, no warm-up (the counts of 2026-11-29 had
none), a marker, no call, a marker, N calls, and the benchmark's name on
stdout. Hash randomisation is off (PYTHONHASHSEED=0, set by the driver), so
the counts repeat to the instruction, and the garbage collector is off while
counting (a collection would land on whichever step it falls in): the
counts are the path's own work.

The library's clock is held at one instant (``hold_the_clock``): what it
formats once a second (the hello text up to the seconds, the Date header)
would otherwise be spread over however many calls a second the host ran
under callgrind, a share that moves with the host's speed (hello moved
0.77% between two days). Held, it is formatted once per step, the same
whatever the speed; the clock itself is still called on every request.

    python servers/_shared/python/bench/count_steps.py --run [--calls N] [NAME ...]

Run directly, it makes the calls without callgrind (a dry run).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path
from typing import List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import contract_bench  # noqa: E402
from serverlab_contract import responses, workday  # noqa: E402

# The function callgrind dumps before (--dump-before=getppid).
MARKER = "getppid"


class HeldClock:
    """The ``time`` module as the library sees it while counting: the clock is
    called as before, and answers with one instant; the rest is ``time``'s."""

    def __init__(self) -> None:
        self.held_ns = time.time_ns()

    def time_ns(self) -> int:
        time.time_ns()
        return self.held_ns

    def time(self) -> float:
        time.time()
        return self.held_ns / 1e9

    def __getattr__(self, name: str):
        return getattr(time, name)


def hold_the_clock() -> None:
    """The library's modules that read the clock read a held one."""
    held = HeldClock()
    responses.time = held
    workday.time = held


def run_steps(names: List[str], calls: int) -> None:
    """For each benchmark: a marker, no warm-up, a marker, 0 calls, a marker, N calls."""
    hold_the_clock()
    app, router = contract_bench.build()
    found = dict(contract_bench.benchmarks(app, router))
    # A collection costs millions of instructions (the tables are large) and
    # would land in whichever step it happens to fall: off while counting.
    gc.collect()
    gc.disable()
    for name in names or list(found):
        for step_calls in (0, 0, calls):
            os.getppid()
            found[name](step_calls)
        print(name, flush=True)
    os.getppid()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="store_true", help="required: the steps")
    parser.add_argument("--calls", type=int, default=2000, help="N (default 2000)")
    parser.add_argument("names", nargs="*", help="benchmarks (default: every one)")
    args = parser.parse_args()
    run_steps(args.names, args.calls)


if __name__ == "__main__":
    main()
