"""scripts/microbench_table.py reads each language's result format into one table.

Small files in each tool's own format (pyperf, go test -bench, JMH's JSON,
the Node bench's JSON, criterion's sample.json), as make microbench leaves
them; no benchmark runs.
"""

import importlib.util
import json
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location(
    "microbench_table", REPO_ROOT / "scripts" / "microbench_table.py"
)
microbench_table = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(microbench_table)


def write_results(folder: Path) -> None:
    pyperf = {
        "benchmarks": [
            {
                "metadata": {"name": "wsgi:kb1"},
                "runs": [{"warmups": [[1, 9e-6]], "values": [2e-6, 1e-6, 3e-6]}],
            },
            {
                "metadata": {"name": "router:kb1"},
                "runs": [{"values": [5e-7]}, {"values": [4e-7]}],
            },
        ]
    }
    (folder / "python-cpython3.13.0.json").write_text(json.dumps(pyperf))
    (folder / "go.txt").write_text(
        "goos: linux\n"
        "BenchmarkContract/workday-at-seconds-2 \t 1000000\t 210.5 ns/op\t 16 B/op\t 1 allocs/op\n"
        "BenchmarkContract/workday-at-seconds-2 \t 1000000\t 190.5 ns/op\t 16 B/op\t 1 allocs/op\n"
        "BenchmarkContract/kb1 \t 1000000\t 86.0 ns/op\n"
    )
    jmh = [{"params": {"name": "kb1"}, "primaryMetric": {"rawData": [[40.0, 30.0, 35.0]]}}]
    (folder / "java.json").write_text(json.dumps(jmh))
    node = {"cases": [{"name": "kb1", "best_ns": 59.4, "median_ns": 82.0, "samples": 30}]}
    (folder / "node.json").write_text(json.dumps(node))
    (folder / "rust").mkdir()
    criterion = {"iters": [10.0, 20.0], "times": [700.0, 1200.0]}
    (folder / "rust" / "kb1.json").write_text(json.dumps(criterion))
    (folder / "go.version").write_text("go version go1.26.8 linux/amd64\n")


def test_every_format_lands_in_its_column(tmp_path):
    write_results(tmp_path)
    found = microbench_table.columns(tmp_path)
    assert list(found) == [
        "python-cpython3.13.0 wsgi",
        "python-cpython3.13.0 router",
        "go",
        "java",
        "node",
        "rust",
    ]
    assert found["python-cpython3.13.0 wsgi"]["kb1"] == (1000.0, 2000.0)  # warm-ups left out
    assert found["python-cpython3.13.0 router"]["kb1"] == (400.0, 450.0)
    assert found["go"]["workday-at-seconds"] == (190.5, 200.5)  # the -GOMAXPROCS suffix dropped
    assert found["go"]["kb1"] == (86.0, 86.0)
    assert found["java"]["kb1"] == (30.0, 35.0)
    assert found["node"]["kb1"] == (59.4, 82.0)
    assert found["rust"]["kb1"] == (60.0, 65.0)


def test_the_table_has_a_row_per_shared_case_and_the_versions(tmp_path):
    write_results(tmp_path)
    text = microbench_table.table(tmp_path)
    cases = json.loads(microbench_table.CASES_FILE.read_text())["cases"]
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 1 + len(cases)
    assert "| kb1 | 1,000 (2,000) | 400 (450) | 86 (86) | 30 (35) | 59 (82) | 60 (65) |" in rows
    assert "- go: go version go1.26.8 linux/amd64" in text
