"""`make then-and-now`: the claims of the four experiments judged on the committed runs.

Each rule is broken on purpose in a copy of a committed run: one figure changed
changes the verdict, one round flagged makes it "cannot tell". The page and the
handouts must be what the generator writes from the committed files, byte for
byte, and every quote must be the source's own words. No server is started.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from loadtest.bench.results import RESULTS_FILE
from loadtest.report.claims import (SEEDS_DIR, ClaimError, Setting, load, load_all,
                                     quote_found)  # fmt: skip
from loadtest.report.run_rounds import MEASUREMENTS_DIR, open_run
from loadtest.report.then_and_now import FAILS, HOLDS, UNDECIDED, judge_experiment
from loadtest.report.then_and_now_page import (
    HANDOUTS,
    PAGE,
    TEMPLATE,
    claim_row,
    claim_section,
    count_line,
    handout,
    handout_path,
    judge_all_experiments,
    page,
)

WORKDAY_RUN = "20261128-160703-workday-2019"
SUMMARY_ONLY_RUN = "20261128-143713-ab-2017"
# Two unflagged figures of the workday run, about 1.08 apart in every round.
CLAIM = """
experiment = "probe"
title = "probe"
[sources]
"003_2806dc8988859c0a.txt" = "the 2019 workday post"
[runs]
run = "{run}"
[[claim]]
id = "probe"
title = "WebFlux about 1.08 times Spring MVC"
source = "003_2806dc8988859c0a.txt"
words = "Spring WebFlux 的性能获得了极大提升"
then = "-"
run = "run"
kind = "ratio"
expected = 1.08
a = "spring-webflux"
b = "spring-mvc"
scenario = "workday"
connections = 64
"""


def probe(tmp_path: Path, edit=None) -> list:
    """The probe claim judged on a copy of the workday run, after `edit(records)`."""
    root = tmp_path / "measurements"
    shutil.copytree(MEASUREMENTS_DIR / WORKDAY_RUN, root / WORKDAY_RUN)
    results = root / WORKDAY_RUN / RESULTS_FILE
    records = [json.loads(line) for line in results.read_text().splitlines()]
    if edit:
        edit(records)
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    claim_file = tmp_path / "probe.toml"
    claim_file.write_text(CLAIM.format(run=WORKDAY_RUN))
    experiment = load(claim_file)
    return judge_experiment(experiment, {"run": open_run(WORKDAY_RUN, root)})


def the_case(record: dict, stack: str) -> bool:
    return (record.get("kind") == "measurement" and record["stack"] == stack
            and record["connections"] == 64)  # fmt: skip


def tighten(records: list[dict]) -> None:
    """Each side's rounds ten times closer to their median: the same pair, less noise."""
    for stack in ("spring-webflux", "spring-mvc"):
        rounds = [r["result"] for r in records if the_case(r, stack)]
        middle = sorted(result["rps"] for result in rounds)[len(rounds) // 2]
        for result in rounds:
            result["rps"] = middle * (1 + (result["rps"] / middle - 1) / 10)


def test_the_probe_cannot_tell_on_the_committed_rounds(tmp_path):
    # 1.08 as claimed, but three rounds this far apart leave room for a 15% difference.
    [judged] = probe(tmp_path)
    assert judged.verdict == UNDECIDED, judged.reasons
    assert "inside the 10% floor but its interval" in judged.comparisons[0].detail


def test_the_probe_holds_when_its_rounds_agree(tmp_path):
    [judged] = probe(tmp_path, tighten)
    assert judged.verdict == HOLDS, judged.reasons


def test_changing_one_figure_changes_the_verdict(tmp_path):
    def double_webflux(records):
        for record in records:
            if the_case(record, "spring-webflux"):
                record["result"]["rps"] *= 2

    [judged] = probe(tmp_path, double_webflux)
    assert judged.verdict == FAILS, judged.reasons
    assert "above the claimed 1.08x" in judged.comparisons[0].detail


def test_a_flagged_round_makes_it_cannot_tell(tmp_path):
    def flag_one_round(records):
        tighten(records)
        first = next(r for r in records if the_case(r, "spring-mvc"))
        first["client_bound"] = True

    [judged] = probe(tmp_path, flag_one_round)
    assert judged.verdict == UNDECIDED
    assert "client-bound 1/3" in judged.comparisons[0].detail
    assert "unflagged it would be holds: no change detected" in judged.comparisons[0].detail


def test_a_not_steady_round_makes_it_cannot_tell(tmp_path):
    def not_steady(records):
        next(r for r in records if the_case(r, "spring-webflux"))["not_steady"] = True

    [judged] = probe(tmp_path, not_steady)
    assert judged.verdict == UNDECIDED
    assert "NOT-STEADY 1/3" in judged.comparisons[0].detail


def test_a_summary_only_run_gives_its_three_rounds():
    run = open_run(SUMMARY_ONLY_RUN)
    rounds = run.rounds(Setting("aspnetcore", "hello", 150), "rps")
    assert rounds.values == [17064.8, 17361.1, 18382.4]
    assert rounds.flag_counts == {"client-bound": 1}
    p95 = run.rounds(Setting("aspnetcore", "hello", 150), "latency_p95_ms")
    assert p95.values == [] and "median" in p95.missing


def test_every_claim_reads_figures_its_run_has():
    for judgement in judge_all_experiments():
        for item in judgement.judged:
            for comparison in item.comparisons:
                assert "not in the run" not in comparison.detail, (item.claim.id, comparison.label)


def test_regenerating_the_page_changes_no_byte():
    judgements = judge_all_experiments()
    assert page(judgements, TEMPLATE.read_text()) == PAGE.read_text(), "make then-and-now"
    for judgement in judgements:
        path = handout_path(judgement.experiment)
        assert handout(judgement) == path.read_text(), f"make then-and-now: {path.name}"


def test_every_claim_has_its_own_anchor():
    for experiment in load_all():
        ids = [claim.id for claim in experiment.claims]
        assert len(ids) == len(set(ids)), f"{experiment.path.name}: a claim id used twice"


def test_the_handouts_are_linked_from_the_labs():
    labs = (HANDOUTS.parent / "README.md").read_text()
    for experiment in load_all():
        assert f"then-and-now/{experiment.name}.md" in labs


@pytest.mark.skipif(not SEEDS_DIR.is_dir(),
                    reason=f"the source texts are not beside the repository ({SEEDS_DIR})")  # fmt: skip
def test_every_quote_is_the_sources_own_words():
    for experiment in load_all():
        for said in (*experiment.claims, *experiment.untestable):
            text = (SEEDS_DIR / said.source).read_text()
            assert quote_found(said.words, text), f"{experiment.path.name}: {said.words[:60]}"


def test_a_quote_that_is_not_in_the_source_is_caught():
    text = "Removing the Server header alone gave +15%."
    assert quote_found("the Server header ... +15%", text)
    assert not quote_found("removing the Server header gave +15%", text)


# A made-up run: two stacks, three rounds, figures chosen per test.
SYNTHETIC = """
experiment = "made-up"
title = "made-up"
[sources]
"none.txt" = "a made-up source"
[runs]
run = "made-up-run"
[[claim]]
id = "made-up"
title = "made-up"
source = "none.txt"
words = "-"
then = "-"
run = "run"
scenario = "hello"
connections = 10
"""


def record(stack: str, rps: float, round_no: int, **extra) -> dict:
    return {"kind": "measurement", "status": "ok", "stack": stack, "scenario": "hello",
            "connections": 10, "repetition": round_no, "tool": "wrk", "phase": "measure",
            "result": {"rps": rps, "latency_ms": {"mean": 10 / rps * 1000},
                       "errors": {"timeout": extra.pop("errors", 0)}, "requests": 1000,
                       "bytes_per_s": rps * 100, "bytes_total": 100_000},
            "response": {"header_bytes": 90, "body_bytes": 10}, **extra}  # fmt: skip


def made_up(tmp_path: Path, claim: str, records: list[dict]) -> list:
    folder = tmp_path / "made-up-run"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"knobs": {}}))
    (folder / RESULTS_FILE).write_text("".join(json.dumps(r) + "\n" for r in records))
    claim_file = tmp_path / "made-up.toml"
    claim_file.write_text(SYNTHETIC + claim)
    return judge_experiment(load(claim_file), {"run": open_run("made-up-run", tmp_path)})


