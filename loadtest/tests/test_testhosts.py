"""Test hosts: namespaces with their own sshd and dockerd, reached through Docker contexts over SSH.

Real namespaces, daemons and SSH sessions: skipped where they cannot be made
(not root, a tool missing) or where test hosts already run. The only
addresses used are 198.18.7.x of the hosts made here.
"""

from __future__ import annotations

import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from loadtest.core.errors import StepError
from loadtest.core.manifest import REPO_ROOT
from loadtest.host import locks, testhost_parts, testhosts

pytestmark = pytest.mark.e2e

# Not the default folder, so hosts someone brought up by hand keep their keys.
STATE_DIR = REPO_ROOT / ".build" / "testhosts-pytest"
IMAGE = "serverlab-hostusr:test"
HOST_PYTHON = Path("/usr/bin/python3")  # Debian's, reached in the container through /usr
WEB_PORT = 8080
DELAY = "20ms"


@pytest.fixture(autouse=True)
def one_test_of_these_at_a_time():
    """These tests make test hosts, and look for any left, machine-wide: on two test
    workers, one's hosts would be the other's leftovers (seen: the netem refusal's
    check found the two-host test's namespaces)."""
    with locks.exclusive(STATE_DIR.with_name("testhosts-pytest.lock")):
        yield


def need_test_hosts() -> None:
    if problem := testhosts.prerequisite_problem():
        pytest.skip(problem)
    if running := testhosts.running_namespaces():
        pytest.skip(f"test hosts already run on this machine ({', '.join(running)})")


def test_delay_and_loss_are_checked_before_use():
    for good in (None, "5ms", "0.5ms", "100us", "1s", "0ms"):
        testhosts.validate_delay(good)
    for good in (None, "0.5%", "0%", "100%", "3%"):
        testhosts.validate_loss(good)
    for bad in ("5", "5 ms", "ms", "-5ms", "5mins", "1e3ms", "11s", ""):
        with pytest.raises(ValueError, match="delay"):
            testhosts.validate_delay(bad)
    for bad in ("0.5", "101%", "-1%", "%", "half", ""):
        with pytest.raises(ValueError, match="loss"):
            testhosts.validate_loss(bad)


def test_bad_requests_are_refused_before_anything_is_made(tmp_path):
    """No root needed: these are refused before the prerequisites are even looked at."""
    refusals = {
        "host name": dict(names=["Server"]),
        "10 characters": dict(names=["a-long-name"]),
        "a letter first": dict(names=["br0"]),
        "repeated": dict(names=["a", "a"]),
        "delay": dict(names=["a"], delay="fast"),
        "Unix socket": dict(names=["a"], state_dir=tmp_path / ("d" * 90)),
        "blanks": dict(names=["a"], state_dir=Path("/tmp/with space")),
    }
    for message, request in refusals.items():
        with pytest.raises(ValueError, match=message):
            testhosts.TestHosts.up(**request)
    assert not (tmp_path / ("d" * 90)).exists()


def test_two_hosts_answer_over_ssh_and_reach_each_other():
    need_test_hosts()
    names = ["server", "client1"]
    started = time.monotonic()
    # The hosts must go on any exception: Ctrl-C (raised at the end, on purpose) as
    # well as a failed assertion, which pytest.raises lets through.
    with pytest.raises(KeyboardInterrupt):
        with testhosts.TestHosts.up(names, state_dir=STATE_DIR) as hosts:
            print(f"up of {len(names)} hosts: {time.monotonic() - started:.1f} s")
            server, client = hosts["server"], hosts["client1"]
            check_isolated(hosts)
            check_engines_answer_over_ssh(hosts)
            # Later docker commands share one SSH connection per host (ControlMaster).
            shared = list(testhost_parts.control_dir(STATE_DIR).iterdir())
            assert len(shared) == len(names), shared
            check_container_reachable(hosts, server, client)
            with pytest.raises(StepError, match="already"):
                testhosts.TestHosts.up(["other"], state_dir=STATE_DIR.with_name("unused"))
            started = time.monotonic()
            raise KeyboardInterrupt
    print(f"down: {time.monotonic() - started:.1f} s")
    assert_nothing_left()


def test_down_after_the_process_that_made_the_hosts_is_gone():
    need_test_hosts()
    command = [sys.executable, "-m", "loadtest.host.testhosts", "--state-dir", str(STATE_DIR)]
    try:
        made = subprocess.run([*command, "up", "solo"], capture_output=True, text=True, timeout=120)
        assert made.returncode == 0, made.stderr
        assert "serverlab-solo" in made.stdout
        assert "['sshd', 'dockerd']" in testhosts.status(STATE_DIR)
    finally:
        testhosts.down(STATE_DIR)
    assert_nothing_left()
    testhosts.down(STATE_DIR)  # again, with nothing there
    assert "no test hosts" in testhosts.status(STATE_DIR)


def test_a_delay_counts_twice_in_a_round_trip():
    """netem on each egress: a TCP handshake between two hosts waits for the delay twice."""
    need_test_hosts()
    if problem := testhosts.netem_problem():
        pytest.skip(problem)
    with testhosts.TestHosts.up(["server", "client1"], delay=DELAY, state_dir=STATE_DIR) as hosts:
        server, client = hosts["server"], hosts["client1"]
        delayed = connect_ms(client, server)
        hosts.set_conditions()
        cleared = connect_ms(client, server)
        print(f"TCP connect {client.name} -> {server.name}: {delayed:.1f} ms with {DELAY}")
        print(f"and {cleared:.2f} ms without")
        assert delayed >= 2 * 20 * 0.95
        assert cleared < 20
    assert_nothing_left()


