"""The Makefile is the documented interface: it forwards every knob, and `make help` lists every target."""

from __future__ import annotations

import re
import subprocess

from loadtest.core.knobs import KNOB_TABLE
from loadtest.core.manifest import REPO_ROOT

MAKEFILE = (REPO_ROOT / "Makefile").read_text()


def test_make_bench_forwards_every_knob_as_its_option():
    forwarded = dict(re.findall(r"\$\(call knob,([A-Z0-9_]+),([a-z0-9-]+)\)", MAKEFILE))
    for knob in KNOB_TABLE:
        assert forwarded.get(knob.name) == knob.key.replace("_", "-"), knob.name
        assert re.search(rf"^{knob.name} \?=", MAKEFILE, re.MULTILINE), f"{knob.name} ?= missing"
        assert knob.name in MAKEFILE.split(".PHONY: help")[1].split(".PHONY: bootstrap")[0], (
            f"make help does not name {knob.name}"
        )


def test_make_help_lists_every_target_with_one_line():
    targets = re.findall(r"^([a-zA-Z0-9_-]+):", MAKEFILE, re.MULTILINE)
    documented = re.findall(r"^([a-zA-Z0-9_-]+):.*## ", MAKEFILE, re.MULTILINE)
    assert sorted(set(targets)) == sorted(set(documented))
    help_text = subprocess.run(
        ["make", "--no-print-directory", "help"], cwd=REPO_ROOT, capture_output=True, text=True
    ).stdout
    for target in documented:
        assert f"make {target} " in help_text, target


def test_a_list_target_refuses_the_one_stack_knob_before_it_runs_anything():
    # `make check SERVER=x` once checked every stack: SERVER is the one-stack knob of
    # serve, soak, up and ab, and check takes SERVERS.
    for target in ("check", "bench", "hostile", "build", "docker-smoke", "aa", "lab"):
        refused = subprocess.run(["make", "--no-print-directory", target, "SERVER=gin"],
                                 cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert refused.returncode == 2, (target, refused.stdout, refused.stderr)
        assert "did you mean SERVERS=gin?" in refused.stdout, (target, refused.stdout)
        assert "loadtest" not in refused.stdout
