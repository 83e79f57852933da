"""The results' schema is pinned: a change to it is deliberate, never a side effect.

A real bench (two stand-in stacks, the contract's reference server, plus the
ceiling) runs with a fixed seed; the test compares with
`fixtures/schema.json`:

- the plan: the order of the measurements (stack, scenario, connections) for
  that seed, which `--resume` and any comparison between runs rely on;
- the fields of every record kind in results.jsonl, one level into nested
  objects (`result.rps`, `server.cpu_mean_pct`, ...);
- the top-level fields of run.json and the columns of summary.csv.

Changing any of them on purpose: run this test once with
SERVERLAB_PIN_SCHEMA=1, which rewrites the fixture, and say in
docs/methodology.md (and the commit) what changed and why.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from loadtest.bench.results import read_records
from loadtest.tests.test_bench_faults import NEEDS_NGINX_AND_WRK, only_run, run_bench

# nginx and wrk needed, as for the fault tests.
pytestmark = [pytest.mark.e2e, NEEDS_NGINX_AND_WRK]

FIXTURE = Path(__file__).parent / "fixtures" / "schema.json"
SEED = "20261124"


def field_names(record: dict) -> list[str]:
    """Top-level keys, and `key.sub` for the keys of a nested object."""
    names = []
    for key, value in record.items():
        names.append(key)
        if isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
            names.extend(f"{key}.{sub}" for sub in value if not sub[:1].isdigit())
    return sorted(set(names))


def schema_of(folder: Path, roles: dict[str, str]) -> dict:
    """What the fixture pins, with the stand-ins' random names replaced by their roles."""
    records = read_records(folder / "results.jsonl")
    kinds: dict[str, set[str]] = {}
    for record in records:
        kinds.setdefault(record["kind"], set()).update(field_names(record))
    plan = [
        f"{roles.get(r['stack'], r['stack'])}|{r['scenario']}|{r['connections']}|{r['phase']}"
        for r in records
        if r["kind"] == "measurement"
    ]
    with (folder / "summary.csv").open() as handle:
        columns = next(csv.reader(handle))
    return {
        "plan": plan,
        "results.jsonl": {kind: sorted(names) for kind, names in sorted(kinds.items())},
        "run.json": sorted(json.loads((folder / "run.json").read_text())),
        "summary.csv": columns,
    }


def test_the_plan_and_the_results_schema_are_those_pinned(stacks, tmp_path):
    roles = {stacks.add("first"): "first", stacks.add("second"): "second"}
    done = run_bench(
        stacks, tmp_path / "results", list(roles), "--scenarios", "hello,kb1",
        "--connections", "4,8", "--warmup", "0", "--duration", "1", "--seed", SEED,
        timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    found = schema_of(only_run(tmp_path / "results"), roles)
    if os.environ.get("SERVERLAB_PIN_SCHEMA") == "1":
        FIXTURE.write_text(json.dumps(found, indent=1) + "\n")
    pinned = json.loads(FIXTURE.read_text())
    assert found["plan"] == pinned["plan"], "the same seed must give the same plan"
    for kind, names in pinned["results.jsonl"].items():
        assert found["results.jsonl"].get(kind) == names, f"fields of {kind} records changed"
    assert sorted(found["results.jsonl"]) == sorted(pinned["results.jsonl"]), "record kinds"
    assert found["run.json"] == pinned["run.json"], "run.json fields changed"
    assert found["summary.csv"] == pinned["summary.csv"], "summary.csv columns changed"
