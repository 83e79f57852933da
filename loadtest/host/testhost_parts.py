"""The parts of a test host (loadtest/host/testhosts.py): its namespace and link, netem
on its egress, its keys and SSH files, its sshd and dockerd started, waited for and
stopped, its Docker context; and the state folder that records them.

Every part here is one step that `testhosts.up` takes and `testhosts.down` undoes.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from loadtest.core.errors import StepError
from loadtest.core.manifest import REPO_ROOT
from loadtest.host.process import tail

DEFAULT_STATE_DIR = REPO_ROOT / ".build" / "testhosts"
STATE_FILE = "state.json"
CLIENT_DIR = "ssh-client"  # the client key, known_hosts, ssh_config and bin/ssh
BRIDGE = "slab-br0"
ADDRESS_PREFIX = "198.18.7."
NETWORK = ipaddress.ip_network(ADDRESS_PREFIX + "0/24")
BRIDGE_ADDRESS = ADDRESS_PREFIX + "254"
NAME_PREFIX = "slab-"  # the namespaces and the root-side links
CONTEXT_PREFIX = "serverlab-"
SSH_USER = "root"
SSHD = "/usr/sbin/sshd"  # Debian's; /usr/sbin is often not on PATH
SSH = "/usr/bin/ssh"
IFNAMSIZ = 15  # the kernel's limit for an interface name, without the NUL
MAX_HOST_NAME = IFNAMSIZ - len(NAME_PREFIX)
HOST_NAME = re.compile(r"(?!br0\Z)[a-z][a-z0-9-]*")  # slab-br0 is the bridge
# sun_path holds 108 bytes with the NUL; the longest socket under a host's folder is
# the one dockerd's own containerd makes in the exec-root.
UNIX_PATH_MAX = 107
LONGEST_SOCKET = "exec/containerd/containerd.sock.ttrpc"
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0  # dockerd's own shutdown stops containerd first
COMMAND_TIMEOUT = 30.0
CONTAINER_REMOVE_TIMEOUT = 60.0  # `docker rm -f` gives each container 10 s


@dataclass(frozen=True)
class TestHost:
    """One test host as callers use it: where it is and how to reach its engine."""

    __test__ = False  # a harness class, not a pytest test class despite its name

    name: str
    address: str  # 198.18.7.<i>, eth0 in the namespace
    context: str  # the Docker context, over SSH
    ssh_url: str  # ssh://root@198.18.7.<i>
    docker_socket: Path  # the engine's socket, also reachable from the root namespace

    @property
    def namespace(self) -> str:
        return NAME_PREFIX + self.name


# The state folder: state.json, a folder per host and one for the SSH client side.


def host_dir(state_dir: Path, name: str) -> Path:
    return state_dir / f"host-{name}"


def read_state(state_dir: Path) -> dict:
    try:
        return json.loads((state_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}


def write_state(state_dir: Path, state: dict) -> None:
    (state_dir / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")


# Network: the namespaces, netem.


def make_namespace(host: TestHost) -> None:
    link = namespace = host.namespace
    run(["ip", "netns", "add", namespace])
    run(["ip", "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", namespace])
    run(["ip", "link", "set", link, "master", BRIDGE])
    run(["ip", "link", "set", link, "up"])
    inside = ["ip", "-n", namespace]
    run([*inside, "addr", "add", f"{host.address}/{NETWORK.prefixlen}", "dev", "eth0"])
    run([*inside, "link", "set", "eth0", "up"])
    run([*inside, "link", "set", "lo", "up"])


def apply_netem(host: TestHost, delay: str | None, loss: str | None) -> None:
    tc = ["tc", "-n", host.namespace, "qdisc"]
    if not delay and not loss:
        capture([*tc, "del", "dev", "eth0", "root"])  # "no such qdisc" when none was set: fine
        return
    netem = (["delay", delay] if delay else []) + (["loss", loss] if loss else [])
    result = capture([*tc, "replace", "dev", "eth0", "root", "netem", *netem])
    if result.returncode != 0:
        raise StepError(host.name, "netem", f"tc failed: {result.stderr.strip()}")


def slab_namespaces() -> list[str]:
    # Lines look like "slab-server (id: 3)" or "slab-server".
    lines = capture(["ip", "netns", "list"]).stdout.splitlines()
    return [line.split()[0] for line in lines if line.startswith(NAME_PREFIX)]


def slab_links() -> list[str]:
    # Lines look like "12: slab-server@if2: <BROADCAST,...>": the name ends at "@" or ":".
    lines = capture(["ip", "-o", "link", "show"]).stdout.splitlines()
    names = (re.split(r"[@:]", line.split(": ", 2)[1])[0] for line in lines if ": " in line)
    return [name for name in names if name.startswith(NAME_PREFIX)]


def namespace_pids(namespace: str) -> list[int]:
    return [int(pid) for pid in capture(["ip", "netns", "pids", namespace]).stdout.split()]


# SSH: keys, each sshd's config, the client's config, known_hosts and wrapper.


def keygen(key: Path) -> None:
    run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "serverlab test host", "-f", str(key)]
    )


def write_ssh_files(state_dir: Path, hosts: tuple[TestHost, ...]) -> None:
    client, control = state_dir / CLIENT_DIR, control_dir(state_dir)
    (client / "authorized_keys").write_text((client / "id_ed25519.pub").read_text())
    known = []
    for host in hosts:
        public = (host_dir(state_dir, host.name) / "ssh_host_ed25519_key.pub").read_text()
        known.append(f"{host.address} {' '.join(public.split()[:2])}\n")
        (host_dir(state_dir, host.name) / "sshd_config").write_text(sshd_config(state_dir, host))
    (client / "known_hosts").write_text("".join(known))
    # Only the test hosts' addresses: the wrapper is first on PATH for every ssh a
    # caller runs with env(), and any other host keeps ssh's defaults (-F skips ~/.ssh/config).
    options = [
        f"User {SSH_USER}", f"IdentityFile {client / 'id_ed25519'}",
        "IdentitiesOnly yes", f"UserKnownHostsFile {client / 'known_hosts'}",
        "GlobalKnownHostsFile /dev/null", "StrictHostKeyChecking yes", "BatchMode yes",
        "ConnectTimeout 10", "LogLevel ERROR",
        # Every docker command over a context is one ssh: the first to a host opens a
        # connection that later ones share for 30 s after the last, where each paid the
        # handshake (1.1-1.4 s under load; about 0.3 s through the shared connection).
        "ControlMaster auto", f"ControlPath {control}/%C", "ControlPersist 30",
    ]  # fmt: skip
    control.mkdir(mode=0o700, exist_ok=True)
    (client / "ssh_config").write_text(f"Host {ADDRESS_PREFIX}*\n" + lines(options, "    "))
    wrapper = client / "bin" / "ssh"
    wrapper.parent.mkdir(mode=0o755)
    wrapper.write_text(f'#!/bin/sh\nexec {SSH} -F {shlex.quote(str(client / "ssh_config"))} "$@"\n')
    wrapper.chmod(0o755)


def control_dir(state_dir: Path) -> Path:
    """Where the client's shared SSH connections listen, one socket per test host.
    In the temporary folder: a socket's path must stay under 108 bytes, and ssh adds
    a 40-character name and a temporary suffix to it."""
    digest = hashlib.sha1(str(state_dir).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"slab-ssh-{digest}"


def sshd_config(state_dir: Path, host: TestHost) -> str:
    folder = host_dir(state_dir, host.name)
    authorized = state_dir / CLIENT_DIR / "authorized_keys"
    # StrictModes checks every folder above authorized_keys; ours are root's and 0700,
    # so only a group- or world-writable parent (a state folder under /tmp) needs it off.
    parents = (authorized.parent, *authorized.parent.parents)
    strict = all(p.stat().st_uid == 0 and not p.stat().st_mode & 0o022 for p in parents)
    return lines([
        f"ListenAddress {host.address}", "Port 22",
        f"HostKey {folder / 'ssh_host_ed25519_key'}",
        f"PidFile {folder / 'sshd.pid'}",
        f"AuthorizedKeysFile {authorized}", "AuthenticationMethods publickey",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "PermitRootLogin prohibit-password",
        "UsePAM yes",  # Debian's default: with PAM, a root whose password is locked may use a key
        f"StrictModes {'yes' if strict else 'no'}",
        f"SetEnv DOCKER_HOST=unix://{host.docker_socket}",
        "MaxStartups 64",  # parallel docker commands of a run each open a connection
        "MaxSessions 64",  # or share one (ControlMaster): a session each
        "UseDNS no", "PrintMotd no", "X11Forwarding no", "LogLevel VERBOSE",
    ])  # fmt: skip


def lines(options: list[str], indent: str = "") -> str:
    return "".join(f"{indent}{option}\n" for option in options)


# Daemons: started detached (setsid --fork: their parent is init, not this process,
# so a Ctrl-C of the caller does not reach them and `down` stops them in order), in
# the host's network namespace only (nsenter --net: see the module's docstring).


def start_detached(host: TestHost, command: list[str], log: Path) -> None:
    in_namespace = ["setsid", "--fork", "nsenter", f"--net=/run/netns/{host.namespace}"]
    with log.open("ab") as out:
        subprocess.run(
            [*in_namespace, *command], stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, check=True, timeout=COMMAND_TIMEOUT,
        )  # fmt: skip


def start_sshd(state_dir: Path, host: TestHost) -> None:
    folder = host_dir(state_dir, host.name)
    config = folder / "sshd_config"
    check = capture([SSHD, "-t", "-f", str(config)])
    if check.returncode != 0:
        raise StepError(host.name, "sshd", f"sshd -t refused {config}", check.stderr)
    command = [SSHD, "-D", "-f", str(config), "-E", str(folder / "sshd.log")]
    start_detached(host, command, folder / "sshd.out")


def start_dockerd(state_dir: Path, host: TestHost) -> None:
    folder = host_dir(state_dir, host.name)
    # Its own (empty) config file: the machine's /etc/docker/daemon.json may set hosts
    # or a data-root that would clash with the flags below.
    (folder / "daemon.json").write_text("{}\n")
    command = [
        "dockerd",
        "--config-file", str(folder / "daemon.json"),
        "--data-root", str(folder / "data"),
        "--exec-root", str(folder / "exec"),
        "--pidfile", str(folder / "dockerd.pid"),
        "-H", f"unix://{host.docker_socket}",
        "--iptables=false", "--bridge=none", "--ip-forward=false", "--ip-masq=false",
    ]  # fmt: skip
    start_detached(host, command, folder / "dockerd.log")


def wait_sshd(state_dir: Path, host: TestHost) -> None:
    def banner() -> bool:
        with contextlib.suppress(OSError):
            with socket.create_connection((host.address, 22), timeout=2) as connection:
                return connection.recv(64).startswith(b"SSH-")
        return False

    folder = host_dir(state_dir, host.name)
    what = f"an SSH banner on {host.address}:22"
    wait(host, "sshd", what, banner, lambda: tail(folder / "sshd.log") + tail(folder / "sshd.out"))


def wait_dockerd(state_dir: Path, host: TestHost) -> None:
    info = ["docker", "-H", f"unix://{host.docker_socket}", "info", "--format", "{{.ID}}"]
    log = host_dir(state_dir, host.name) / "dockerd.log"
    what = f"an answer on {host.docker_socket}"
    wait(host, "dockerd", what, lambda: capture(info).returncode == 0, lambda: tail(log))


def wait(host: TestHost, step: str, what: str, ready: Callable[[], bool], log: Callable) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.05)
    raise StepError(host.name, step, f"no {what} within {READY_TIMEOUT:.0f} s", log())


def daemon_pid(pid_file: Path, command: str) -> int | None:
    """The live process a pid file names, if it still is `command` (pids get reused)."""
    try:
        pid = int(pid_file.read_text().split()[0])
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except (OSError, ValueError, IndexError):
        return None
    return pid if comm == command and alive(pid) else None


def stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command's name: state, parent pid, ...; [] when gone."""
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2 :].split()
    return []


