"""Knobs (profile < environment < command line), the shuffled plan, resume."""

from __future__ import annotations

import pytest

from loadtest.bench import plan
from loadtest.bench.plan import build_plan
from loadtest.core.knobs import KnobError, parse_cpus, profile_names, resolve
from loadtest.core.manifest import load_all
from loadtest.core.verdict import JIT_BOUND_S
from loadtest.measure.jit import READABLE
from loadtest.runners import calibration


def knobs(**cli):
    return resolve("smoke", env={}, cli={k: str(v) for k, v in cli.items()})


def test_every_profile_resolves():
    for name in profile_names():
        k = resolve(name, env={}, cli={"SEED": "1"})
        assert k.profile == name and k.duration > 0
    assert {"smoke", "quick", "standard", "wsgi-2016", "ab-2017", "workday-2019",
            "cpu-sweep-2019", "latency"} <= set(profile_names())  # fmt: skip


def test_precedence_profile_env_cli():
    k = resolve("smoke", env={"DURATION": "7", "REPEAT": "2"}, cli={"DURATION": "9", "REPEAT": ""})
    assert k.duration == 9 and k.sources["duration"] == "cli"
    assert k.repeat == 2 and k.sources["repeat"] == "env"
    assert k.warmup == 5 and k.sources["warmup"] == "profile"


def test_list_knobs_and_cpus():
    k = knobs(CONNECTIONS="1, 3,5", SCENARIOS="hello,workday", SERVER_CPUS="0",
              CLIENT_CPUS="0", SERVER_CPU_QUOTA="0.25,0.5")  # fmt: skip
    assert k.connections == [1, 3, 5]
    assert k.scenarios == ["hello", "workday"]
    assert k.server_cpus == (0,) and k.threads == 1
    assert k.quotas == [0.25, 0.5]
    assert parse_cpus("2-3,5") == (2, 3, 5)


def test_seed_is_recorded_when_not_given():
    k = knobs()
    assert isinstance(k.seed, int) and k.sources["seed"] == "random"


@pytest.mark.parametrize(
    "cli",
    [
        {"SCENARIOS": "hello,nope"},
        {"TOOL": "siege"},
        {"CONNECTIONS": "0"},
        {"RATE": "100"},  # open loop needs oha
        {"TOOL": "oha", "RATE": "fast"},
        {"SERVER_MEMORY": "lots"},
        {"SERVER_CPU_QUOTA": "-1"},
        {"SERVER_CPUS": "4096"},
        {"TLS_TOOL": "siege"},
        {"TOOL": "oha", "RATE": "100", "TLS_TOOL": "h2load"},  # open loop is oha's alone
    ],
)
def test_bad_knobs_are_refused_clearly(cli):
    with pytest.raises(KnobError):
        knobs(**cli)


def test_plan_is_shuffled_interleaved_and_reproducible():
    k = knobs(SEED=42, REPEAT=3, CONNECTIONS="16,64")
    stacks = ["a", "b", "c", "d"]
    first = build_plan(k, stacks)
    again = build_plan(k, stacks)
    assert [c.key for i in first for c in i.cases] == [c.key for i in again for c in i.cases]
    # Every round has every stack (and the ceiling) once: repetitions interleave.
    for repetition in (1, 2, 3):
        names = [i.stack for i in first if i.repetition == repetition]
        assert sorted(names) == sorted(stacks + ["ceiling"])
    orders = {tuple(i.stack for i in first if i.repetition == r) for r in (1, 2, 3)}
    assert len(orders) > 1  # shuffled differently per round (seed 42)
    other = build_plan(knobs(SEED=43, REPEAT=3, CONNECTIONS="16,64"), stacks)
    assert [i.stack for i in other] != [i.stack for i in first]
    keys = [c.key for i in first for c in i.cases]
    assert len(keys) == len(set(keys)) == 5 * 3 * 5 * 2


def test_open_loop_plan_measures_the_peak_first():
    k = resolve("latency", env={}, cli={"SEED": "1", "SCENARIOS": "hello", "REPEAT": "1"})
    instance = build_plan(k, ["a"])[0]
    cases = instance.cases
    assert cases[0].tool == "wrk" and cases[0].phase == "peak"
    assert [c.rate for c in cases[1:]] == ["25%", "50%", "75%", "90%"]


