"""One table of every contract microbenchmark's results (make microbench).

Reads what scripts/microbench.sh left in its results folder, each file in
its tool's own format, and prints a Markdown table: a row per case of
servers/_shared/microbench-cases.json, a column per library and runtime,
each cell the best and, in brackets, the median ns per call. Standard
library only.

    python scripts/microbench_table.py .build/microbench

What each file is:

- ``python-<interpreter>.json``: pyperf (``wsgi:<case>``, ``router:<case>``), a value per loop;
- ``go.txt``: ``go test -bench`` output, one line per ``-count`` round;
- ``java.json``: JMH's ``-rf json``, one score per measured iteration;
- ``node.json``: bench/contract-bench.js's own (best and median already);
- ``rust/<case>.json``: criterion's ``sample.json`` (iterations and total time per sample);
- ``<name>.version``: the runtime that ran it, one line.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Tuple

REPO_ROOT = Path(__file__).resolve().parent.parent
CASES_FILE = REPO_ROOT / "servers" / "_shared" / "microbench-cases.json"

# case -> (best ns, median ns)
Figures = Dict[str, Tuple[float, float]]

GO_LINE = re.compile(r"^BenchmarkContract/(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op", re.MULTILINE)


def best_and_median(values: Iterable[float]) -> Tuple[float, float]:
    values = list(values)
    return min(values), statistics.median(values)


def by_case(samples: Dict[str, List[float]]) -> Figures:
    return {case: best_and_median(values) for case, values in samples.items() if values}


def pyperf_columns(path: Path) -> Dict[str, Figures]:
    """Two columns, ``<file> wsgi`` and ``<file> router``, from one pyperf file."""
    samples: Dict[str, Dict[str, List[float]]] = {}
    for bench in json.loads(path.read_text())["benchmarks"]:
        way, _, case = bench["metadata"]["name"].partition(":")
        values = [value * 1e9 for run in bench["runs"] for value in run.get("values", [])]
        samples.setdefault(way, {})[case] = values
    return {f"{path.stem} {way}": by_case(found) for way, found in samples.items()}


def go_figures(path: Path) -> Figures:
    samples: Dict[str, List[float]] = {}
    for case, ns in GO_LINE.findall(path.read_text()):
        samples.setdefault(case, []).append(float(ns))
    return by_case(samples)


def jmh_figures(path: Path) -> Figures:
    samples = {}
    for result in json.loads(path.read_text()):
        metric = result["primaryMetric"]
        samples[result["params"]["name"]] = [v for fork in metric["rawData"] for v in fork]
    return by_case(samples)


def node_figures(path: Path) -> Figures:
    cases = json.loads(path.read_text())["cases"]
    return {case["name"]: (case["best_ns"], case["median_ns"]) for case in cases}


def criterion_figures(folder: Path) -> Figures:
    samples = {}
    for path in sorted(folder.glob("*.json")):
        sample = json.loads(path.read_text())
        samples[path.stem] = [t / n for t, n in zip(sample["times"], sample["iters"])]
    return by_case(samples)


def columns(results: Path) -> Dict[str, Figures]:
    """Every column found in the results folder, in a fixed order."""
    found: Dict[str, Figures] = {}
    for path in sorted(results.glob("python-*.json")):
        found.update(pyperf_columns(path))
    readers = (
        ("go", "go.txt", go_figures),
        ("java", "java.json", jmh_figures),
        ("node", "node.json", node_figures),
        ("rust", "rust", criterion_figures),
    )
    for name, file, reader in readers:
        if (results / file).exists():
            found[name] = reader(results / file)
    return found


def cell(figures: Figures, case: str) -> str:
    if case not in figures:
        return ""
    best, median = figures[case]
    return f"{best:,.0f} ({median:,.0f})"


def table(results: Path) -> str:
    found = columns(results)
    cases = [case["name"] for case in json.loads(CASES_FILE.read_text())["cases"]]
    names = list(found)
    lines = [
        "| case | " + " | ".join(names) + " |",
        "| --- |" + " ---: |" * len(names),
    ]
    for case in cases:
        lines.append(f"| {case} | " + " | ".join(cell(found[n], case) for n in names) + " |")
    versions = [
        f"- {path.stem}: {path.read_text().strip()}" for path in sorted(results.glob("*.version"))
    ]
    note = "ns per call, best (median); an empty cell: the library has no such route"
    return "\n".join([note, "", *lines, "", *versions])


def main() -> None:
    results = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO_ROOT / ".build" / "microbench"
    print(table(results))


if __name__ == "__main__":
    main()
