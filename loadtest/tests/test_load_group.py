"""One load over several client hosts (measure/tools/group.py): split, run together, merged.

The merge is checked against brute force on synthetic data, then with the
real tools: two client hosts (two executors on this machine, under different
names) load a real HTTP server on 127.0.0.1 with wrk and with oha, and a group
of one host must give the tool's own percentiles back.
"""

from __future__ import annotations

import glob
import math
import os
import random
import shutil
import statistics

import pytest

from loadtest.core.knobs import MERGEABLE_TOOLS, TOOLS
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.base import PERCENTILES, HostExecutor, LoadResult, LoadSpec, ToolError
from loadtest.measure.tools.group import (
    REFUSALS,
    ClientGroup,
    histogram_percentiles,
    merge_histograms,
    merge_results,
    run_load,
    split_spec,
)
from loadtest.measure.tools.oha import Oha
from loadtest.measure.tools.oha import parse_output as parse_oha
from loadtest.measure.tools.wrk import Wrk
from loadtest.measure.tools.wrk import parse_output as parse_wrk
from loadtest.tests.test_tool_executor import hello_server

# Merged percentiles are read from a histogram of whole microseconds (group.py).
HISTOGRAM_STEP_MS = 0.001

needs_wrk = pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk not installed")
needs_oha = pytest.mark.skipif(
    not Oha().available(), reason="oha not installed (scripts/install-oha.sh)"
)
needs_python3 = pytest.mark.skipif(
    shutil.which("python3") is None, reason="oha's records are reduced by python3 where oha runs"
)


@pytest.fixture(scope="module")
def server():
    with hello_server() as url:
        yield url


def two_hosts() -> ClientGroup:
    return ClientGroup([("client-a", HostExecutor()), ("client-b", HostExecutor())])


class FailingExecutor(HostExecutor):
    """This host, but its load tool fails to run (as a lost client host would)."""

    def run_tool(self, command, raw_prefix, timeout_s, cpus=None, priority=0):
        raise ToolError("the engine went away")


# ------------------------------------------------------------------ splitting


def test_connections_are_split_evenly_the_first_hosts_taking_the_remainder():
    spec = LoadSpec(url="http://127.0.0.1:1/", connections=7, duration=3, threads=2,
                    headers=(("Accept-Encoding", "gzip"),), client_cpus=(1,))  # fmt: skip
    parts = split_spec(spec, 3)
    assert [p.connections for p in parts] == [3, 2, 2]
    for part in parts:  # everything else is each host's as it was
        assert (part.url, part.duration, part.threads, part.headers, part.client_cpus) == (
            spec.url, spec.duration, spec.threads, spec.headers, spec.client_cpus)  # fmt: skip
        assert part.rate is None and part.requests is None
    assert split_spec(spec, 1) == [spec]
    assert [p.connections for p in split_spec(spec, 7)] == [1] * 7


def test_rate_and_requests_follow_each_hosts_connections():
    spec = LoadSpec(url="http://127.0.0.1:1/", connections=7, rate=700.0, requests=10)
    parts = split_spec(spec, 3)
    assert [p.rate for p in parts] == [300.0, 200.0, 200.0]
    assert [p.requests for p in parts] == [4, 3, 3]  # 4.29, 2.86, 2.86: largest remainders
    assert sum(p.requests for p in parts) == 10
    odd = split_spec(LoadSpec(url="http://127.0.0.1:1/", connections=3, rate=100.0), 2)
    assert math.isclose(sum(p.rate for p in odd), 100.0)


def test_a_load_too_small_to_share_is_refused():
    # Fewer connections than hosts never reaches here: the knobs refuse it (test_remote.py).
    with pytest.raises(ToolError, match="1 request\\(s\\) cannot be shared by 2 client hosts"):
        split_spec(LoadSpec(url="http://127.0.0.1:1/", connections=2, requests=1), 2)
    with pytest.raises(ToolError, match="at least one client host"):
        split_spec(LoadSpec(url="http://127.0.0.1:1/", connections=2), 0)


# -------------------------------------------------------------------- merging


