"""Instructions per call of each microbenchmark, counted with valgrind's callgrind.

Timings on a shared machine move by a quarter from run to run; instruction
counts do not. This runs the interpreter under callgrind once: it builds
what ``contract_bench.py`` builds, then for each benchmark makes no call and
then N calls, calling ``os.getppid()`` between the steps. callgrind, told to
dump its counters before every ``getppid`` (and to zero them after each
dump), thus writes one count per step, and each benchmark gets

    (instructions of N calls - instructions of 0 calls) / N

so the loop's own set-up cancels out. Hash randomisation is off
(PYTHONHASHSEED=0), so the counts repeat to the instruction, and the
garbage collector is off while counting (a collection would land on
whichever step it falls in): the counts are the path's own work.

    python servers/_shared/python/bench/count_instructions.py [--calls N] [--bench NAME ...]

The interpreter is the one running this script; give valgrind the real
binary, not a pyenv shim (``$(pyenv root)/versions/3.13.0/bin/python3.13``).
Needs valgrind; pyperf is not used.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TOTALS = re.compile(r"^(?:totals|summary): (\d+)", re.MULTILINE)
# A function the interpreter does not otherwise call while the benchmarks run.
MARKER = "getppid"


def run_steps(names: List[str], calls: int) -> None:
    """What runs under callgrind: for each benchmark a marker, 0 calls, a marker, N calls."""
    import contract_bench

    app, router = contract_bench.build()
    found = dict(contract_bench.benchmarks(app, router))
    # A collection costs millions of instructions (the tables are large) and
    # would land in whichever step it happens to fall: off while counting.
    gc.collect()
    gc.disable()
    for name in names:
        os.getppid()
        found[name](0)
        os.getppid()
        found[name](calls)
    os.getppid()


def step_counts(names: List[str], calls: int) -> List[int]:
    """Instructions of each step, in order: start-up, then 0 and N calls of each benchmark."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        command += [f"--dump-before={MARKER}", sys.executable, __file__, "--calls", str(calls)]
        command += ["--run", *names]
        environ = dict(os.environ, PYTHONHASHSEED="0")
        subprocess.run(command, capture_output=True, text=True, check=True, env=environ)
        dumps = sorted(Path(folder).glob("callgrind.out*"), key=dump_number)
        return [int(TOTALS.search(dump.read_text()).group(1)) for dump in dumps]


def dump_number(path: Path) -> int:
    """callgrind.out.1, .2, ... in order; the final dump (at exit) has no number."""
    suffix = path.name.rsplit(".", 1)[-1]
    return int(suffix) if suffix.isdigit() else sys.maxsize


def per_call(names: List[str], calls: int) -> Dict[str, float]:
    counts = step_counts(names, calls)
    # counts[0]: start-up; then (0 calls, N calls) per benchmark; last: the exit.
    steps = counts[1 : 1 + 2 * len(names)]
    return {name: (steps[2 * i + 1] - steps[2 * i]) / calls for i, name in enumerate(names)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="N (default 2000)")
    parser.add_argument("--bench", action="append", help="only these benchmarks (repeatable)")
    parser.add_argument("--run", nargs="+", metavar="NAME", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        run_steps(args.run, args.calls)
        return
    import contract_bench

    names = args.bench or [
        f"{way}:{case.name}" for way in ("wsgi", "router") for case in contract_bench.CASES
    ]
    print(f"# {sys.version.split()[0]}, instructions per call ({args.calls} calls minus none)")
    for name, count in per_call(names, args.calls).items():
        print(f"{name}\t{count:.0f}")


if __name__ == "__main__":
    main()