def rounds_of(stack: str, values: list[float], **extra) -> list[dict]:
    return [record(stack, v, i + 1, **extra) for i, v in enumerate(values)]


def test_an_order_claim_holds_on_a_lead_the_rule_calls(tmp_path):
    records = rounds_of("a", [2000, 2050, 1980]) + rounds_of("b", [1000, 1020, 990])
    [judged] = made_up(tmp_path, 'kind = "greater"\na = "a"\nb = "b"\n', records)
    assert judged.verdict == HOLDS, judged.reasons


def test_no_lead_refutes_an_order_only_when_the_originals_gap_would_show(tmp_path):
    records = rounds_of("a", [1000, 1010, 995]) + rounds_of("b", [1000, 1005, 990])
    claim = 'kind = "greater"\na = "a"\nb = "b"\nexpected = {gap}\n'
    [seen] = made_up(tmp_path / "wide", claim.format(gap=2.0), records)
    assert seen.verdict == FAILS, seen.reasons
    [hidden] = made_up(tmp_path / "small", claim.format(gap=1.05), records)
    assert hidden.verdict == UNDECIDED, hidden.reasons  # a 5% lead is under the floor
    assert "could hide under the detection limit" in hidden.comparisons[0].detail
    noisy = rounds_of("a", [1000, 1500, 700]) + rounds_of("b", [1000, 1400, 800])
    [unsure] = made_up(tmp_path / "noisy", claim.format(gap=2.0), noisy)
    assert unsure.verdict == UNDECIDED, unsure.reasons
    assert "interval" in unsure.comparisons[0].detail and "reaches past it" in unsure.reasons[0]


