"""The native runner against small real servers written for these tests.

Each test stack is a throw-away folder with a manifest whose `run` starts a
standard-library HTTP server (optionally broken on purpose), so build,
readiness, pinning, limits and stop are exercised for real.
"""

from __future__ import annotations

import os
import shutil
import socket
import textwrap
from pathlib import Path

import pytest

from loadtest.core.errors import StepError
from loadtest.core.runner import Limits
from loadtest.host.ports import PORTS_VARIABLE
from loadtest.runners.lifecycle import running
from loadtest.runners.native import NativeRunner
from loadtest.tests.stand_in_manifest import server_py_stand_in

pytestmark = pytest.mark.e2e

SERVER = textwrap.dedent(
    """
    import http.server, os, signal, sys, time
    mode = sys.argv[1]
    if mode == "crash":
        print("cannot open the calendar", flush=True)
        sys.exit(3)
    if mode == "slow":
        time.sleep(60)
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    worker = os.fork() if mode in ("forking", "orphaning") else None
    if worker == 0:  # the worker idles until signalled
        while True:
            signal.pause()
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"ok"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *args):
            pass
    server = http.server.HTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler)
    def stop(*_):
        if worker and mode == "forking":
            os.kill(worker, signal.SIGTERM)  # a good supervisor stops its workers
        sys.exit(1 if mode == "unclean" else 0)  # unclean: a stop that fails
    if mode != "stubborn":
        signal.signal(signal.SIGTERM, stop)
    server.serve_forever()
    """
)



@pytest.fixture
def make_stack(tmp_path):
    made = []

    def make(mode="ok", build="cp server.py \"$BUILD_DIR/server.py\"", requires=("python3",)):
        manifest = server_py_stand_in(
            tmp_path,
            "test",
            SERVER,
            f'exec python3 "$BUILD_DIR/server.py" {mode}',
            build=build,
            requires=requires,
            kind="processes",
        )
        made.append(manifest)
        return manifest

    yield make
    for manifest in made:
        shutil.rmtree(manifest.build_dir, ignore_errors=True)


@pytest.fixture
def built_stack(make_stack):
    """make_stack's stand-in, built by the native runner: (the runner, the manifest)."""

    def build(mode="ok"):
        runner, stack = NativeRunner(), make_stack(mode)
        runner.build(stack)
        return runner, stack

    return build


def test_build_runs_once_until_the_source_changes(make_stack):
    runner, stack = NativeRunner(), make_stack()
    assert runner.build(stack) is True
    assert runner.build(stack) is False
    (stack.folder / "server.py").write_text(SERVER + "\n# changed\n")
    assert runner.build(stack) is True


def test_failed_build_names_stack_step_and_output(make_stack):
    stack = make_stack(build="echo 'missing go.sum entry' >&2; exit 7")
    with pytest.raises(StepError) as caught:
        NativeRunner().build(stack)
    assert caught.value.stack == stack.name and caught.value.step == "build"
    assert "exit code 7" in str(caught.value)
    assert "missing go.sum entry" in caught.value.output


def test_missing_toolchain_is_a_reason_not_an_error(make_stack):
    stack = make_stack(requires=("python3", "no-such-compiler-xyz"))
    assert NativeRunner().unavailable_reason(stack) == "toolchain not found: no-such-compiler-xyz"


def test_start_ready_pin_and_clean_stop_of_every_process(built_stack):
    runner, stack = built_stack("forking")
    server = runner.start(stack, Limits(cpus=(0,)))
    try:
        server.wait_ready(20)
        pids = server.pids()
        assert len(pids) == 2, "the forked worker belongs to the server's process group"
        for pid in pids:
            status = Path(f"/proc/{pid}/status").read_text()
            assert "Cpus_allowed_list:\t0\n" in status, "taskset pins every process"
        assert server.stop() in (0, 143, -15)
        assert not server.is_alive() and server.pids() == []
    finally:
        server.kill()


def test_worker_left_behind_after_the_parent_exits_is_reported(built_stack):
    runner, stack = built_stack("orphaning")
    with runner.start(stack, Limits()) as server:
        server.wait_ready(20)
        with pytest.raises(StepError, match="left processes running after exit"):
            server.stop()
        assert server.pids() == [], "the runner still cleans up what the stack left"


def test_an_unclean_stop_judged_in_the_block_is_not_judged_again_on_the_way_out(built_stack):
    # A test that judges the stop itself (and may tolerate a known unclean one)
    # must not see the way out of `running` raise the same error again.
    runner, stack = built_stack("unclean")
    with running(runner, stack, say=lambda text: None) as up:
        with pytest.raises(StepError, match="exit code 1 after SIGTERM"):
            up.server.stop()
        assert up.server.stop() == 1, "judged once"
    assert not up.server.is_alive() and up.server.pids() == []


def test_crash_before_ready_shows_the_stack_output(built_stack):
    runner, stack = built_stack("crash")
    with pytest.raises(StepError) as caught, runner.start(stack, Limits()) as server:
        server.wait_ready(20)
    assert caught.value.step == "start" and "exited with code 3" in str(caught.value)
    assert "cannot open the calendar" in caught.value.output


def test_never_ready_gives_up_after_the_timeout(built_stack):
    runner, stack = built_stack("slow")
    with pytest.raises(StepError) as caught, runner.start(stack, Limits()) as server:
        server.wait_ready(1.5)
    assert caught.value.step == "wait-ready"
    assert not server.is_alive(), "a stack that never got ready is killed"


def test_port_already_in_use_is_refused_clearly(built_stack, monkeypatch):
    monkeypatch.delenv(PORTS_VARIABLE, raising=False)  # the manifest's own port, taken
    runner, stack = built_stack()
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", stack.port))
        blocker.listen()
        with pytest.raises(StepError, match=f"port {stack.port} is already in use"):
            runner.start(stack, Limits())


def test_server_ignoring_sigterm_is_an_unclean_stop(built_stack):
    runner, stack = built_stack("stubborn")
    with runner.start(stack, Limits()) as server:
        server.wait_ready(20)
        with pytest.raises(StepError, match="did not exit within 1 s of SIGTERM"):
            server.stop(timeout=1)
        assert not server.is_alive()


def cgroup_v1_writable() -> bool:
    return os.geteuid() == 0 and os.access("/sys/fs/cgroup/cpu", os.W_OK)


@pytest.mark.skipif(not cgroup_v1_writable(), reason="needs root and cgroup v1 (this host kind)")
def test_cpu_quota_and_memory_limit_land_in_the_servers_cgroup(built_stack):
    runner, stack = built_stack()
    with runner.start(stack, Limits(cpu_quota=0.5, memory=256 * 1024**2)) as server:
        server.wait_ready(20)
        groups = dict(
            line.split(":", 2)[1:] for line in Path(f"/proc/{server.pids()[0]}/cgroup").read_text().splitlines()
        )
        cpu_dir = Path("/sys/fs/cgroup/cpu") / groups["cpu"].lstrip("/")
        mem_dir = Path("/sys/fs/cgroup/memory") / groups["memory"].lstrip("/")
        assert (cpu_dir / "cpu.cfs_quota_us").read_text().strip() == "50000"
        assert (mem_dir / "memory.limit_in_bytes").read_text().strip() == str(256 * 1024**2)
        server.stop()
