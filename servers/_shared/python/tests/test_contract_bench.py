"""The microbenchmark (bench/contract_bench.py) still runs: one call of each case, no timing.

A benchmark nobody runs rots silently; this keeps every case answering the
status it names, and, where pyperf is installed (the tooling venv), the
script itself running one value of every benchmark.
"""

import gc
import json
import subprocess
import sys
import time

import pytest
from python_contract_data import PACKAGE_ROOT, REPO_ROOT
from serverlab_contract import responses, workday

sys.path.insert(0, str(PACKAGE_ROOT / "bench"))
import contract_bench  # noqa: E402
import count_steps  # noqa: E402
import count_pieces  # noqa: E402

SCRIPT = PACKAGE_ROOT / "bench" / "contract_bench.py"


def test_every_case_answers_the_status_it_names():
    app, router = contract_bench.build()
    assert contract_bench.verify(app, router) == []


def test_every_benchmark_runs_one_loop():
    app, router = contract_bench.build()
    found = contract_bench.benchmarks(app, router)
    assert len(found) == 2 * len(contract_bench.CASES)
    for name, time_calls in found:
        assert time_calls(1) >= 0, name


def test_the_instruction_counter_runs_a_benchmark_and_leaves_the_clock_and_collector():
    # What scripts/count_instructions.py runs under callgrind, without callgrind;
    # the held clock and the collector's pause end with it.
    count_steps.run_steps(["wsgi:workday-at", "router:hello"], 3)
    assert responses.time is time and workday.time is time
    assert gc.isenabled()


def test_every_piece_runs():
    # What count_pieces.py runs under callgrind, old way and new way, without callgrind.
    for name, piece in count_pieces.pieces():
        piece()


def test_the_script_runs_every_benchmark_once(tmp_path):
    pytest.importorskip("pyperf")
    out = tmp_path / "bench.json"
    subprocess.run(
        [sys.executable, str(SCRIPT), "--debug-single-value", "--quiet", "-o", str(out)],
        check=True,
        capture_output=True,
        cwd=REPO_ROOT,
        timeout=300,
    )
    names = {bench["metadata"]["name"] for bench in json.loads(out.read_text())["benchmarks"]}
    expected = {f"{way}:{case.name}" for way in ("wsgi", "router") for case in contract_bench.CASES}
    assert names == expected


def test_the_make_target_script_parses():
    subprocess.run(["bash", "-n", str(REPO_ROOT / "scripts" / "microbench.sh")], check=True)