def test_a_bound_must_hold_in_every_round(tmp_path):
    claim = 'kind = "bound"\nmetric = "errors"\nat_least = 100\na = "a"\n'
    every = made_up(tmp_path / "every", claim, rounds_of("a", [1000] * 3, errors=150))
    assert every[0].verdict == HOLDS
    mixed = [record("a", 1000, 1, errors=150), record("a", 1000, 2), record("a", 1000, 3)]
    assert made_up(tmp_path / "mixed", claim, mixed)[0].verdict == UNDECIDED


def test_the_bytes_of_an_answer_are_read_from_flagged_rounds(tmp_path):
    claim = 'kind = "ratio"\nmetric = "header_bytes"\nexpected = 1.0\na = "a"\nb = {value = 88}\n'
    records = rounds_of("a", [1000, 1000, 1000], client_bound=True)
    [judged] = made_up(tmp_path, claim, records)
    assert judged.verdict == HOLDS, judged.reasons


TIED = """
experiment = "tied"
title = "tied"
[sources]
"none.txt" = "a made-up source"
[runs]
run = "tied-run"
[[claim]]
id = "faster"
title = "a serves more than b"
{common}
kind = "greater"
[[claim]]
id = "quicker"
title = "a answers sooner than b"
{common}
kind = "less"
metric = "latency_mean_ms"
[[claim]]
id = "tail"
title = "a's tail below b's"
{common}
kind = "less"
metric = "latency_p95_ms"
"""
TIED_COMMON = """source = "none.txt"
words = "-"
then = "-"
run = "run"
a = "a"
b = "b"
scenario = "hello"
connections = 10"""


