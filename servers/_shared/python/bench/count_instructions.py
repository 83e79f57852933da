"""Instructions per call of each microbenchmark, counted with valgrind's callgrind.

Timings on a shared machine move by a quarter from run to run; instruction
counts do not. For each benchmark of ``contract_bench.py`` this runs the
interpreter under callgrind twice, once making N calls and once making none
(start-up, imports, the calendar and the tables: the same in both), and
prints (instructions with N calls - instructions with 0) / N. Hash
randomisation is off (PYTHONHASHSEED=0), so that both runs build the same
dicts and sets and the counts repeat to the instruction.

    python servers/_shared/python/bench/count_instructions.py [--calls N] [--bench NAME ...]

The interpreter is the one running this script; give valgrind the real
binary, not a pyenv shim (``$(pyenv root)/versions/3.13.0/bin/python3.13``).
Needs valgrind; pyperf is not used.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

COLLECTED = re.compile(r"Collected : (\d+)")


def run_calls(name: str, calls: int) -> None:
    """What runs under callgrind: build everything, then ``calls`` calls of one benchmark."""
    import contract_bench

    app, router = contract_bench.build()
    found = dict(contract_bench.benchmarks(app, router))
    found[name](calls)


def instructions(name: str, calls: int) -> int:
    """Instructions of a whole process that makes ``calls`` calls of benchmark ``name``."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--run",
        name,
        str(calls),
    ]
    environ = dict(os.environ, PYTHONHASHSEED="0")
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=environ)
    return int(COLLECTED.search(done.stderr).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20000, help="N (default 20000)")
    parser.add_argument("--bench", action="append", help="only these benchmarks (repeatable)")
    parser.add_argument("--run", nargs=2, metavar=("NAME", "CALLS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        run_calls(args.run[0], int(args.run[1]))
        return
    import contract_bench

    names = args.bench or [
        f"{way}:{case.name}" for way in ("wsgi", "router") for case in contract_bench.CASES
    ]
    baseline = {}
    print(f"# {sys.version.split()[0]}, {args.calls} calls minus 0 calls, per call")
    for name in names:
        way = name.split(":", 1)[0]
        if way not in baseline:
            baseline[way] = instructions(name, 0)
        per_call = (instructions(name, args.calls) - baseline[way]) / args.calls
        print(f"{name}\t{per_call:.0f}", flush=True)


if __name__ == "__main__":
    main()
