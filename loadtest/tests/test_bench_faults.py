"""Harness fault tolerance: the real bench against small real stacks that fail on purpose.

Every test runs `python -m loadtest bench` as a subprocess with
SERVERLAB_SERVERS_DIR pointing at a throw-away folder of tiny manifests.
Their `run` starts the contract's reference server
(contracts/tests/reference_server.py), which passes the conformance
checker, so a healthy stand-in is verified and measured like any stack;
the faulty ones break one step each (build, start, readiness, a kill under
load, ...). For each fault the tests prove: the message names the stack and
the step, every record already measured is intact in results.jsonl,
run.json is written, the exit code is non-zero, no server is left running,
and the run goes on with the other stacks where that makes sense.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loadtest.bench.results import read_records
from loadtest.core.knobs import KNOBS
from loadtest.core.manifest import REPO_ROOT
from loadtest.host.ports import PORTS_VARIABLE
from loadtest.runners import calibration
from loadtest.tests.stand_in_manifest import Stacks

NEEDS_NGINX_AND_WRK = pytest.mark.skipif(
    calibration.nginx_path() is None or shutil.which("wrk") is None,
    reason="!!! nginx or wrk NOT INSTALLED: bench fault tolerance not exercised (make bootstrap) !!!",
)
pytestmark = [pytest.mark.e2e, NEEDS_NGINX_AND_WRK]

# Every knob the environment could carry into the bench (make exports them).
KNOB_ENV = (*KNOBS, "PROFILE")
# A short run: one scenario, one connection level, no warm-up; normal priority, so
# that the test watching the run is not starved by the load it watches.
SHORT = ["--profile", "smoke", "--scenarios", "hello", "--connections", "4", "--warmup", "0",
         "--seed", "11", "--priority", "0"]  # fmt: skip
def bench_env(stacks: Stacks, path: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in KNOB_ENV}
    env.update(SERVERLAB_SERVERS_DIR=str(stacks.root), PYTHONUNBUFFERED="1", COLUMNS="200")
    env["RUNNER"] = "native"  # the faults are native ones, whether or not a Docker daemon answers
    if path is not None:
        env["PATH"] = path
    return env


def bench_command(results: Path, servers: list[str], *args: str, prelude: str = "") -> list[str]:
    if prelude:  # the same entry point, with a constant changed first
        head = [sys.executable, "-c",
                f"import sys\n{prelude}\nfrom loadtest.cli import main\nsys.exit(main(sys.argv[1:]))"]  # fmt: skip
    else:
        head = [sys.executable, "-m", "loadtest"]
    return [*head, "bench", "--results-dir", str(results), "--servers", ",".join(servers),
            *SHORT, *args]  # fmt: skip


def run_bench(stacks, results, servers, *args, prelude="", path=None, timeout=60):
    return subprocess.run(
        bench_command(results, servers, *args, prelude=prelude),
        cwd=REPO_ROOT, env=bench_env(stacks, path), capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


def start_bench(stacks, results, servers, *args) -> subprocess.Popen:
    return subprocess.Popen(
        bench_command(results, servers, *args), cwd=REPO_ROOT, env=bench_env(stacks),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def bench_with_fault(stacks, results, servers, args, until, fault) -> tuple[int, str]:
    """A bench in a child process, `fault(process)` done once a line of its output holds
    every needle of `until`: the bench's exit code and whole output. The bench is killed
    if it hangs, or if the test fails meanwhile."""
    process = start_bench(stacks, results, servers, *args)
    try:
        output = read_until(process, *until)
        fault(process)
        rest, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    return process.returncode, output + rest


def read_until(process: subprocess.Popen, *needles: str, timeout: float = 30) -> str:
    """Bench output up to the first line containing every needle (the bench keeps running)."""
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        if all(needle in line for needle in needles):
            return "".join(seen)
    process.kill()
    raise AssertionError(f"never saw {needles!r} in:\n{''.join(seen)}")


def only_run(results: Path) -> Path:
    runs = [p for p in results.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def measurements(folder: Path, stack: str | None = None) -> list[dict]:
    return [
        r for r in read_records(folder / "results.jsonl")
        if r["kind"] == "measurement" and (stack is None or r["stack"] == stack)
    ]  # fmt: skip


def stack_records(folder: Path, stack: str) -> list[dict]:
    return [r for r in read_records(folder / "results.jsonl")
            if r["kind"] == "stack" and r["stack"] == stack]  # fmt: skip


def assert_measured(folder: Path, stack: str) -> None:
    records = measurements(folder, stack)
    assert records, f"nothing measured for {stack}"
    assert all(r["status"] == "ok" and r["result"]["rps"] > 0 for r in records), records


def beside_a_good_one(stacks, results, bad, good, prelude="") -> tuple[Path, str]:
    """A run over a failing stand-in, then a good one: it ends with 1 and still measures
    the good one. The run's folder and its output."""
    result = run_bench(stacks, results, [bad, good], "--duration", "1", prelude=prelude)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    folder = only_run(results)
    assert_measured(folder, good)  # the run went on with the other stack
    return folder, output


