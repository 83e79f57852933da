"""scripts/count_instructions.py: instructions per request, counted under callgrind.

The arithmetic on hand-made dumps, the table written and read back, and one
real count: the Python contract library's step program under valgrind, two
benchmarks, twice, the second time from a larger environment. Both must
count the same to the instruction, or the counts are not the
host-independent figure they are published as.
"""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location(
    "count_instructions", REPO_ROOT / "scripts" / "count_instructions.py"
)
count_instructions = importlib.util.module_from_spec(SPEC)
sys.modules["count_instructions"] = count_instructions  # its dataclass looks itself up there
SPEC.loader.exec_module(count_instructions)


def test_one_request_is_n_requests_less_none_over_n():
    # start-up, then (warm-up, none, N) per case
    counts = [5_000_000, 70_000, 24, 1_000_024, 80_000, 30, 3_000_030]
    per = count_instructions.per_request(["kb1", "bad-n"], counts, 1000)
    assert per == {"kb1": 1000.0, "bad-n": 3000.0}


def test_a_missing_dump_is_an_error_not_a_shifted_table():
    with pytest.raises(RuntimeError, match="6 dumps for 2 cases, expected 7"):
        count_instructions.per_request(["kb1", "bad-n"], [1, 2, 3, 4, 5, 6], 1000)


def test_markers_the_runtime_calls_while_starting_are_start_up():
    # The JVM calls the marker itself while it starts: the steps are the last dumps.
    counts = [30_000_000, 175_000_000, 114_000_000, 5_000, 5_005_000]
    assert count_instructions.per_request(["kb1"], counts, 1000) == {"kb1": 5000.0}


def test_python_names_say_their_way_in():
    assert count_instructions.column("python 3.13.0", "wsgi:kb1") == ("python 3.13.0 wsgi", "kb1")
    assert count_instructions.column("go", "kb1") == ("go", "kb1")


FACTS = {"counted code": "last changed in abc1234",
         "cpu": "Intel(R) Xeon(R) Processor, family 6 model 207 stepping 2"}


def test_a_table_reads_back_and_compares(tmp_path):
    found = {("go", "kb1"): 471.2, ("rust", "kb1"): 444.0}
    path = tmp_path / "day.tsv"
    count_instructions.write_table(path, found, ["go version go1.26.8"], 10000, FACTS)
    assert count_instructions.read_table(path) == found
    assert count_instructions.header_of(path, "counted code") == FACTS["counted code"]
    assert count_instructions.header_of(path, "cpu") == FACTS["cpu"]
    later = {("go", "kb1"): 471.2, ("rust", "kb1"): 448.44}
    share, key = count_instructions.largest_difference(later, found)
    assert key == ("rust", "kb1") and share == pytest.approx(0.01)
    assert "| kb1 | 471 (+0.00%) | 448 (+1.00%) |" in count_instructions.markdown(later, found)


def test_a_table_of_other_code_or_another_cpu_is_named_as_such(tmp_path):
    path = tmp_path / "day.tsv"
    count_instructions.write_table(path, {("go", "kb1"): 471.2}, [], 10000, FACTS)
    assert count_instructions.differences(path, FACTS) == []
    other_code = {**FACTS, "counted code": "last changed in def5678"}
    [warning] = count_instructions.differences(path, other_code)
    assert warning.startswith("other counted code:")
    assert "says last changed in abc1234, this count last changed in def5678" in warning
    other_cpu = {**FACTS, "cpu": "AMD EPYC 9R14, family 25 model 17 stepping 1"}
    [warning] = count_instructions.differences(path, other_cpu)
    assert warning.startswith("other cpu:") and "string functions" in warning
    older = tmp_path / "older.tsv"
    older.write_text("# 2026-11-29\nlibrary\tcase\tinstructions\ngo\tkb1\t471.2\n")
    assert [w.split(":")[0] for w in count_instructions.differences(older, FACTS)] == [
        "other counted code", "other cpu"]


def test_the_cpu_is_named_by_kind():
    kind = count_instructions.cpu_kind()
    assert kind and "unknown" not in kind
    if Path("/proc/cpuinfo").exists():
        assert " family " in kind and " model " in kind


def test_the_counted_code_is_named_by_the_commit_that_last_changed_it():
    code = count_instructions.counted_code()
    if code == "unknown":
        pytest.skip("not a git checkout")
    commit = code.removeprefix("last changed in ").split(",")[0]
    paths = [str(p) for p in count_instructions.COUNTED_CODE]
    changed = subprocess.run(["git", "show", "--name-only", "--format=", commit, "--", *paths],
                             capture_output=True, text=True, check=True, cwd=REPO_ROOT).stdout
    assert changed.strip(), f"{commit} changed none of the counted code"


@pytest.mark.skipif(not shutil.which("valgrind"), reason="no valgrind (make bootstrap installs it)")
def test_the_python_library_counts_the_same_twice_whatever_the_shell(monkeypatch):
    calls = 2_000
    program = count_instructions.python_programs()[0]
    cases = ["router:kb1", "router:bad-n"]
    names, first = count_instructions.step_counts(program, calls, cases)
    assert names == cases
    per = count_instructions.per_request(names, first, calls)
    # The router's kb1 answer: thousands of instructions, not the loop's few dozen.
    assert all(1_000 < value < 100_000 for value in per.values()), per
    # 40 bytes more in the caller's environment moved a count by 1.2% when the step
    # program inherited it; it runs in one fixed environment, so not one instruction.
    monkeypatch.setenv("SERVERLAB_UNRELATED", "x" * 40)
    _, second = count_instructions.step_counts(program, calls, cases)
    assert count_instructions.per_request(names, second, calls) == per