def test_quota_sweep_starts_each_quota_separately():
    k = resolve("cpu-sweep-2019", env={}, cli={"SEED": "1", "REPEAT": "1"})
    instances = build_plan(k, ["a"])
    quotas = sorted(i.quota for i in instances if i.stack == "a")
    assert quotas == [0.25, 0.35, 0.41, 0.65]
    assert all(i.quota is None for i in instances if i.stack == "ceiling")


def test_quick_profile_fits_its_budget_for_every_stack():
    """`make bench` (quick) must take under a minute per stack (the nginx ceiling counted as
    one) on 2 cores with builds cached, plus, for a stack whose warm-up waits for its JIT
    to go quiet, at most that wait's bound, so the default grows with the stacks, never
    faster. The estimate assumes steady stacks; measured figures are in docs/methodology.md."""
    k = resolve("quick", env={}, cli={"SEED": "1"})
    manifests = load_all()
    stacks = [m.name for m in manifests]
    contracts = {m.name: m.contract for m in manifests}
    primed = {m.name: max(m.warmup_s, JIT_BOUND_S if m.jit in READABLE else 0) for m in manifests}
    jit_waits = sum(JIT_BOUND_S for m in manifests if m.jit in READABLE)
    assert len(stacks) >= 16
    estimate = plan.estimate_seconds(k, build_plan(k, stacks, contracts), primed)
    budget = 60 * (len(stacks) + 1) + jit_waits
    assert estimate < budget, f"{estimate:.0f} s for {len(stacks)} stacks, budget {budget:.0f} s"


def test_estimate_counts_warmups_and_starts():
    k = knobs(SEED=1, SCENARIOS="hello", CONNECTIONS="16")
    seconds = plan.estimate_seconds(k, build_plan(k, ["a"]))
    # Two starts (a + ceiling), one verification, two warm-ups (each settling
    # in the minimum number of windows; WARMUP is only their bound), two cases,
    # and each instance's first case measured again at its end (DRIFTED).
    expected = (
        2 * plan.INSTANCE_OVERHEAD_S
        + plan.VERIFY_S
        + 2 * plan.STEADY_MIN_WINDOWS * plan.WARMUP_WINDOW_COST_S
        + 2 * 2 * (k.duration + plan.CASE_OVERHEAD_S)
    )
    assert seconds == pytest.approx(expected)


def test_scenarios_follow_the_stacks_contract():
    k = resolve("quick", env={}, cli={"SEED": "1"})
    assert "page" in k.scenarios
    the_plan = build_plan(k, ["api-stack", "static-stack"], {"static-stack": "static"})
    scenarios = {i.stack: {c.scenario for c in i.cases} for i in the_plan}
    assert scenarios["static-stack"] == {"page"}
    assert scenarios["api-stack"] == scenarios["ceiling"] == {"hello", "kb1", "kb10", "kb100",
                                                              "workday"}  # fmt: skip
    page = next(c for i in the_plan for c in i.cases if c.scenario == "page")
    assert page.path == "/" and page.headers == (("Accept-Encoding", "br, gzip"),)
    notes = plan.contract_notes(k, ["api-stack", "static-stack"], {"static-stack": "static"})
    assert notes == ["api stacks (api-stack): hello, kb1, kb10, kb100, workday",
                     "static stacks (static-stack): page"]  # fmt: skip


def test_a_stack_without_a_scenario_of_its_contract_is_left_out_and_named():
    k = knobs(SCENARIOS="hello", SEED=1)
    the_plan = build_plan(k, ["api-stack", "static-stack"], {"static-stack": "static"})
    assert {i.stack for i in the_plan} == {"api-stack", "ceiling"}
    note = plan.contract_notes(k, ["static-stack"], {"static-stack": "static"})[0]
    assert "static-stack" in note and "NOT measured" in note and "page" in note
    # Only static stacks: no ceiling either (it serves the api scenarios).
    only = build_plan(knobs(SCENARIOS="page", SEED=1), ["s"], {"s": "static"})
    assert [i.stack for i in only] == ["s"]