def assert_failed_step(folder: Path, output: str, stack: str, step: str, words: str) -> None:
    """The terminal and results.jsonl both name the stack, the step and the cause."""
    assert f"[{stack}] {step} failed: " in output, output
    assert words in output, output
    failed = [r for r in stack_records(folder, stack) if r["status"] == "failed"]
    assert [r["step"] for r in failed] == [step], failed
    assert words in failed[0]["message"]
    run = json.loads((folder / "run.json").read_text())
    assert run["status"] == "complete"
    assert run["failed_stacks"][stack].startswith(f"{step}: ")


# ------------------------------------------------------------------ the faults


def test_build_that_fails(stacks, tmp_path):
    good = stacks.add("good")
    broken = stacks.add("build", build="echo 'compiler: syntax error in main.x' >&2; exit 3")
    folder, output = beside_a_good_one(stacks, tmp_path / "results", broken, good)
    assert_failed_step(folder, output, broken, "build", "exit code 3")
    assert "compiler: syntax error in main.x" in output  # the build log's tail is shown
    assert not measurements(folder, broken)
    assert_measured(folder, calibration.NAME)
    assert not stacks.leftovers()


def test_port_already_in_use(stacks, tmp_path, monkeypatch):
    # The manifest's own port is what this test is about.
    monkeypatch.delenv(PORTS_VARIABLE, raising=False)
    import socket

    good = stacks.add("good")
    taken = stacks.add("port")
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", stacks.ports[taken]))
        squatter.listen()
        folder, output = beside_a_good_one(stacks, tmp_path / "results", taken, good)
    assert_failed_step(
        folder, output, taken, "start", f"port {stacks.ports[taken]} is already in use"
    )
    assert not measurements(folder, taken)
    assert not stacks.leftovers()


def test_stack_that_never_becomes_ready(stacks, tmp_path):
    good = stacks.add("good")
    # Starts, listens to nothing, never exits: only the readiness timeout ends it.
    stuck = stacks.add(
        "stuck", run='echo $$ > "$BUILD_DIR/pgid"; echo "waiting for a lock"; exec sleep 600'
    )
    folder, output = beside_a_good_one(stacks, tmp_path / "results", stuck, good,
                                       prelude="import loadtest.runners.lifecycle as b; "
                                       "b.READY_TIMEOUT_S = 3")  # fmt: skip
    assert_failed_step(folder, output, stuck, "wait-ready", "no HTTP answer")
    assert "waiting for a lock" in output  # the server's own output is shown
    assert not stacks.leftovers()  # the sleeping server was killed


def test_stack_that_exits_before_it_is_ready(stacks, tmp_path):
    good = stacks.add("good")
    crash = stacks.add("crash", run='echo "WORKDAY_CALENDAR: cannot read /nowhere" >&2; exit 3')
    folder, output = beside_a_good_one(stacks, tmp_path / "results", crash, good)
    assert_failed_step(folder, output, crash, "start", "exited with code 3 before it was ready")
    assert "WORKDAY_CALENDAR: cannot read /nowhere" in output
    assert (folder / "report.html").is_file()
    assert not stacks.leftovers()


