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

The library reads a clock held at one instant, the same on every day
(``held_at_ms`` in ``servers/_shared/microbench-cases.json``, read once at
start): the cost of formatting a time depends on its digits (Node.js's
hello: 9,442 instructions at 00:00:00.000, 9,076 at 23:59:59.999), and where
the library formats the second once a second, a live clock spreads that over
however many calls a second the host ran under callgrind. Held, the counts
repeat from day to day. The held clock is C code, as ``time.time`` is: a
Python-level one added 1,700 instructions to every WSGI case.

    python servers/_shared/python/bench/count_steps.py --run [--calls N] [NAME ...]

Run directly, it makes the calls without callgrind (a dry run).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import os
import sys
import time
import types
from pathlib import Path
from typing import Iterator, List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import contract_bench  # noqa: E402
from serverlab_contract import responses, workday  # noqa: E402

# The function callgrind dumps before (--dump-before=getppid).
MARKER = "getppid"


# The instant in microbench-cases.json, in nanoseconds.
HELD_AT_NS = contract_bench.held_at_ms() * 1_000_000


@contextlib.contextmanager
def clock_held() -> Iterator[None]:
    """While counting, the library's modules that read the clock see a copy of
    ``time`` whose time() and time_ns() answer HELD_AT_NS, through C calls as the
    real ones; their own ``time`` again after."""
    held = types.ModuleType("time")
    held.__dict__.update(vars(time))
    held.time_ns = itertools.repeat(HELD_AT_NS).__next__
    held.time = itertools.repeat(HELD_AT_NS / 1e9).__next__
    modules = (responses, workday)
    for module in modules:
        module.time = held
    try:
        yield
    finally:
        for module in modules:
            module.time = time


def run_steps(names: List[str], calls: int) -> None:
    """For each benchmark: a marker, no warm-up, a marker, 0 calls, a marker, N calls."""
    app, router = contract_bench.build()
    found = dict(contract_bench.benchmarks(app, router))
    # A collection costs millions of instructions (the tables are large) and
    # would land in whichever step it happens to fall: off while counting.
    gc.collect()
    gc.disable()
    try:
        with clock_held():
            for name in names or list(found):
                for step_calls in (0, 0, calls):
                    os.getppid()
                    found[name](step_calls)
                print(name, flush=True)
        os.getppid()
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="store_true", help="required: the steps")
    parser.add_argument("--calls", type=int, default=2000, help="N (default 2000)")
    parser.add_argument("names", nargs="*", help="benchmarks (default: every one)")
    args = parser.parse_args()
    run_steps(args.names, args.calls)


if __name__ == "__main__":
    main()
