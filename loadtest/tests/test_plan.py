"""Knobs (profile < environment < command line), the shuffled plan, resume."""

from __future__ import annotations

import pytest

from loadtest import plan
from loadtest.plan import KnobError, build_plan, resolve


def knobs(**cli):
    return resolve("smoke", env={}, cli={k: str(v) for k, v in cli.items()})


def test_every_profile_resolves():
    for name in plan.profile_names():
        k = resolve(name, env={}, cli={"SEED": "1"})
        assert k.profile == name and k.duration > 0
    assert {"smoke", "quick", "standard", "wsgi-2016", "ab-2017", "workday-2019",
            "cpu-sweep-2019", "latency"} <= set(plan.profile_names())  # fmt: skip


def test_precedence_profile_env_cli():
    k = resolve("smoke", env={"DURATION": "7", "REPEAT": "2"}, cli={"DURATION": "9", "REPEAT": ""})
    assert k.duration == 9 and k.sources["duration"] == "cli"
    assert k.repeat == 2 and k.sources["repeat"] == "env"
    assert k.warmup == 1 and k.sources["warmup"] == "profile"


def test_list_knobs_and_cpus():
    k = knobs(CONNECTIONS="1, 3,5", SCENARIOS="hello,workday", SERVER_CPUS="0",
              CLIENT_CPUS="0", SERVER_CPU_QUOTA="0.25,0.5")  # fmt: skip
    assert k.connections == [1, 3, 5]
    assert k.scenarios == ["hello", "workday"]
    assert k.server_cpus == (0,) and k.threads == 1
    assert k.quotas == [0.25, 0.5]
    assert plan.parse_cpus("2-3,5") == (2, 3, 5)


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


def test_quick_profile_fits_its_budget_for_fourteen_stacks():
    """`make bench` (quick) must finish in under 15 minutes on 2 cores with builds cached."""
    k = resolve("quick", env={}, cli={"SEED": "1"})
    stacks = [f"stack{i}" for i in range(14)]
    assert plan.estimate_seconds(k, build_plan(k, stacks)) < 13 * 60


def test_estimate_counts_warmups_and_starts():
    k = knobs(SEED=1, SCENARIOS="hello", CONNECTIONS="16")
    seconds = plan.estimate_seconds(k, build_plan(k, ["a"]))
    # Two starts (a + ceiling), one verification, two warm-ups, two cases.
    expected = (
        2 * plan.INSTANCE_OVERHEAD_S
        + plan.VERIFY_S
        + 2 * k.warmup
        + 2 * (k.duration + plan.CASE_OVERHEAD_S)
    )
    assert seconds == pytest.approx(expected)