def tied(tmp_path: Path, knobs: dict) -> list:
    folder = tmp_path / "tied-run"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"knobs": knobs}))
    records = rounds_of("a", [2000, 2050, 1980]) + rounds_of("b", [1000, 1020, 990])
    (folder / RESULTS_FILE).write_text("".join(json.dumps(r) + "\n" for r in records))
    claim_file = tmp_path / "tied.toml"
    claim_file.write_text(TIED.format(common=TIED_COMMON))
    return judge_experiment(load(claim_file), {"run": open_run("tied-run", tmp_path)})


def test_a_closed_loops_mean_latency_claim_reads_the_throughput_again(tmp_path):
    faster, quicker, tail = tied(tmp_path / "closed", {})
    assert (faster.rereads, tail.rereads) == ((), ())  # p95 is not tied to requests/s
    assert [c.id for c in quicker.rereads] == ["faster"]
    assert quicker.verdict == faster.verdict == HOLDS  # judged all the same
    assert "no latency_p95_ms in its records" in tail.reasons[0]
    line = count_line([faster, quicker, tail], 0)
    assert "1 of the 3 read again the figures of an earlier claim" in line
    assert "the 2 with figures of their own" in line
    assert "Reads again the figures of [a serves more than b](h.md#faster)" in claim_row(
        quicker, "h.md"
    )
    # Open loop: the offered rate sets requests/s, and the latency is a figure of its own.
    assert all(not item.rereads for item in tied(tmp_path / "open", {"rate": ["1000"]}))
    assert "read again" not in count_line(tied(tmp_path / "open2", {"rate": ["1000"]}), 0)


def test_a_lower_percentile_standing_in_can_refute_an_upper_bound_not_confirm_it(tmp_path):
    claim = ('kind = "bound"\nmetric = "latency_p75_ms"\nat_most = 4.5\npercentile = 80\n'
             'a = "a"\n')  # fmt: skip

    def rounds(p75: float) -> list[dict]:
        made = rounds_of("a", [1000] * 3)
        for r in made:
            r["result"]["latency_ms"]["p75"] = p75
        return made

    [within] = made_up(tmp_path / "within", claim, rounds(3.0))
    assert within.verdict == UNDECIDED, within.reasons
    assert "the 75th percentile within the bound does not put the claimed 80th within it" in (
        within.comparisons[0].detail)
    [outside] = made_up(tmp_path / "outside", claim, rounds(6.0))
    assert outside.verdict == FAILS, outside.reasons  # the 80th is at least the 75th
    without = claim.replace("percentile = 80\n", "")
    [read_as_is] = made_up(tmp_path / "as-is", without, rounds(3.0))
    assert read_as_is.verdict == HOLDS


def test_a_verdict_on_a_figure_measured_otherwise_says_so_and_is_counted_apart(tmp_path):
    claim = ('kind = "ratio"\nmetric = "header_bytes"\nexpected = 1.0\na = "a"\n'
             'b = {value = 40}\nmeasured_otherwise = "the contract\'s headers, not the original\'s"\n')
    [judged] = made_up(tmp_path, claim, rounds_of("a", [1000] * 3))
    assert judged.verdict == FAILS  # 90 bytes against 40
    assert "**does not hold** (measured otherwise)" in claim_row(judged, "h.md")
    line = count_line([judged], 0)
    assert "1 of those decided rest on a figure this replay measures otherwise" in line
    assert "1 does not hold, a difference of method" in line
    section = claim_section(1, judged)
    assert "| measured otherwise | the contract's headers, not the original's |" in section


def test_every_source_a_claim_cites_is_named_by_its_experiment(tmp_path):
    for experiment in load_all():
        assert all(experiment.sources.values()), experiment.name
    unnamed = tmp_path / "unnamed.toml"
    unnamed.write_text(SYNTHETIC.replace('"none.txt" = "a made-up source"\n', "")
                       + 'kind = "bound"\nmetric = "errors"\nat_most = 0\na = "a"\n')
    with pytest.raises(ClaimError, match=r"unnamed.toml: \[sources\] does not name none.txt"):
        load(unnamed)
