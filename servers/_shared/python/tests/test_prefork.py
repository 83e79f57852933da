"""The pre-fork supervisor used by bjoern, meinheld and uvloop, with real processes."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from python_contract_data import PACKAGE_ROOT

pytestmark = pytest.mark.e2e

# A stand-in server: each worker records its pid, then idles until its stop
# signal (SIGINT raises KeyboardInterrupt, as in bjoern). MODE picks a misbehaviour.
WORKER = textwrap.dedent("""
    import os, signal, sys, time
    from serverlab_contract.prefork import EXIT_CANNOT_SERVE, Supervisor

    mode, pids = os.environ["MODE"], os.environ["PIDS"]

    def first_to_claim(path):
        # O_EXCL: of workers that start together, exactly one creates the file.
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return False
        return True

    def serve():
        with open(pids, "a") as out:
            out.write(f"{os.getpid()}\\n")
        if mode == "fail":
            raise RuntimeError("cannot serve")
        if mode == "stubborn":
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        if mode == "crash-once" and first_to_claim(pids + ".crashed"):
            time.sleep(0.5)
            os._exit(5)
        if mode == "cannot-serve" and first_to_claim(pids + ".crashed"):
            time.sleep(0.5)  # past boot_time: only the exit code can stop the server
            print("cannot listen", file=sys.stderr, flush=True)
            os._exit(EXIT_CANNOT_SERVE)
        while True:
            time.sleep(0.05)

    print("ready", flush=True)
    supervisor = Supervisor(
        2, serve, stop_signal=signal.SIGINT, grace=1.0, boot_time=0.3, name="test"
    )
    sys.exit(supervisor.run())
    """)


# Loaded into the supervisor, it holds the process's first wait one second before
# the wait begins: a signal sent in that second runs its C-level handler after
# Python's last check for signals and before a wait that blocks.
FIRST_WAIT_LATE = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

static int waited;

static void hold_the_first_wait(void) {
    if (waited++) return;
    struct timespec left = {1, 0};
    while (nanosleep(&left, &left) != 0) {}
}

pid_t wait(int *status) {
    hold_the_first_wait();
    return ((pid_t (*)(int *))dlsym(RTLD_NEXT, "wait"))(status);
}

pid_t waitpid(pid_t pid, int *status, int options) {
    hold_the_first_wait();
    return ((pid_t (*)(pid_t, int *, int))dlsym(RTLD_NEXT, "waitpid"))(pid, status, options);
}
"""


@pytest.fixture(scope="module")
def first_wait_late(tmp_path_factory):
    """A library for LD_PRELOAD that makes the supervisor's first wait one second late."""
    compiler = shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler (cc) to build the library that delays the first wait")
    folder = tmp_path_factory.mktemp("first-wait-late")
    (folder / "late.c").write_text(FIRST_WAIT_LATE)
    library = folder / "late.so"
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-o", str(library), str(folder / "late.c"), "-ldl"],
        check=True,
    )
    return library


def start(tmp_path, mode, **extra_env):
    pids = tmp_path / "pids"
    env = dict(os.environ, MODE=mode, PIDS=str(pids), PYTHONPATH=str(PACKAGE_ROOT), **extra_env)
    process = subprocess.Popen(
        [sys.executable, "-c", WORKER],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout.readline() == "ready\n"
    return process, pids


def worker_pids(pids, count, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = pids.read_text().split() if pids.exists() else []
        if len(found) >= count:
            return [int(pid) for pid in found]
        time.sleep(0.02)
    pytest.fail(f"expected {count} worker pids, got {found}")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead too; its parent will reap it.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def group_members(pgid):
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry))
    return members


@pytest.fixture
def cleanup():
    started = []
    yield started
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_stop_signal_stops_every_worker(tmp_path, cleanup, signum):
    process, pids = start(tmp_path, "normal")
    cleanup.append(process)
    workers = worker_pids(pids, 2)
    assert all(alive(pid) for pid in workers)
    process.send_signal(signum)
    assert process.wait(5) == 0
    assert group_members(process.pid) == []


def test_workers_that_ignore_the_stop_signal_are_killed_and_the_stop_fails(tmp_path, cleanup):
    process, pids = start(tmp_path, "stubborn")
    cleanup.append(process)
    worker_pids(pids, 2)
    time.sleep(0.1)  # let the workers install SIG_IGN
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert process.wait(5) == 1  # not a clean stop: `make check` says so
    assert 0.9 <= time.monotonic() - started < 4
    assert "still busy after 1 s" in process.stderr.read()
    assert group_members(process.pid) == []


def test_a_stop_signal_just_before_the_wait_is_not_lost(tmp_path, cleanup, first_wait_late):
    process, pids = start(tmp_path, "normal", LD_PRELOAD=str(first_wait_late))
    cleanup.append(process)
    worker_pids(pids, 2)  # well inside the second the first wait is held
    process.send_signal(signal.SIGTERM)
    assert process.wait(5) == 0
    assert group_members(process.pid) == []


def test_a_worker_that_fails_at_start_stops_the_server(tmp_path, cleanup):
    process, _ = start(tmp_path, "fail")
    cleanup.append(process)
    assert process.wait(5) == 1
    error = process.stderr.read()
    assert "cannot serve" in error and "failed at start-up" in error
    assert group_members(process.pid) == []


def test_a_worker_that_dies_later_is_replaced(tmp_path, cleanup):
    process, pids = start(tmp_path, "crash-once")
    cleanup.append(process)
    first, second, replacement = worker_pids(pids, 3)
    assert not alive(first) or not alive(second)
    assert alive(replacement)
    process.send_signal(signal.SIGTERM)
    assert process.wait(5) == 0
    assert "exited with code 5" in process.stderr.read()


def test_a_worker_that_cannot_serve_stops_the_server_with_its_code(tmp_path, cleanup):
    process, pids = start(tmp_path, "cannot-serve")
    cleanup.append(process)
    assert len(worker_pids(pids, 2)) == 2
    assert process.wait(5) == 3  # EXIT_CANNOT_SERVE, not restarted
    error = process.stderr.read()
    assert "cannot listen" in error and "a worker cannot serve; stopping" in error
    assert len(pids.read_text().split()) == 2
    assert group_members(process.pid) == []