def brute_force_percentile(samples: list[int], percent: float) -> int:
    """The smallest sample with more than p% of the samples at or below it (p in hundredths
    of a percent, in integers: no float rounding)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(percent * 100) * len(ordered) // 10000)]


def histogram_of(samples: list[int]) -> list[list[int]]:
    return merge_histograms([[[value, 1] for value in samples]])


def synthetic_host(samples: list[int], seconds: float = 2.0) -> LoadResult:
    """A wrk-like host result: its own figures from its samples, its histogram attached."""
    histogram = histogram_of(samples)
    own = histogram_percentiles(histogram, PERCENTILES)
    result = LoadResult(tool="wrk", requests=len(samples), duration_s=seconds,
                        rps=len(samples) / seconds, bytes_total=100 * len(samples),
                        tool_cpu_s=0.5, wall_s=seconds)  # fmt: skip
    result.latency_ms = {"mean": statistics.fmean(samples) / 1000, "stdev": 0.0,
                         "min": min(samples) / 1000, "max": max(samples) / 1000,
                         **{f"p{p:g}": own[p] / 1000 for p in PERCENTILES}}  # fmt: skip
    result.latency_curve = [[p, own[p] / 1000] for p in PERCENTILES]
    result.details = {"histogram_us": histogram, "histogram_truncated": False}
    return result


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_merged_histograms_give_the_percentiles_of_all_samples_together(seed):
    rng = random.Random(seed)
    # Unlike hosts: a fast one, a slow one with a long tail, a small one.
    hosts = [
        [int(rng.lognormvariate(5, 0.4)) for _ in range(3000)],
        [int(rng.lognormvariate(6, 1.0)) for _ in range(1500)],
        [rng.randint(100, 120) for _ in range(7)],
    ]
    every = [value for samples in hosts for value in samples]
    spec = LoadSpec(url="http://127.0.0.1:1/", connections=1)
    merged = merge_results("wrk", [(f"h{i}", spec, synthetic_host(s)) for i, s in enumerate(hosts)])
    assert merged.requests == len(every)
    for percent in PERCENTILES:
        assert merged.latency_ms[f"p{percent:g}"] == brute_force_percentile(every, percent) / 1000
    assert [p for p, _ in merged.latency_curve] == sorted(PERCENTILES)
    assert math.isclose(merged.latency_ms["mean"], statistics.fmean(every) / 1000)
    assert math.isclose(merged.latency_ms["stdev"], statistics.stdev(every) / 1000)
    assert merged.latency_ms["min"] == min(every) / 1000
    assert merged.latency_ms["max"] == max(every) / 1000
    assert [h["requests"] for h in merged.details["hosts"]] == [len(s) for s in hosts]
    assert math.isclose(merged.rps, sum(len(s) / 2.0 for s in hosts))


def test_percentile_at_an_exact_boundary_takes_the_next_value():
    # 1000 values 1..1000: 99.9% of them is exactly 999 values, so p99.9 is the 1000th.
    histogram = histogram_of(list(range(1, 1001)))
    found = histogram_percentiles(histogram, [50, 99.9, 99.99])
    assert found == {50: 501, 99.9: 1000, 99.99: 1000}


def test_a_host_without_its_histogram_leaves_the_percentiles_out():
    spec = LoadSpec(url="http://127.0.0.1:1/", connections=1)
    whole, cut = synthetic_host([100, 200, 300]), synthetic_host([300, 500])
    cut.details = {"histogram_us": None, "histogram_truncated": True}
    merged = merge_results("wrk", [("a", spec, whole), ("b", spec, cut)])
    assert all(merged.latency_ms[f"p{p:g}"] is None for p in PERCENTILES)
    assert merged.latency_ms["stdev"] is None and merged.latency_curve == []
    assert merged.latency_ms["mean"] == pytest.approx(0.28)  # 1400 us over 5 latencies
    assert "b: its latency histogram export ran out of its CPU budget" in merged.problem
    assert any("left out" in note for note in merged.notes)
    assert merged.requests == 5


def test_the_busiest_host_gives_the_merged_tool_time():
    spec = LoadSpec(url="http://127.0.0.1:1/", connections=1, client_cpus=(0,))
    calm, busy = synthetic_host([100]), synthetic_host([100])
    busy.tool_cpu_s = 1.9  # of 2.0 s on one core: client-bound
    merged = merge_results("wrk", [("calm", spec, calm), ("busy", spec, busy)])
    assert (merged.tool_cpu_s, merged.wall_s) == (1.9, 2.0)
    hosts = {h["label"]: h for h in merged.details["hosts"]}
    assert hosts["busy"]["client_bound"] and not hosts["calm"]["client_bound"]
    assert hosts["busy"]["tool_cpu_share"] == 0.95
    assert any("busiest client host, busy" in note for note in merged.notes)


# ------------------------------------------------------- commands and refusals


def test_the_single_host_commands_are_unchanged():
    spec = LoadSpec(url="http://127.0.0.1:1/", connections=4, duration=2, rate=100)
    wrk_command = Wrk().command(spec)
    assert "--" not in wrk_command and wrk_command[-1] == spec.url
    assert Wrk().command_for_merge(spec) == [*wrk_command, "--", "histogram"]
    oha_command = Oha().command(spec)
    assert "--db-url" not in oha_command and oha_command[-1] == spec.url
    merged = Oha().command_for_merge(spec, "/tmp/x.records")
    assert merged == [*oha_command[:-1], "--db-url", "/tmp/x.records", spec.url]


def test_every_mergeable_tool_can_give_its_raw_latencies():
    for name in MERGEABLE_TOOLS:
        tool = get_tool(name)
        assert callable(tool.command_for_merge) and callable(tool.complete_for_merge), name
    assert set(MERGEABLE_TOOLS) | set(REFUSALS) == set(TOOLS)


@pytest.mark.parametrize("tool, why", [("ab", "summary only"), ("h2load", "summary only")])
def test_tools_without_raw_latencies_are_refused(tool, why, tmp_path):
    spec = LoadSpec(url="http://127.0.0.1:1/", connections=4, requests=100)
    with pytest.raises(ToolError, match=f"{tool} cannot run over several client hosts: .*{why}"):
        run_load(get_tool(tool), spec, tmp_path / tool, two_hosts())


def test_a_group_names_its_hosts_and_refuses_twins():
    group = two_hosts()
    assert group.where == "clients:client-a+client-b"
    assert [m.label for m in group.members] == ["client-a", "client-b"]
    with pytest.raises(ToolError, match="distinct names"):
        ClientGroup([("a", HostExecutor()), ("a", HostExecutor())])
    with pytest.raises(ToolError, match="splits a load, not a command line"):
        group.run_tool(["wrk"], None, 1)


# ------------------------------------------------------------------ real runs


@needs_wrk
def test_wrk_over_two_hosts(server, tmp_path):
    spec = LoadSpec(url=server, connections=8, duration=2, timeout=2, threads=1)
    raw = tmp_path / "raw" / "wrk"
    merged = run_load(Wrk(), spec, raw, two_hosts())
    assert merged.ok, merged.problem
    hosts = merged.details["hosts"]
    assert [h["label"] for h in hosts] == ["client-a", "client-b"]
    assert [h["connections"] for h in hosts] == [4, 4]
    assert sum(h["requests"] for h in hosts) == merged.requests > 0
    assert math.isclose(sum(h["rps"] for h in hosts), merged.rps)
    p50s = sorted(h["latency_p50_ms"] for h in hosts)
    assert p50s[0] <= merged.latency_ms["p50"] <= p50s[1]
    assert all(merged.latency_ms[f"p{p:g}"] is not None for p in PERCENTILES)
    assert all(h["tool_cpu_s"] > 0 and h["command"][-2:] == ["--", "histogram"] for h in hosts)
    assert merged.details["start_skew_s"] < 0.5
    for label in ("client-a", "client-b"):
        stdout = (tmp_path / "raw" / f"wrk.{label}.stdout").read_text()
        assert '"histogram_us":[[' in stdout


@needs_wrk
def test_a_group_of_one_gives_wrks_own_figures(server, tmp_path):
    spec = LoadSpec(url=server, connections=4, duration=1, timeout=2, threads=1)
    raw = tmp_path / "wrk"
    merged = run_load(Wrk(), spec, raw, ClientGroup([("only", HostExecutor())]))
    own = parse_wrk((tmp_path / "wrk.only.stdout").read_text())  # wrk's own, same run
    assert own.requests == merged.requests > 0
    for percent in PERCENTILES:
        assert merged.latency_ms[f"p{percent:g}"] == own.latency_ms[f"p{percent:g}"], percent
    assert merged.latency_curve == own.latency_curve
    assert merged.latency_ms["mean"] == pytest.approx(own.latency_ms["mean"], abs=1e-6)
    assert merged.latency_ms["stdev"] == pytest.approx(own.latency_ms["stdev"], abs=1e-6)


@needs_wrk
def test_wrks_histogram_export_stops_at_its_budget(server, tmp_path):
    spec = LoadSpec(url=server, connections=2, duration=1, timeout=2, threads=1)
    command = [*Wrk().command(spec), "--", "histogram=0"]  # no CPU time at all for it
    code, out, err, cpu, wall = Wrk().execute(spec, command, tmp_path / "wrk")
    result = parse_wrk(out, err, code)
    assert result.ok and result.requests > 0
    assert result.details["histogram_us"] is None and result.details["histogram_truncated"]
    assert result.latency_ms["p50"] is not None  # wrk's own figures are still there


@needs_wrk
def test_a_failing_host_lets_the_others_finish_then_names_itself(server, tmp_path):
    spec = LoadSpec(url=server, connections=2, duration=1, timeout=2, threads=1)
    group = ClientGroup([("steady", HostExecutor()), ("lost", FailingExecutor())])
    with pytest.raises(ToolError, match="client host lost: the engine went away"):
        run_load(Wrk(), spec, tmp_path / "wrk", group)
    stdout = (tmp_path / "wrk.steady.stdout").read_text()
    assert parse_wrk(stdout).requests > 0  # the other host's load ran to its end


# timing: it judges the rate the two hosts reached, which a busy machine holds
# down (182 req/s of 300 once in six with other work on both cores).
@pytest.mark.timing
@needs_oha
@needs_python3
def test_oha_over_two_hosts_at_a_fixed_rate(server, tmp_path):
    spec = LoadSpec(url=server, connections=4, duration=2, timeout=2, rate=300)
    leftovers = set(glob.glob("/tmp/serverlab-oha-*"))
    merged = run_load(Oha(), spec, tmp_path / "raw" / "oha", two_hosts())
    assert merged.ok, merged.problem
    hosts = merged.details["hosts"]
    assert [h["connections"] for h in hosts] == [2, 2]
    assert [h["rate"] for h in hosts] == [150.0, 150.0]
    assert sum(h["rate"] for h in hosts) == spec.rate
    assert sum(h["requests"] for h in hosts) == merged.requests > 0
    assert merged.status_counts == {"200": merged.requests}
    assert merged.rps == pytest.approx(spec.rate, rel=0.15)
    # The merged median lies between the hosts' own, to the histogram's whole microsecond:
    # oha's own p50 is unrounded (0.478103 ms once, merged 0.478).
    p50s = sorted(h["latency_p50_ms"] for h in hosts)
    assert p50s[0] - HISTOGRAM_STEP_MS <= merged.latency_ms["p50"] <= p50s[1] + HISTOGRAM_STEP_MS
    assert all("--db-url" in h["command"] for h in hosts)
    assert set(glob.glob("/tmp/serverlab-oha-*")) == leftovers  # records removed after
    for label in ("client-a", "client-b"):
        assert parse_oha((tmp_path / "raw" / f"oha.{label}.stdout").read_text()).ok


@needs_oha
@needs_python3
def test_a_group_of_one_gives_ohas_own_figures_to_the_microsecond(server, tmp_path):
    spec = LoadSpec(url=server, connections=2, duration=1, timeout=2, rate=200)
    merged = run_load(Oha(), spec, tmp_path / "oha", ClientGroup([("only", HostExecutor())]))
    own = parse_oha((tmp_path / "oha.only.stdout").read_text())  # oha's own, same run
    assert own.requests == merged.requests > 0
    for percent in PERCENTILES:
        key = f"p{percent:g}"
        assert merged.latency_ms[key] == pytest.approx(own.latency_ms[key], abs=0.0005), key
    assert merged.latency_ms["mean"] == pytest.approx(own.latency_ms["mean"])


class NoPythonExecutor(HostExecutor):
    """This host, but a client host without python3 to read oha's records with."""

    def output(self, command):
        return "sh: 1: python3: not found\n"


@needs_oha
def test_oha_records_that_cannot_be_read_leave_the_percentiles_out(server, tmp_path):
    spec = LoadSpec(url=server, connections=2, duration=1, timeout=2, rate=100)
    before = set(glob.glob("/tmp/serverlab-oha-*"))
    group = ClientGroup([("a", HostExecutor()), ("bare", NoPythonExecutor())])
    try:
        merged = run_load(Oha(), spec, tmp_path / "oha", group)
    finally:
        for left in set(glob.glob("/tmp/serverlab-oha-*")) - before:  # "bare" could not
            os.remove(left)
    assert merged.ok and merged.requests > 0  # the counts are whole
    assert all(merged.latency_ms[f"p{p:g}"] is None for p in PERCENTILES)
    assert merged.latency_curve == []
    assert "bare: oha's per-request records could not be read: sh: 1: python3" in merged.problem