def test_stack_killed_mid_run(stacks, tmp_path):
    good = stacks.add("good")
    victim = stacks.add("victim")
    results = tmp_path / "results"
    # Three cases: the first is measured, the stack is killed during the next one
    # (the third leaves a margin on a loaded machine).

    def kill_the_victim(_process):
        time.sleep(0.5)  # the next case has started (no warm-up, 0.3 s pause, 1 s case)
        os.killpg(stacks.pgid(victim), signal.SIGKILL)

    args = ["--connections", "2,4,8", "--duration", "1", "--seed", "5"]
    # The fault once its first case is measured.
    code, output = bench_with_fault(
        stacks, results, [victim, good], args, ["✓ [", f" {victim} "], kill_the_victim
    )
    assert code == 1, output
    folder = only_run(results)
    assert_failed_step(folder, output, victim, "load", "server exited during")
    records = measurements(folder, victim)
    assert records[0]["status"] == "ok" and records[0]["result"]["rps"] > 0
    # The case the kill cut short is kept but marked: it is not a measurement of the stack;
    # nothing is measured after it.
    statuses = [r["status"] for r in records]
    assert statuses[-1] == "failed" and set(statuses[:-1]) == {"ok"}, records
    assert records[-1]["server_alive_after"] is False
    assert "server exited during the case" in records[-1]["problem"]
    assert_measured(folder, good)
    assert (folder / "report.html").is_file()  # the report leaves the cut case out
    assert not stacks.leftovers()


def test_missing_load_tool(stacks, tmp_path):
    good = stacks.add("good")
    results = tmp_path / "results"
    first = run_bench(stacks, results, [good], "--tool", "ab", "--duration", "1")
    assert first.returncode == 0, first.stdout + first.stderr
    folder = only_run(results)
    before = (folder / "results.jsonl").read_bytes()
    run_before = json.loads((folder / "run.json").read_text())
    # The same PATH without ab: each folder that has it is replaced by a copy of
    # its links without it. The resumed run must say so and install nothing.
    folders = []
    for number, entry in enumerate(os.environ["PATH"].split(os.pathsep)):
        if not (Path(entry) / "ab").exists():
            folders.append(entry)
            continue
        copy = tmp_path / f"bin{number}"
        copy.mkdir()
        for tool in Path(entry).iterdir():
            if tool.name != "ab":
                (copy / tool.name).symlink_to(tool)
        folders.append(str(copy))
    path = os.pathsep.join(folders)
    assert shutil.which("ab", path=path) is None and shutil.which("wrk", path=path)
    again = run_bench(stacks, results, [good], "--resume", str(folder), path=path)
    output = again.stdout + again.stderr
    assert again.returncode == 2, output
    assert "tools: load tool ab not found on PATH (needed for TOOL=ab)" in output
    assert "make bootstrap" in output and "nothing was built, started or measured" in output
    assert "Traceback" not in output
    assert (folder / "results.jsonl").read_bytes() == before  # nothing lost, nothing added
    assert json.loads((folder / "run.json").read_text()) == run_before
    assert not stacks.leftovers()


def test_ctrl_c_mid_case_then_resume(stacks, tmp_path):
    stack = stacks.add("ctrlc")
    results = tmp_path / "results"
    args = ["--connections", "2,4,8", "--duration", "1", "--seed", "5"]

    def ctrl_c(process):
        time.sleep(0.5)  # its next case is running
        process.send_signal(signal.SIGINT)  # Ctrl-C reaches the bench, not the server

    # Ctrl-C once one case of the stack is measured.
    code, output = bench_with_fault(stacks, results, [stack], args, ["✓ [", f" {stack} "], ctrl_c)
    assert code == 130, output
    assert "interrupted: keeping every measurement so far" in output
    folder = only_run(results)
    kept = measurements(folder, stack)
    assert kept and all(r["status"] == "ok" for r in kept), kept
    assert len(kept) < 3  # the case cut short is not recorded
    run = json.loads((folder / "run.json").read_text())
    assert run["status"] == "interrupted"
    assert not stacks.leftovers()  # the server and the load tool were stopped

    again = run_bench(stacks, results, [stack], "--resume", str(folder))
    assert again.returncode == 0, again.stdout + again.stderr
    records = measurements(folder)
    keys = [r["key"] for r in records]
    assert len(keys) == len(set(keys)), "a measured case was measured again"
    assert {r["connections"] for r in measurements(folder, stack)} == {2, 4, 8}
    assert all(r in measurements(folder, stack) for r in kept)  # the first run's, unchanged
    assert json.loads((folder / "run.json").read_text())["status"] == "complete"
    assert not stacks.leftovers()