def alive(pid: int) -> bool:
    """Running and not a zombie (a zombie nobody has reaped yet is dead all the same)."""
    return stat_fields(pid)[:1] not in ([], ["Z"], ["X"])


def with_descendants(pids: set[int]) -> set[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(ValueError, IndexError):  # not a process, or gone
            parents[int(entry.name)] = int(stat_fields(int(entry.name))[1])
    while children := {pid for pid, parent in parents.items() if parent in pids} - pids:
        pids = pids | children
    return pids


def stop(pids: list[int], timeout: float, first_signal: int = signal.SIGTERM) -> list[str]:
    """Signal all at once, wait for all, SIGKILL what is left; says what would not die."""
    for each_signal, wait in ((first_signal, timeout), (signal.SIGKILL, 5.0)):
        for pid in filter(alive, pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, each_signal)
        deadline = time.monotonic() + wait
        while any(map(alive, pids)) and time.monotonic() < deadline:
            time.sleep(0.05)
    return [f"process {pid} survived SIGKILL" for pid in pids if alive(pid)]


def remove_containers(docker_socket: Path) -> list[str]:
    docker = ["docker", "-H", f"unix://{docker_socket}"]
    if ids := capture([*docker, "ps", "-aq"]).stdout.split():
        try:
            remove = [*docker, "rm", "-f", *ids]
            subprocess.run(remove, capture_output=True, timeout=CONTAINER_REMOVE_TIMEOUT)
        except subprocess.TimeoutExpired:
            return [f"docker rm -f on {docker_socket} took over {CONTAINER_REMOVE_TIMEOUT:.0f} s"]
    return []


# Docker contexts, in the user's Docker config (DOCKER_CONFIG or ~/.docker).


def make_context(host: TestHost) -> None:
    capture(["docker", "context", "rm", "-f", host.context])  # a leftover is replaced
    description = f"serverlab test host {host.name} (network namespace {host.namespace})"
    run(["docker", "context", "create", host.context, "--description", description,
          "--docker", f"host={host.ssh_url}"])  # fmt: skip


def check_contexts(hosts: tuple[TestHost, ...], env: dict[str, str]) -> None:
    """Each engine answers through its context, over SSH: the path callers will use."""
    version = ["version", "--format", "{{.Server.Version}}"]
    checks = [
        (host, subprocess.Popen(["docker", "--context", host.context, *version], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        for host in hosts
    ]  # fmt: skip
    for host, check in checks:
        output = check.communicate(timeout=READY_TIMEOUT)[0]
        if check.returncode != 0:
            message = f"docker --context {host.context} version failed"
            raise StepError(host.name, "docker over ssh", message, output)


def remove_contexts() -> list[str]:
    """Every serverlab-* context on a test host's address: this run's or a crashed one's."""
    listing = capture(["docker", "context", "ls", "--format", "{{json .}}"])
    if listing.returncode != 0:
        return [f"docker context ls failed: {listing.stderr.strip()}"]
    problems: list[str] = []
    for context in map(json.loads, listing.stdout.splitlines()):
        ours = context.get("DockerEndpoint", "").startswith(f"ssh://{SSH_USER}@{ADDRESS_PREFIX}")
        if ours and context["Name"].startswith(CONTEXT_PREFIX):
            run(["docker", "context", "rm", "-f", context["Name"]], problems)
    return problems


def unmount_under(state_dir: Path) -> list[str]:
    """Unmount what dockerd left under the state folder (its netns file, overlays), deepest first."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        # Field 5 is the mount point, with space, tab, newline and backslash as octal escapes.
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), line.split()[4])
        if point.startswith(f"{state_dir}/"):
            points.append(point)
    problems: list[str] = []
    for point in sorted(points, key=len, reverse=True):
        if capture(["umount", point]).returncode != 0:
            run(["umount", "--lazy", point], problems)
    return problems


def capture(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)


def run(command: list[str], problems: list[str] | None = None) -> None:
    """Run `command`; a failure raises, or, given `problems` (down tries every step), is added."""
    result = capture(command)
    if result.returncode != 0:
        message = f"{shlex.join(command)}: {result.stderr.strip()}"
        if problems is None:
            raise StepError("testhosts", command[0], message)
        problems.append(message)
