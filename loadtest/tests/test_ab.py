"""`make ab`: the sides as written, their manifests and quotas, the plan that
alternates them, and one real A/B run of a commit against the working tree."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from loadtest.bench.ab_sides import make_sides
from loadtest.bench.plan import build_plan
from loadtest.commands.stacks import first_runnable
from loadtest.core.ab import SideError, parse_side, parse_sides
from loadtest.core.knobs import resolve
from loadtest.core.manifest import REPO_ROOT
from loadtest.report.compare import QUOTA, compare_sides, partner_key
from loadtest.runners import calibration
from loadtest.tests.test_bench_faults import NEEDS_NGINX_AND_WRK, only_run


def test_a_side_reads_a_revision_settings_and_quotas():
    side = parse_side("B", "HEAD~1 WORKERS=2 SERVER_CPU_QUOTA=0.95,0.9")
    assert (side.revision, side.env, side.quotas) == ("HEAD~1", {"WORKERS": "2"}, (0.95, 0.9))
    assert side.describe() == "HEAD~1, WORKERS=2, SERVER_CPU_QUOTA=0.95,0.9"
    assert parse_side("A", "").describe() == "working tree"
    assert side.stack_id("gin") == "gin@B"


@pytest.mark.parametrize("text, why", [
    ("HEAD main", "two revisions"),
    ("REPEAT=5", "a knob of the whole run"),
    ("SERVER_CPU_QUOTA=0", "must be > 0"),
    ("SERVER_CPU_QUOTA=most", "give CPUs"),
    ("1X=2", "not an environment variable name"),
])  # fmt: skip
def test_a_side_that_cannot_run_says_why(text, why):
    with pytest.raises(SideError, match=why):
        parse_side("B", text)


def test_two_identical_sides_are_refused_as_an_a_a():
    with pytest.raises(SideError, match="make aa"):
        parse_sides("WORKERS=2", "WORKERS=2")


def test_sides_of_the_working_tree_share_the_stack_build_unless_their_environment_differs():
    sides = make_sides("gin", *parse_sides("SERVER_CPU_QUOTA=1", "WORKERS=2"))
    a, b = sides.manifests["gin@A"], sides.manifests["gin@B"]
    assert a.build_dir == REPO_ROOT / ".build" / "gin"  # only its quota differs
    assert b.build_dir == REPO_ROOT / ".build" / "gin@B" and b.env["WORKERS"] == "2"
    assert a.label == "Go gin (A: working tree, SERVER_CPU_QUOTA=1)"
    assert sides.quotas == {"gin@A": (1.0,)}
    record = sides.record()
    assert record["stack"] == "gin" and record["sides"]["B"]["env"] == {"WORKERS": "2"}
    assert record["sides"]["A"]["commit"] == ""


def test_every_round_starts_each_side_at_each_of_its_quotas_beside_the_ceiling():
    knobs = resolve("smoke", env={}, cli={"REPEAT": "4", "SCENARIOS": "hello", "SEED": "3"})
    the_plan = build_plan(knobs, ["gin@A", "gin@B"], quotas={"gin@B": (0.95, 0.8)})
    for repetition in range(1, 5):
        started = sorted((i.stack, i.quota or 0) for i in the_plan if i.repetition == repetition)
        expected = [("gin@A", 0), ("gin@B", 0.8), ("gin@B", 0.95), (calibration.NAME, 0)]
        assert started == sorted(expected)
    orders = {tuple(i.stack for i in the_plan if i.repetition == r) for r in range(1, 5)}
    assert len(orders) > 1  # shuffled round by round: neither side always first


def test_each_quota_of_one_side_is_paired_with_the_other_side_at_its_one_setting():
    uncapped = ("gin", "hello", 16, "wrk", "", None, None, "measure")
    capped = uncapped[:QUOTA] + (0.9,) + uncapped[QUOTA + 1:]
    assert partner_key(capped, {uncapped: []}) == uncapped
    assert partner_key(capped, {capped: []}) == capped  # both sides swept: value by value
    assert partner_key(capped, {}) is None


# A real A/B run: gin at a quota of 1 against 0.95, 0.9 and 0.8, five rounds
# (docs/measurements/interleaved-ab.md).
POWER_RUN = REPO_ROOT / "docs" / "measurements" / "interleaved-ab" / "20261129-201822-ab-gin"


def without_aa_line(text: str) -> list[str]:
    return [part for part in text.split("\n\n") if not part.startswith(("A/A runs", "No A/A"))]


def test_a_real_ab_run_compares_each_quota_of_b_with_a(tmp_path):
    folder = tmp_path / POWER_RUN.name
    shutil.copytree(POWER_RUN, folder)
    (folder / "ab.md").unlink()
    text = compare_sides(folder).read_text()
    # Written again, the same comparison; only the sentence on the host's A/A runs
    # differs (none beside this copy).
    assert without_aa_line(text) == without_aa_line((POWER_RUN / "ab.md").read_text())
    rows = {line.split(" | ")[3]: line for line in text.splitlines() if line.startswith("| gin |")}
    assert set(rows) == {"wrk q0.8", "wrk q0.9", "wrk q0.95"}
    assert "| 67,433 | 55,319 | 0.807 |" in rows["wrk q0.8"] and "regression" in rows["wrk q0.8"]
    # 3.5% slower, its interval within the floor: no change. 8.4% slower, its interval
    # reaching past the floor: the rounds cannot say whether the floor was crossed.
    assert "no change detected (-3.5%, q=0.004, interval within the 10% floor" in rows["wrk q0.95"]
    assert "cannot tell (-8.4%, q<0.001, inside the 10% floor but its interval" in rows["wrk q0.9"]
    assert "The unit: both sides are rounds of one invocation" in text


@pytest.mark.e2e
@NEEDS_NGINX_AND_WRK
def test_a_commit_against_the_working_tree_at_two_quotas_in_one_run(tmp_path):
    """What it proves: the A side is built from a worktree at HEAD's commit and the B
    side from the working tree, both run in every round beside the ceiling, and ab.md
    pairs each of B's quotas with A. One-second loads: the verdicts are not judged.
    gin, or uvloop where this machine has no Go."""
    stack = first_runnable(["gin", "uvloop"])
    results = tmp_path / "results"
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "ab", stack, "--a", "HEAD",
         "--b", "SERVER_CPU_QUOTA=0.5,0.25", "--repeat", "3", "--duration", "1",
         "--warmup", "0", "--scenarios", "hello", "--connections", "16",
         "--results-dir", str(results)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    folder = only_run(results)
    sides = json.loads((folder / "run.json").read_text())["ab"]["sides"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    assert sides["A"]["commit"] == head and sides["B"]["commit"] == ""
    records = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    measured = [(r["stack"], r.get("cpu_quota")) for r in records if r.get("kind") == "measurement"
                and r.get("phase", "measure") == "measure"]  # fmt: skip
    sides_run = [(f"{stack}@A", None), (f"{stack}@B", 0.5), (f"{stack}@B", 0.25)]
    for side in [*sides_run, (calibration.NAME, None)]:
        assert measured.count(side) == 3, measured
    text = (folder / "ab.md").read_text()
    assert text.startswith(f"# serverlab A/B: {stack}, A (HEAD) as old -> B (working tree, "
                           "SERVER_CPU_QUOTA=0.5,0.25) as new")  # fmt: skip
    rows = [line for line in text.splitlines() if line.startswith(f"| {stack} | hello | 16 |")]
    assert len(rows) == 2 and "wrk q0.5" in rows[0] + rows[1] and "wrk q0.25" in rows[0] + rows[1]
    assert all("3 / 3 (rounds / rounds)" in row for row in rows)
    assert f"A: HEAD (commit {head})" in text
    assert "ab.md" in done.stdout and (folder / "ab.html").is_file()