# ---------------------------------------------------------- the results folder

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


@contextlib.contextmanager
def tmpfs(path: Path, size: str):
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path) -> None:
    """Take every free byte of a tmpfs (down to the last page)."""
    with (disk / "filler").open("wb", buffering=0) as handle:
        for block in (65536, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    handle.write(b"\0" * block)
    assert shutil.disk_usage(disk).free == 0


@needs_root
def test_results_writer_on_a_full_disk_keeps_whole_lines(tmp_path):
    from loadtest.bench.results import ResultsWriter

    with tmpfs(tmp_path / "disk", "64k") as disk:
        path = disk / "results.jsonl"
        written = 0
        with ResultsWriter(path) as writer, pytest.raises(OSError) as failed:
            while True:
                writer.write({"seq": written + 1, "payload": "x" * 3000})
                written += 1
        assert failed.value.filename == str(path)  # the message names the file
        assert "No space left" in str(failed.value)
        assert path.read_bytes().endswith(b"\n")  # the half-written record was cut off
        assert [r["seq"] for r in read_records(path)] == list(range(1, written + 1))


@needs_root
def test_full_disk_while_writing_results(stacks, tmp_path):
    first, second = stacks.add("first"), stacks.add("second")
    # Room for the resumed run's report once the filler is gone: report.html
    # embeds its charting library (about 5 MB).
    with tmpfs(tmp_path / "disk", "32m") as disk:
        results = disk / "results"
        # Full once one measurement is on disk.
        code, output = bench_with_fault(
            stacks, results, [first, second], ["--connections", "2,4", "--duration", "1"],
            ["✓ [1/"], lambda _process: fill(disk),
        )  # fmt: skip
        assert code == 1, output
        assert "writing results failed: No space left on device" in output
        assert "the run stops here" in output and "--resume" in output
        assert "()" not in output  # every message names its file
        folder = only_run(results)
        raw = (folder / "results.jsonl").read_bytes()
        assert raw.endswith(b"\n")  # no torn record
        kept = measurements(folder)
        assert kept and kept[0]["status"] == "ok" and kept[0]["result"]["rps"] > 0
        # run.json is whole: as written at the start, or (if its last rewrite still
        # fitted) saying why the run stopped.
        status = json.loads((folder / "run.json").read_text())["status"]
        if status == "running":
            assert "run.json keeps its earlier content" in output
        else:
            assert status == "stopped: results could not be written"
        assert not (folder / "run.json.tmp").exists()
        assert not stacks.leftovers()
        # Space again: --resume finishes the run in the same folder.
        (disk / "filler").unlink()
        again = run_bench(stacks, results, [first, second], "--resume", str(folder))
        assert again.returncode == 0, again.stdout + again.stderr
        assert json.loads((folder / "run.json").read_text())["status"] == "complete"
        assert len(measurements(folder)) == 6  # 2 stacks + the ceiling, 2 cases each
        assert not stacks.leftovers()


@needs_root
def test_results_folder_turns_read_only(stacks, tmp_path):
    first, second = stacks.add("first"), stacks.add("second")
    results = tmp_path / "results"
    mounted = []

    def read_only(_process):
        # The run's folder, from now on, through a read-only bind mount of itself.
        mounted.append(only_run(results))
        subprocess.run(["mount", "--bind", str(mounted[0]), str(mounted[0])], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(mounted[0])], check=True)

    try:
        code, output = bench_with_fault(
            stacks, results, [first, second], ["--connections", "2,4", "--duration", "1"],
            ["✓ [1/"], read_only,
        )  # fmt: skip
    finally:
        for folder in mounted:
            subprocess.run(["umount", "-l", str(folder)], check=False)
    folder = only_run(results)
    assert code == 1, output
    assert "writing results failed: Read-only file system" in output, output
    assert "the run stops here" in output
    kept = measurements(folder)
    assert kept and kept[0]["status"] == "ok"
    assert json.loads((folder / "run.json").read_text())["status"] == "running"
    assert "run.json keeps its earlier content" in output
    assert not stacks.leftovers()