def test_static_tls_2019_profile_expansion():
    k = resolve("static-tls-2019", env={}, cli={"SEED": "1"})
    assert k.tool == "h2load" and k.scenarios == ["page"] and k.requests == {"page": 5000}
    assert k.connections == [1, 3, 5, 7, 9] and k.ttfb == 100 and not k.calibration
    stacks = ["nginx-static", "nginx-static@stock", "apache-static", "apache-static@stock"]
    the_plan = build_plan(k, stacks, dict.fromkeys(stacks, "static"))
    # Per round and stack: 2 core counts x 5 quota shares, one start each.
    assert len(the_plan) == k.repeat * 4 * 10
    configs = {(i.cores, i.quota) for i in the_plan if i.stack == "apache-static"}
    assert configs == {
        (1, 0.25), (1, 0.35), (1, 0.41), (1, 0.65), (1, None),
        (2, 0.5), (2, 0.7), (2, 0.82), (2, 1.3), (2, None),
    }  # fmt: skip
    cases = [c for i in the_plan for c in i.cases]
    assert len(cases) == k.repeat * 4 * 10 * 5
    assert len({c.key for c in cases}) == len(cases)  # the core count is in the key
    assert all(c.tool == "h2load" and c.cores in (1, 2) for c in cases)
    # 5000 requests per case at an assumed rate, plus TTFB samples, in the estimate.
    assert plan.case_seconds(k, cases[0]) > 5000 / plan.ASSUMED_FIXED_RPS


def test_static_tls_smoke_is_short():
    k = resolve("static-tls-smoke", env={}, cli={"SEED": "1"})
    stacks = ["nginx-static", "apache-static"]
    the_plan = build_plan(k, stacks, dict.fromkeys(stacks, "static"))
    assert len(the_plan) == 4 and len({c.connections for i in the_plan for c in i.cases}) == 2
    assert plan.estimate_seconds(k, the_plan) < 120


def test_server_cores_use_the_server_cores_first(monkeypatch):
    monkeypatch.setattr(plan.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    k = knobs(SERVER_CPUS="0", CLIENT_CPUS="3", SEED=1)
    assert plan.server_cpus_for(k, None) == (0,)
    assert plan.server_cpus_for(k, 1) == (0,)
    assert plan.server_cpus_for(k, 3) == (0, 1, 2)
    assert plan.server_cpus_for(k, 4) == (0, 1, 2, 3)  # the client's core last


def test_configurations_without_a_core_sweep_keep_absolute_quotas():
    k = knobs(SERVER_CPU_QUOTA="0.25,1", SEED=1)
    assert plan.configurations(k) == [(0.25, None), (1.0, None)]
    swept = knobs(SERVER_CPU_QUOTA="0.25,1", SERVER_CORES="1", SEED=1)
    assert plan.configurations(swept) == [(0.25, 1), (None, 1)]


@pytest.mark.parametrize(
    "cli",
    [{"HTTP": "3"}, {"HTTP": "1.1"}, {"TTFB": "-1"}, {"SERVER_CORES": "64"}],
)
def test_bad_static_knobs_are_refused(cli):
    with pytest.raises(KnobError):
        knobs(**cli)


def test_http1_with_h2load_is_accepted():
    k = knobs(TOOL="h2load", HTTP="1.1", SEED=1)
    assert k.http == "1.1" and k.tool == "h2load"


def test_tls_tool_measures_the_stacks_served_over_https():
    k = knobs(TOOL="wrk", TLS_TOOL="h2load", SEED=1, SCENARIOS="workday", CONNECTIONS="16,64")
    the_plan = build_plan(k, ["aspnetcore", "aspnetcore@https"], over_tls={"aspnetcore@https"})
    tools = {(c.stack, c.tool) for i in the_plan for c in i.cases}
    assert tools == {("aspnetcore", "wrk"), ("aspnetcore@https", "h2load"), (calibration.NAME, "wrk")}
    # Unset, TLS_TOOL is TOOL; HTTP=1.1 is h2load's, so TLS_TOOL=h2load allows it.
    assert knobs(SEED=1).tool_for(over_tls=True) == "wrk"
    assert knobs(TLS_TOOL="h2load", HTTP="1.1", SEED=1).http == "1.1"