def test_delay_is_refused_on_a_kernel_without_netem():
    need_test_hosts()
    if testhosts.netem_problem() is None:
        pytest.skip("this kernel has netem: the delay is measured in the two-host test")
    with pytest.raises(StepError, match="netem"):
        testhosts.TestHosts.up(["solo"], delay=DELAY, state_dir=STATE_DIR)
    assert_nothing_left()


def check_isolated(hosts: testhosts.TestHosts) -> None:
    """No default route in a namespace: nothing but 198.18.7.0/24 is reachable from it."""
    for host in hosts.hosts:
        routes = run(["ip", "-n", host.namespace, "route", "show"]).stdout.splitlines()
        assert [route.split()[:3] for route in routes] == [["198.18.7.0/24", "dev", "eth0"]]
        assert not run(["ip", "-n", host.namespace, "-6", "route", "show", "default"]).stdout


def check_engines_answer_over_ssh(hosts: testhosts.TestHosts) -> None:
    infos = {}
    for host in hosts.hosts:
        info = run(["docker", "--context", host.context, "info", "--format", "{{json .}}"], hosts)
        infos[host.name] = json.loads(info.stdout)
        assert infos[host.name]["DockerRootDir"].startswith(str(STATE_DIR / f"host-{host.name}"))
        # Through SSH indeed: the host's sshd saw the run's key from the root namespace.
        log = (STATE_DIR / f"host-{host.name}" / "sshd.log").read_text()
        assert "Accepted publickey for root from 198.18.7.254" in log
    first, second = infos.values()
    assert first["DockerRootDir"] != second["DockerRootDir"]


def check_container_reachable(hosts, server, client) -> None:
    """A --network host container on the server listens in its namespace; the client reaches it."""
    if not HOST_PYTHON.exists():
        pytest.fail(f"{HOST_PYTHON} missing: the container's web server is the host's Python")
    docker = ["docker", "--context", server.context]
    run([*docker, "import", "-", IMAGE], hosts, input=host_usr_image())
    serve = [str(HOST_PYTHON), "-m", "http.server", "--bind", server.address, str(WEB_PORT)]
    run([*docker, "run", "-d", "--name", "web", "--network", "host", "-v", "/usr:/usr:ro",
         IMAGE, *serve], hosts)  # fmt: skip
    url = f"http://{server.address}:{WEB_PORT}/"
    fetch = f"import urllib.request; print(urllib.request.urlopen({url!r}, timeout=5).status)"
    deadline = time.monotonic() + 20
    while True:
        answer = run(in_namespace(client, [sys.executable, "-c", fetch]), check=False)
        if answer.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert answer.stdout.strip() == "200", answer.stderr
    listening = f"{server.address}:{WEB_PORT}"
    assert listening in run(in_namespace(server, ["ss", "-ltnH"])).stdout
    assert listening not in run(in_namespace(client, ["ss", "-ltnH"])).stdout


def connect_ms(source, target) -> float:
    """Median TCP connect time from `source`'s namespace to `target`'s sshd."""
    probe = (
        "import socket, sys, time\n"
        "for _ in range(5):\n"
        "    start = time.perf_counter()\n"
        f"    socket.create_connection(({target.address!r}, 22), timeout=5).close()\n"
        "    print((time.perf_counter() - start) * 1000)\n"
    )
    times = run(in_namespace(source, [sys.executable, "-c", probe])).stdout.split()
    return statistics.median(map(float, times))


def host_usr_image() -> bytes:
    """A root file system of symlinks into /usr, which the container mounts from this machine.

    No registry and no base image: `docker import` of this tarball gives an image
    in which the machine's own /usr/bin/python3 runs.
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for folder in ("usr", "tmp", "etc", "proc", "sys", "dev"):
            entry = tarfile.TarInfo(folder)
            entry.type, entry.mode = tarfile.DIRTYPE, 0o1777 if folder == "tmp" else 0o755
            tar.addfile(entry)
        for link in ("bin", "lib", "lib64", "sbin"):
            entry = tarfile.TarInfo(link)
            entry.type, entry.linkname = tarfile.SYMTYPE, f"usr/{link}"
            tar.addfile(entry)
    return buffer.getvalue()


def in_namespace(host, command: list[str]) -> list[str]:
    return ["nsenter", f"--net=/run/netns/{host.namespace}", *command]


def run(command, hosts=None, input: bytes | None = None, check: bool = True):
    env = hosts.env() if hosts is not None else None
    result = subprocess.run(
        command, input=input, capture_output=True, env=env, timeout=60, text=input is None
    )
    if check:
        assert result.returncode == 0, f"{command}: {result.stderr}"
    return result


def assert_nothing_left() -> None:
    assert not [ns for ns in run(["ip", "netns", "list"]).stdout.split() if ns.startswith("slab-")]
    assert "slab-" not in run(["ip", "-o", "link", "show"]).stdout
    contexts = run(["docker", "context", "ls", "--format", "{{.Name}}"]).stdout.split()
    assert not [name for name in contexts if name.startswith("serverlab-")]
    assert not STATE_DIR.exists()
    assert not testhost_parts.control_dir(STATE_DIR).exists()
    assert not daemons_of_the_run()


def daemons_of_the_run() -> list[str]:
    """Live (not zombie) processes whose command line names the state folder."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if str(STATE_DIR) in cmdline and state not in "ZX":
            found.append(f"{entry.name}: {cmdline}")
    return found