def test_results_folder_not_writable_at_the_start(stacks, tmp_path):
    stack = stacks.add("early")
    results = tmp_path / "results"
    results.mkdir()
    if os.geteuid() == 0:  # root writes through file modes: a read-only mount instead
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,ro", "tmpfs", str(results)],
                       check=True)  # fmt: skip
    else:
        results.chmod(0o555)
    try:
        result = run_bench(stacks, results, [stack], "--duration", "1")
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", "-l", str(results)], check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "writing results failed: " in output and "nothing was built or measured" in output
    assert "Traceback" not in output
    assert not (REPO_ROOT / ".build" / stack / "pgid").exists()  # never started
    assert not stacks.leftovers()


# ------------------------------------------------------------------ provenance


@pytest.mark.skipif(
    shutil.which("go") is None, reason="!!! go NOT INSTALLED: go list not exercised"
)
def test_run_json_records_each_stacks_resolved_dependencies(stacks, tmp_path):
    # A Go module without requirements lists itself; a Python stack whose venv
    # was never built cannot be listed: recorded and shown, and still measured.
    go_stack = stacks.add("gomod", files={"go.mod": "module example.com/{name}\n\ngo 1.22\n"})
    py_stack = stacks.add("novenv", files={"requirements.txt": "# a lock file with nothing in it\n"})
    result = run_bench(stacks, tmp_path / "results", [go_stack, py_stack], "--duration", "1")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    folder = only_run(tmp_path / "results")
    run = json.loads((folder / "run.json").read_text())
    go_entry, py_entry = run["stacks"][go_stack], run["stacks"][py_stack]
    assert go_entry["framework"] == "http.server"  # next to the manifest's provenance
    assert go_entry["dependencies"] == [f"example.com/{go_stack}"]
    assert "dependencies_error" not in go_entry
    assert py_entry["dependencies"] is None
    assert py_entry["dependencies_error"].startswith("no venv at ")
    assert f"[{py_stack}] dependencies failed: no venv at" in output
    assert_measured(folder, go_stack)
    assert_measured(folder, py_stack)
    assert not stacks.leftovers()


def test_run_json_lists_a_declared_dependencies_command_run_in_the_stacks_environment(
    stacks, tmp_path
):
    # The command sees BUILD_DIR as the build and run commands do; a failing one
    # leaves its own words in run.json, not only its exit code.
    listed = stacks.add("declared", dependencies='echo "built-in==$(basename "$BUILD_DIR")"')
    broken = stacks.add("broken", dependencies="echo 'no crate index here' >&2; exit 1")
    result = run_bench(stacks, tmp_path / "results", [listed, broken], "--duration", "1")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    run = json.loads((only_run(tmp_path / "results") / "run.json").read_text())
    assert run["stacks"][listed]["dependencies"] == [f"built-in=={listed}"]
    assert run["stacks"][broken]["dependencies"] is None
    assert "exited 1" in run["stacks"][broken]["dependencies_error"]
    assert "no crate index here" in run["stacks"][broken]["dependencies_error"]
    assert not stacks.leftovers()


@pytest.mark.skipif(
    shutil.which("go") is None, reason="!!! go NOT INSTALLED: go list not exercised"
)
def test_a_tls_front_records_the_stacks_own_dependencies(stacks, tmp_path):
    from loadtest.core.errors import StepError
    from loadtest.core.manifest import load
    from loadtest.runners.front import FrontedRunner
    from loadtest.runners.native import NativeRunner

    name = stacks.add("fronted", files={"go.mod": "module example.com/{name}\n\ngo 1.22\n"})
    manifest = load(name, stacks.root)
    fronted = FrontedRunner(NativeRunner(), "nginx", tmp_path / "front")
    assert fronted.dependencies(manifest) == [f"example.com/{name}"]

    class Bare:  # a runner that cannot list them
        name = "bare"

    with pytest.raises(StepError, match="the bare runner does not list them"):
        FrontedRunner(Bare(), "nginx", tmp_path / "front").dependencies(manifest)
