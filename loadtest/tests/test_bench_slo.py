"""The sustainable-rate search through the real bench, on stand-ins whose answer theory gives.

- `capacity` answers at most CAPACITY_RPS a second in evenly spaced slots:
  constant arrivals below that rate never wait, above it the backlog grows
  for the whole step, so the sustainable rate is the capacity itself.
- `gc-stall` stops every request for STALL_MS every STALL_EVERY_S seconds:
  at any rate a share (STALL_MS - objective) / (STALL_EVERY_S + STALL_MS) of
  the requests, 80 / 600 here, waits longer than the objective, far above
  the 1% that p99 allows, so no rate is sustainable although its closed-loop
  peak between pauses is thousands a second.

oha runs against 127.0.0.1 at constant rates for a few seconds per step.
"""

from __future__ import annotations

import pytest

from loadtest.bench.results import read_records
from loadtest.core.slo import PRECISION
from loadtest.tests.standin_server import CAPACITY_RPS, STALL_EVERY_S, STALL_MS
from loadtest.tests.test_bench_faults import NEEDS_NGINX_AND_WRK, only_run, run_bench
from loadtest.tests.test_bench_validity import STANDIN_RUN
from loadtest.tests.test_lab5_coordinated_omission import ensure_oha

# nginx and wrk needed, as for the fault tests.
pytestmark = [pytest.mark.timing, NEEDS_NGINX_AND_WRK]

# Above this host's scheduling noise (a busy 2-core machine delays a thread by
# a few ms now and then), well below what either flaw adds.
OBJECTIVE_MS = 20.0
SLO_ARGS = ["--tool", "oha", "--rate", "slo", "--connections", "32", "--duration", "2",
            "--warmup", "3", "--slo-p99-ms", f"{OBJECTIVE_MS:g}"]  # fmt: skip


def slo_records(folder, stack: str) -> list[dict]:
    return [r for r in read_records(folder / "results.jsonl")
            if r.get("kind") == "measurement" and r["stack"] == stack and r["rate_spec"] == "slo"]  # fmt: skip


def test_the_search_finds_a_known_capacity_and_a_stalling_stack_far_below_its_peak(
    stacks, tmp_path
):
    ensure_oha()
    paced = stacks.add("capacity", run=STANDIN_RUN % "capacity")
    stalling = stacks.add("gcstall", run=STANDIN_RUN % "gc-stall")
    done = run_bench(stacks, tmp_path / "results", [paced, stalling], *SLO_ARGS, timeout=420)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    folder = only_run(tmp_path / "results")

    (capacity,) = slo_records(folder, paced)
    # Theory: CAPACITY_RPS; the search stops within PRECISION of the peak below it.
    low = CAPACITY_RPS - 2 * PRECISION * capacity["rate"] / capacity["slo_share_of_peak"]
    assert low <= capacity["slo_rps"] <= CAPACITY_RPS * 1.01, capacity["slo_steps"]
    assert capacity["slo_percentile_ms"] <= OBJECTIVE_MS
    assert all(step[3] == "fail" for step in capacity["slo_steps"] if step[0] > CAPACITY_RPS * 1.02)

    (stall,) = slo_records(folder, stalling)
    peak = stall["slo_steps"][0][0]
    late_share = (STALL_MS - OBJECTIVE_MS) / ((STALL_EVERY_S * 1000) + STALL_MS)
    assert late_share > 0.05 and peak > 1000, "the flaw must be far beyond p99's 1%"
    assert stall["slo_rps"] is None, stall["slo_steps"]
    assert "every rate" in stall["slo_reason"]
    assert "sustainable within p99 <= 20 ms" in done.stdout

    summary = (folder / "summary.csv").read_text()
    assert "slo_rps" in summary.splitlines()[0]
    report = (folder / "summary.md").read_text()
    assert "## Sustainable throughput" in report and "objective 20 ms" in report
    assert (folder / "charts" / "slo-hello.png").is_file()
    assert "Sustainable throughput" in (folder / "report.html").read_text()
