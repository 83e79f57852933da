"""Every runnable command in the documentation is run, so the docs cannot rot.

Fenced blocks whose info string is `sh runnable` (or `bash runnable`) in
README.md, docs/*.md and docs/labs/*.md are extracted and run in order, one
bash script per block, in a scratch copy of the repository (tracked files
only; the tooling venv is shared; one copy serves every page). A block marked
`runnable fails` must exit non-zero (a check that is meant to fail, such as
`make check` on a fresh stub).

The smoke profile keeps the whole suite to a few minutes: the environment
has PROFILE=smoke (make bench's default profile; `make lab` shrinks a lab to
one stack, the extreme levels and 1 s runs), DURATION=1 and WARMUP=0 for
every other block, SERVERS=go-nethttp, a stack that builds in seconds (or,
where Go is missing, the first of SMOKE_STACKS that can run here), for every
command that does not name its stacks, and RUNNER=native. A block whose info string says `needs=oha` is skipped, and
named, where oha is not installed and cannot be built (no cargo, or crates.io
read from a mirror that lacks oha's crates).
Load only ever goes to 127.0.0.1.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from loadtest.commands.stacks import first_runnable
from loadtest.core.manifest import REPO_ROOT
from loadtest.measure.tools.oha import Oha
from loadtest.tests.test_lab5_coordinated_omission import ensure_oha
from loadtest.tests.test_scaffold import copy_env, repo_copy

pytestmark = pytest.mark.e2e

SHELLS = {"sh", "bash", "shell"}
BLOCK_TIMEOUT_S = 420
# Stacks that build in seconds, the first one that can run here serves the pages.
SMOKE_STACKS = ["go-nethttp", "uvloop", "fastify"]
# RUNNER=native: the pages' bench and lab commands run natively whether or not
# a Docker daemon answers on the test machine (test_docker_bench.py covers Docker).
SMOKE_ENV = {"PROFILE": "smoke", "SERVERS": first_runnable(SMOKE_STACKS), "RUNNER": "native"}
# Loads of 1 s and no warm-up for the benches a page runs itself (lab 4's A/A
# series and its capped bench: 2 s each in the smoke profile, after up to 5 s
# of warm-up per case): the test proves that every command runs and writes what
# the page says it writes, not its figures. Lab 4's A/A block took 191 s with
# the warm-up and 81 s without; the warm-up itself is proved in the timing
# tests (test_bench_validity.py) and the bench-smoke stage. `make lab` sizes
# its own smoke runs (commands/labs.py), and a knob on the command line wins
# over these.
BENCH_ENV = {"DURATION": "1", "WARMUP": "0"}
# Pages whose every shell block must be runnable (the contributor and lab pages).
ALL_RUNNABLE = ["docs/adding-a-server.md", "docs/labs/*.md"]
# Pages whose blocks each stand alone (a lab's commands need only the stacks),
# so each block is its own test and the end-to-end workers share a long page;
# on any other page the blocks build on each other and run in order, as a reader
# would type them.
STANDALONE_BLOCKS = ["docs/labs/*.md"]
FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    info: tuple[str, ...]
    code: str

    @property
    def shell(self) -> bool:
        return bool(self.info) and self.info[0] in SHELLS

    @property
    def runnable(self) -> bool:
        return self.shell and "runnable" in self.info

    @property
    def fails(self) -> bool:
        return "fails" in self.info

    @property
    def needs(self) -> set[str]:
        return {word.split("=", 1)[1] for word in self.info if word.startswith("needs=")}


def blocks(path: Path, root: Path = REPO_ROOT) -> list[Block]:
    """Fenced code blocks of a Markdown page, with their info strings split into words."""
    found, lines = [], path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, info, start = opening.group(1), tuple(opening.group(2).split()), i
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1
        page = path.relative_to(root).as_posix()
        found.append(Block(page, start + 1, info, "\n".join(body) + "\n"))
    return found


def pages() -> list[Path]:
    listed = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    return [p for p in listed + sorted((REPO_ROOT / "docs" / "labs").glob("*.md")) if p.is_file()]


def pages_with_runnable_blocks() -> list[str]:
    return [
        p.relative_to(REPO_ROOT).as_posix() for p in pages() if any(b.runnable for b in blocks(p))
    ]


def standalone(page: str) -> bool:
    return any(Path(page).match(pattern) for pattern in STANDALONE_BLOCKS)


def runnable_units() -> list[tuple[str, int | None]]:
    """What each test runs: one block of a page whose blocks stand alone
    (page, line), else every block of a page in order (page, None)."""
    units = []
    for page in pages_with_runnable_blocks():
        if standalone(page):
            units += [(page, b.line) for b in blocks(REPO_ROOT / page) if b.runnable]
        else:
            units.append((page, None))
    return units


def test_block_parser(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "text\n```sh runnable\nmake list\n```\n```text\nout\n```\n"
        "````bash runnable fails\nmake check\n```\nstill inside\n````\n```sh\nmake x\n```\n"
    )
    found = blocks(page, root=tmp_path)
    assert [(b.runnable, b.fails, b.code) for b in found] == [
        (True, False, "make list\n"),
        (False, False, "out\n"),
        (True, True, "make check\n```\nstill inside\n"),
        (False, False, "make x\n"),
    ]


def test_contributor_and_lab_pages_run_every_command():
    """On these pages no shell block may be left unexecuted."""
    checked = 0
    for pattern in ALL_RUNNABLE:
        for path in sorted(REPO_ROOT.glob(pattern)):
            page_blocks = [b for b in blocks(path) if b.shell]
            assert page_blocks, f"{path}: no shell block"
            for block in page_blocks:
                assert block.runnable, f"{block.page}:{block.line}: shell block not marked runnable"
            checked += 1
    assert checked >= 7  # adding-a-server, the labs index and five labs
    labs = sorted((REPO_ROOT / "docs" / "labs").glob("[1-9]-*.md"))
    assert len(labs) >= 5
    for lab in labs:
        text = lab.read_text()
        for section in (
            "## Goal",
            "## Commands",
            "## What to look for in the charts",
            "## Questions",
            "## What the answer depends on",
        ):
            assert section in text, f"{lab.name}: no '{section}' section"
        number = int(lab.name.split("-")[0])
        assert f"make lab LAB={number}" in text


def block_env(block: Block) -> dict[str, str]:
    return SMOKE_ENV if "make lab" in block.code else {**SMOKE_ENV, **BENCH_ENV}


def run_block(block: Block, repo: Path) -> tuple[int, str, float]:
    """Run one block with bash in its own process group; kill what it leaves behind."""
    options = ["-o", "pipefail"] if block.fails else ["-e", "-o", "pipefail"]
    started = time.monotonic()
    process = subprocess.Popen(
        ["bash", *options, "-c", block.code],
        cwd=repo,
        env=copy_env(**block_env(block)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        output += f"\n[timed out after {BLOCK_TIMEOUT_S} s]"
    finally:
        try:  # background servers the block started and did not stop
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return process.returncode, output, time.monotonic() - started


@pytest.fixture(scope="module")
def docs_repo(tmp_path_factory) -> Path:
    """One scratch copy for every page, seeded with the smoke stack's build output.

    The runner rebuilds a stack only when its sources changed, so the copied
    build of an unchanged stack is reused and no page pays for it again.
    """
    repo = repo_copy(tmp_path_factory.mktemp("docs") / "repo")
    for stack in SMOKE_ENV["SERVERS"].split(","):
        built = REPO_ROOT / ".build" / stack
        if built.is_dir():
            shutil.copytree(built, repo / ".build" / stack, ignore=shutil.ignore_patterns("*.log"))
    return repo


def missing_need(block: Block) -> str | None:
    """Why a block cannot run here, or None: a `needs=` tool that cannot be had."""
    if "oha" in block.needs and not Oha().available():
        try:
            ensure_oha()
        except pytest.skip.Exception as skipped:
            return str(skipped)
    return None


def test_a_standalone_page_is_one_test_per_block_and_any_other_page_one_test():
    units = runnable_units()
    lab4 = [line for page, line in units if page == "docs/labs/4-cpu-cap.md"]
    assert len(lab4) == len([b for b in blocks(REPO_ROOT / "docs/labs/4-cpu-cap.md") if b.runnable])
    assert len(lab4) >= 2 and None not in lab4
    assert ("docs/adding-a-server.md", None) in units


@pytest.mark.long
@pytest.mark.parametrize(
    ("page", "line"),
    runnable_units(),
    ids=[f"{page}" if line is None else f"{page}:{line}" for page, line in runnable_units()],
)
def test_runnable_blocks(page, line, docs_repo):
    repo = docs_repo
    not_run = []
    chosen = [b for b in blocks(REPO_ROOT / page) if b.runnable and line in (None, b.line)]
    for block in chosen:
        if reason := missing_need(block):
            not_run.append(f"{page}:{block.line}: {reason}")
            continue
        code, output, took = run_block(block, repo)
        where = f"{page}:{block.line} ({took:.0f} s)"
        print(f"\n--- {where}: exit {code}\n{block.code}{output[-2000:]}")
        assert "Traceback (most recent call last)" not in output, f"{where}\n{output[-4000:]}"
        if block.fails:
            assert code != 0, f"{where}: expected to fail, exited 0\n{output[-4000:]}"
        else:
            assert code == 0, f"{where}: exit {code}\n{output[-4000:]}"
    if not_run:
        pytest.skip("; ".join(not_run))
