"""Test hosts on this machine: network namespaces with their own sshd and dockerd.

A server stack runs on one Docker engine and the load tools on others,
reached through Docker contexts over SSH as with real machines, all on this
machine and on addresses of its own (198.18.0.0/15 is reserved for network
benchmark tests, RFC 2544, and nothing routes it elsewhere):

- a bridge `slab-br0` in the root namespace, 198.18.7.254/24;
- per host (index i from 1): a namespace `slab-<name>` and a veth pair, the
  root end `slab-<name>` on the bridge, the other `eth0` with
  198.18.7.<i>/24; no default route, so nothing inside reaches any address
  but the other test hosts and the root namespace's 198.18.7.254;
- per host: an sshd on 198.18.7.<i>:22 whose sessions get DOCKER_HOST (the
  `docker system dial-stdio` that the Docker CLI runs over SSH reaches this
  host's engine), a dockerd with its own data-root, exec-root and socket,
  and a Docker context `serverlab-<name>` (ssh://root@198.18.7.<i>);
- for the client side, a key, a known_hosts and an ssh_config of the run,
  used through a wrapper `ssh` that `env()` puts first on PATH (the user's
  ~/.ssh is never read or written).

All files live under one state folder (default `.build/testhosts/`, with
`state.json`); `down` removes everything, also after a crash of the process
that made it. One set of test hosts runs on a machine at a time.

`delay` and `loss` are netem on each host's `eth0`, its egress: a round trip
between two test hosts takes twice the delay (20ms: an RTT of 40 ms or more).

    with TestHosts.up(["server", "client1"], delay="5ms") as hosts:
        subprocess.run(["docker", "--context", hosts["server"].context, "info"],
                       env=hosts.env(), check=True)

By hand: `python -m loadtest.host.testhosts up server client1 | down | status`.

Facts met on the way (Debian bookworm, docker.io 20.10):

- `ip netns exec` remounts /sys in a mount namespace of its own, hiding
  /sys/fs/cgroup: dockerd fails with "Devices cgroup isn't mounted". The
  daemons start under `nsenter --net=/run/netns/slab-<name>` instead, which
  joins the network namespace only.
- Some kernels have no netem ("Specified qdisc kind is unknown"): `delay`
  and `loss` are refused then, before anything is made (`netem_problem()`).
- A cleanly stopped dockerd leaves an nsfs mount at <exec-root>/netns/default;
  the veth ends vanish a moment after `ip netns delete` (asynchronously).
- All engines report the same Name (the UTS namespace is shared) and, on
  20.10, the same ID (from /etc/docker/key.json); DockerRootDir differs.
- On 2 cores `up` takes about 1 s for 2 hosts and 1.3 s for 3; `down` about
  1.4 s, the dockerds' own shutdown (0.4 s when they were killed before).
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
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
DELAY = re.compile(r"(\d+(?:\.\d+)?)(us|ms|s)")
LOSS = re.compile(r"(\d+(?:\.\d+)?)%")
MAX_DELAY_SECONDS = 10.0
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


@dataclass
class TestHosts:
    """Running test hosts; `with TestHosts.up([...]) as hosts:` tears them down on exit."""

    __test__ = False

    hosts: tuple[TestHost, ...]
    state_dir: Path

    @classmethod
    def up(
        cls, names: list[str], *, delay: str | None = None, loss: str | None = None,
        state_dir: Path = DEFAULT_STATE_DIR,
    ) -> TestHosts:  # fmt: skip
        """Make the hosts `names`; on any failure (Ctrl-C too) remove what was made, then raise."""
        state_dir = Path(state_dir).resolve()
        _check_request(names, delay, loss, state_dir)
        if running := running_namespaces():
            message = f"test hosts run here already ({', '.join(running)}): down them first"
            raise StepError("testhosts", "up", message)
        down(state_dir)  # what a crashed run left
        hosts = cls(_describe(names, state_dir), state_dir)
        try:
            hosts._build(delay, loss)
        except BaseException:
            down(state_dir)
            raise
        return hosts

    @classmethod
    def load(cls, state_dir: Path = DEFAULT_STATE_DIR) -> TestHosts | None:
        """The hosts a state folder describes (made by this or another process), or None."""
        state_dir = Path(state_dir).resolve()
        names = [host["name"] for host in _read_state(state_dir).get("hosts", [])]
        return cls(_describe(names, state_dir), state_dir) if names else None

    def __getitem__(self, name: str) -> TestHost:
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError(f"no test host {name!r} (hosts: {', '.join(h.name for h in self.hosts)})")

    def env(self) -> dict[str, str]:
        """os.environ with the run's `ssh` wrapper first on PATH: what the Docker CLI needs."""
        wrapper_dir = self.state_dir / CLIENT_DIR / "bin"
        return {**os.environ, "PATH": f"{wrapper_dir}{os.pathsep}{os.environ.get('PATH', '')}"}

    def set_conditions(self, delay: str | None = None, loss: str | None = None) -> None:
        """Apply (or, with neither, clear) delay and loss on every host's egress."""
        validate_delay(delay)
        validate_loss(loss)
        if (delay or loss) and (problem := netem_problem()):
            raise StepError("testhosts", "netem", problem)
        for host in self.hosts:
            _apply_netem(host, delay, loss)
        _write_state(self.state_dir, {**_read_state(self.state_dir), "delay": delay, "loss": loss})

    def down(self) -> None:
        down(self.state_dir)

    def __enter__(self) -> TestHosts:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.down()

    def _build(self, delay: str | None, loss: str | None) -> None:
        """Everything `up` makes, each step one that `down` undoes."""
        state_dir = self.state_dir
        state_dir.mkdir(parents=True, exist_ok=True)
        state_dir.chmod(0o700)  # it holds private keys
        made = [{**vars(h), "docker_socket": str(h.docker_socket), "namespace": h.namespace}
                for h in self.hosts]  # fmt: skip
        _write_state(state_dir, {"bridge": BRIDGE, "hosts": made, "delay": delay, "loss": loss})
        _run(["ip", "link", "add", BRIDGE, "type", "bridge"])
        _run(["ip", "addr", "add", f"{BRIDGE_ADDRESS}/{NETWORK.prefixlen}", "dev", BRIDGE])
        _run(["ip", "link", "set", BRIDGE, "up"])
        for host in self.hosts:
            _make_namespace(host)
            if delay or loss:
                _apply_netem(host, delay, loss)
        (state_dir / CLIENT_DIR).mkdir(mode=0o700)
        _keygen(state_dir / CLIENT_DIR / "id_ed25519")
        for host in self.hosts:
            _host_dir(state_dir, host.name).mkdir(mode=0o700)
            _keygen(_host_dir(state_dir, host.name) / "ssh_host_ed25519_key")
        _write_ssh_files(state_dir, self.hosts)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation dir
        for host in self.hosts:  # all start at once, then each is waited for
            _start_sshd(state_dir, host)
            _start_dockerd(state_dir, host)
        for host in self.hosts:
            _wait_sshd(state_dir, host)
            _wait_dockerd(state_dir, host)
            _make_context(host)
        _check_contexts(self.hosts, self.env())


def validate_delay(delay: str | None) -> None:
    """ValueError unless `delay` is None or netem's form: a number and us, ms or s."""
    if delay is None:
        return
    match = DELAY.fullmatch(str(delay))
    if not match:
        raise ValueError(f"delay {delay!r}: expected a number and a unit, us, ms or s (e.g. 5ms)")
    if float(match[1]) / {"us": 1e6, "ms": 1e3, "s": 1.0}[match[2]] > MAX_DELAY_SECONDS:
        raise ValueError(f"delay {delay!r}: over {MAX_DELAY_SECONDS:g} s, not a network")


def validate_loss(loss: str | None) -> None:
    """ValueError unless `loss` is None or a percentage from 0% to 100% (e.g. 0.5%)."""
    if loss is None:
        return
    match = LOSS.fullmatch(str(loss))
    if not match:
        raise ValueError(f"loss {loss!r}: expected a percentage such as 0.5%")
    if float(match[1]) > 100:
        raise ValueError(f"loss {loss!r}: over 100%")


def prerequisite_problem() -> str | None:
    """Why test hosts cannot be made here (not root, a tool missing), or None."""
    if os.geteuid() != 0:
        return "test hosts need root (network namespaces, a bridge, daemons on port 22)"
    tools = ("ip", "nsenter", "setsid", "ssh-keygen", "dockerd", "docker")
    missing = [tool for tool in tools if not shutil.which(tool)]
    missing += [path for path in (SSHD, SSH) if not os.access(path, os.X_OK)]
    if missing:
        packages = "iproute2, util-linux, openssh-server, openssh-client, docker.io"
        return f"missing for test hosts: {', '.join(missing)} (Debian: {packages})"
    return None


def netem_problem() -> str | None:
    """Why delay and loss cannot be applied here (no tc, a kernel without netem), or None."""
    if not shutil.which("tc") or not shutil.which("unshare"):
        return "tc or unshare missing (Debian: iproute2, util-linux)"
    # A throw-away network namespace that vanishes with the command: nothing to clean.
    probe = _capture(["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", "netem"])
    if probe.returncode != 0:
        reason = probe.stderr.strip()
        return f"this kernel has no netem qdisc, so no delay or loss here (tc: {reason})"
    return None


def running_namespaces() -> list[str]:
    """`slab-*` namespaces with processes in them: test hosts in use."""
    return [ns for ns in _slab_namespaces() if _namespace_pids(ns)]


def down(state_dir: Path = DEFAULT_STATE_DIR) -> None:
    """Remove test hosts and everything they left; safe to repeat, and when nothing exists.

    Also sweeps the `slab-*` namespaces and links and the `serverlab-*`
    contexts on 198.18.7.x that a crashed run left. Every step is tried; a
    StepError at the end lists those that failed (the state folder is then
    kept, so that a second `down` can finish).
    """
    state_dir = Path(state_dir).resolve()
    names = [host["name"] for host in _read_state(state_dir).get("hosts", [])]
    if not names and state_dir.is_dir():  # a crash before state.json was written
        names = [p.name.removeprefix("host-") for p in state_dir.glob("host-*")]
    problems: list[str] = []
    # Containers first, through their engine: they and their shims go the clean way.
    for name in names:
        if _daemon_pid(_host_dir(state_dir, name) / "dockerd.pid", "dockerd"):
            problems += _remove_containers(_host_dir(state_dir, name) / "docker.sock")
    daemons = [
        _daemon_pid(_host_dir(state_dir, name) / f"{command}.pid", command)
        for name in names
        for command in ("dockerd", "sshd")
    ]
    problems += _stop([pid for pid in daemons if pid], STOP_TIMEOUT)
    # What a daemon killed by SIGKILL leaves in its namespace (sessions, containerd,
    # shims) and the shims' children (containers with a network namespace of their own).
    leftovers = _with_descendants({p for ns in _slab_namespaces() for p in _namespace_pids(ns)})
    problems += _stop(sorted(leftovers), 5.0, first_signal=signal.SIGKILL)
    problems += _remove_contexts()
    for namespace in _slab_namespaces():
        _run(["ip", "netns", "delete", namespace], problems)
    for link in _slab_links():  # the bridge, and veth ends their namespace did not take along
        if _capture(["ip", "link", "delete", link]).returncode != 0 and link in _slab_links():
            problems.append(f"ip link delete {link} failed")
    problems += _unmount_under(state_dir)
    if state_dir.exists() and not problems:
        shutil.rmtree(state_dir)
    if problems:
        raise StepError("testhosts", "down", "; ".join(problems))


def status(state_dir: Path = DEFAULT_STATE_DIR) -> str:
    """One line per host: address, context, namespace and daemons; or that there is none."""
    if (hosts := TestHosts.load(state_dir)) is None:
        return f"no test hosts; leftovers: {_slab_namespaces() + _slab_links() or 'none'}"
    state, namespaces = _read_state(hosts.state_dir), _slab_namespaces()
    wrapper_dir = hosts.env()["PATH"].split(os.pathsep)[0]
    lines = [f"delay {state.get('delay')}, loss {state.get('loss')}; PATH={wrapper_dir}:$PATH"]
    for host in hosts.hosts:
        folder = _host_dir(hosts.state_dir, host.name)
        running = [c for c in ("sshd", "dockerd") if _daemon_pid(folder / f"{c}.pid", c)]
        namespace = host.namespace if host.namespace in namespaces else "no namespace"
        lines.append(f"{host.name:10} {host.address:12} {host.context:20} {namespace:16} {running}")
    return "\n".join(lines)


# The state folder: state.json, a folder per host and one for the SSH client side.


def _host_dir(state_dir: Path, name: str) -> Path:
    return state_dir / f"host-{name}"


def _describe(names: list[str], state_dir: Path) -> tuple[TestHost, ...]:
    hosts = []
    for index, name in enumerate(names, 1):
        address = str(NETWORK.network_address + index)
        socket_path = _host_dir(state_dir, name) / "docker.sock"
        ssh_url = f"ssh://{SSH_USER}@{address}"
        hosts.append(TestHost(name, address, CONTEXT_PREFIX + name, ssh_url, socket_path))
    return tuple(hosts)


def _read_state(state_dir: Path) -> dict:
    try:
        return json.loads((state_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}


def _write_state(state_dir: Path, state: dict) -> None:
    (state_dir / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")


def _check_request(names: list[str], delay: str | None, loss: str | None, state_dir: Path) -> None:
    """Everything that can be refused before anything is made."""
    validate_delay(delay)
    validate_loss(loss)
    if not names or len(set(names)) != len(names):
        raise ValueError(f"host names: none, or repeated: {names}")
    if len(names) > NETWORK.num_addresses - 3:  # the network's, the broadcast, the bridge's
        raise ValueError(f"at most {NETWORK.num_addresses - 3} hosts")
    for name in names:
        if not HOST_NAME.fullmatch(name) or len(name) > MAX_HOST_NAME:
            limit = f"at most {MAX_HOST_NAME} characters: {NAME_PREFIX}<name> names an interface"
            raise ValueError(f"host name {name!r}: a-z, 0-9 and '-', a letter first, {limit}")
        longest = _host_dir(state_dir, name) / LONGEST_SOCKET
        if len(os.fsencode(longest)) > UNIX_PATH_MAX:
            limit = f"over {UNIX_PATH_MAX} bytes, the limit of a Unix socket's path"
            raise ValueError(f"state folder {state_dir}: the socket {longest} would be {limit}")
    # A blank would need quoting in ssh_config, sshd_config, DOCKER_HOST and the wrapper.
    if re.search(r"\s", str(state_dir)):
        raise ValueError(f"state folder {str(state_dir)!r}: a path without blanks, please")
    if problem := prerequisite_problem() or ((delay or loss) and netem_problem()):
        raise StepError("testhosts", "prerequisites", problem)


# Network: the namespaces, netem.


def _make_namespace(host: TestHost) -> None:
    link = namespace = host.namespace
    _run(["ip", "netns", "add", namespace])
    _run(["ip", "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", namespace])
    _run(["ip", "link", "set", link, "master", BRIDGE])
    _run(["ip", "link", "set", link, "up"])
    inside = ["ip", "-n", namespace]
    _run([*inside, "addr", "add", f"{host.address}/{NETWORK.prefixlen}", "dev", "eth0"])
    _run([*inside, "link", "set", "eth0", "up"])
    _run([*inside, "link", "set", "lo", "up"])


def _apply_netem(host: TestHost, delay: str | None, loss: str | None) -> None:
    tc = ["tc", "-n", host.namespace, "qdisc"]
    if not delay and not loss:
        _capture([*tc, "del", "dev", "eth0", "root"])  # "no such qdisc" when none was set: fine
        return
    netem = (["delay", delay] if delay else []) + (["loss", loss] if loss else [])
    result = _capture([*tc, "replace", "dev", "eth0", "root", "netem", *netem])
    if result.returncode != 0:
        raise StepError(host.name, "netem", f"tc failed: {result.stderr.strip()}")


def _slab_namespaces() -> list[str]:
    # Lines look like "slab-server (id: 3)" or "slab-server".
    lines = _capture(["ip", "netns", "list"]).stdout.splitlines()
    return [line.split()[0] for line in lines if line.startswith(NAME_PREFIX)]


def _slab_links() -> list[str]:
    # Lines look like "12: slab-server@if2: <BROADCAST,...>": the name ends at "@" or ":".
    lines = _capture(["ip", "-o", "link", "show"]).stdout.splitlines()
    names = (re.split(r"[@:]", line.split(": ", 2)[1])[0] for line in lines if ": " in line)
    return [name for name in names if name.startswith(NAME_PREFIX)]


def _namespace_pids(namespace: str) -> list[int]:
    return [int(pid) for pid in _capture(["ip", "netns", "pids", namespace]).stdout.split()]


# SSH: keys, each sshd's config, the client's config, known_hosts and wrapper.


def _keygen(key: Path) -> None:
    _run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "serverlab test host", "-f", str(key)]
    )


def _write_ssh_files(state_dir: Path, hosts: tuple[TestHost, ...]) -> None:
    client = state_dir / CLIENT_DIR
    (client / "authorized_keys").write_text((client / "id_ed25519.pub").read_text())
    known = []
    for host in hosts:
        public = (_host_dir(state_dir, host.name) / "ssh_host_ed25519_key.pub").read_text()
        known.append(f"{host.address} {' '.join(public.split()[:2])}\n")
        (_host_dir(state_dir, host.name) / "sshd_config").write_text(_sshd_config(state_dir, host))
    (client / "known_hosts").write_text("".join(known))
    # Only the test hosts' addresses: the wrapper is first on PATH for every ssh a
    # caller runs with env(), and any other host keeps ssh's defaults (-F skips ~/.ssh/config).
    options = [
        f"User {SSH_USER}", f"IdentityFile {client / 'id_ed25519'}",
        "IdentitiesOnly yes", f"UserKnownHostsFile {client / 'known_hosts'}",
        "GlobalKnownHostsFile /dev/null", "StrictHostKeyChecking yes", "BatchMode yes",
        "ConnectTimeout 10", "LogLevel ERROR",
    ]  # fmt: skip
    (client / "ssh_config").write_text(f"Host {ADDRESS_PREFIX}*\n" + _lines(options, "    "))
    wrapper = client / "bin" / "ssh"
    wrapper.parent.mkdir(mode=0o755)
    wrapper.write_text(f'#!/bin/sh\nexec {SSH} -F {shlex.quote(str(client / "ssh_config"))} "$@"\n')
    wrapper.chmod(0o755)


def _sshd_config(state_dir: Path, host: TestHost) -> str:
    folder = _host_dir(state_dir, host.name)
    authorized = state_dir / CLIENT_DIR / "authorized_keys"
    # StrictModes checks every folder above authorized_keys; ours are root's and 0700,
    # so only a group- or world-writable parent (a state folder under /tmp) needs it off.
    parents = (authorized.parent, *authorized.parent.parents)
    strict = all(p.stat().st_uid == 0 and not p.stat().st_mode & 0o022 for p in parents)
    return _lines([
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
        "UseDNS no", "PrintMotd no", "X11Forwarding no", "LogLevel VERBOSE",
    ])  # fmt: skip


def _lines(options: list[str], indent: str = "") -> str:
    return "".join(f"{indent}{option}\n" for option in options)


# Daemons: started detached (setsid --fork: their parent is init, not this process,
# so a Ctrl-C of the caller does not reach them and `down` stops them in order), in
# the host's network namespace only (nsenter --net: see the module's docstring).


def _start_detached(host: TestHost, command: list[str], log: Path) -> None:
    in_namespace = ["setsid", "--fork", "nsenter", f"--net=/run/netns/{host.namespace}"]
    with log.open("ab") as out:
        subprocess.run(
            [*in_namespace, *command], stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, check=True, timeout=COMMAND_TIMEOUT,
        )  # fmt: skip


def _start_sshd(state_dir: Path, host: TestHost) -> None:
    folder = _host_dir(state_dir, host.name)
    config = folder / "sshd_config"
    check = _capture([SSHD, "-t", "-f", str(config)])
    if check.returncode != 0:
        raise StepError(host.name, "sshd", f"sshd -t refused {config}", check.stderr)
    command = [SSHD, "-D", "-f", str(config), "-E", str(folder / "sshd.log")]
    _start_detached(host, command, folder / "sshd.out")


def _start_dockerd(state_dir: Path, host: TestHost) -> None:
    folder = _host_dir(state_dir, host.name)
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
    _start_detached(host, command, folder / "dockerd.log")


def _wait_sshd(state_dir: Path, host: TestHost) -> None:
    def banner() -> bool:
        with contextlib.suppress(OSError):
            with socket.create_connection((host.address, 22), timeout=2) as connection:
                return connection.recv(64).startswith(b"SSH-")
        return False

    folder = _host_dir(state_dir, host.name)
    what = f"an SSH banner on {host.address}:22"
    _wait(host, "sshd", what, banner, lambda: tail(folder / "sshd.log") + tail(folder / "sshd.out"))


def _wait_dockerd(state_dir: Path, host: TestHost) -> None:
    info = ["docker", "-H", f"unix://{host.docker_socket}", "info", "--format", "{{.ID}}"]
    log = _host_dir(state_dir, host.name) / "dockerd.log"
    what = f"an answer on {host.docker_socket}"
    _wait(host, "dockerd", what, lambda: _capture(info).returncode == 0, lambda: tail(log))


def _wait(host: TestHost, step: str, what: str, ready: Callable[[], bool], log: Callable) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.05)
    raise StepError(host.name, step, f"no {what} within {READY_TIMEOUT:.0f} s", log())


def _daemon_pid(pid_file: Path, command: str) -> int | None:
    """The live process a pid file names, if it still is `command` (pids get reused)."""
    try:
        pid = int(pid_file.read_text().split()[0])
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except (OSError, ValueError, IndexError):
        return None
    return pid if comm == command and _alive(pid) else None


def _stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command's name: state, parent pid, ...; [] when gone."""
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2 :].split()
    return []


def _alive(pid: int) -> bool:
    """Running and not a zombie (a zombie nobody has reaped yet is dead all the same)."""
    return _stat_fields(pid)[:1] not in ([], ["Z"], ["X"])


def _with_descendants(pids: set[int]) -> set[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(ValueError, IndexError):  # not a process, or gone
            parents[int(entry.name)] = int(_stat_fields(int(entry.name))[1])
    while children := {pid for pid, parent in parents.items() if parent in pids} - pids:
        pids = pids | children
    return pids


def _stop(pids: list[int], timeout: float, first_signal: int = signal.SIGTERM) -> list[str]:
    """Signal all at once, wait for all, SIGKILL what is left; says what would not die."""
    for each_signal, wait in ((first_signal, timeout), (signal.SIGKILL, 5.0)):
        for pid in filter(_alive, pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, each_signal)
        deadline = time.monotonic() + wait
        while any(map(_alive, pids)) and time.monotonic() < deadline:
            time.sleep(0.05)
    return [f"process {pid} survived SIGKILL" for pid in pids if _alive(pid)]


def _remove_containers(docker_socket: Path) -> list[str]:
    docker = ["docker", "-H", f"unix://{docker_socket}"]
    if ids := _capture([*docker, "ps", "-aq"]).stdout.split():
        try:
            remove = [*docker, "rm", "-f", *ids]
            subprocess.run(remove, capture_output=True, timeout=CONTAINER_REMOVE_TIMEOUT)
        except subprocess.TimeoutExpired:
            return [f"docker rm -f on {docker_socket} took over {CONTAINER_REMOVE_TIMEOUT:.0f} s"]
    return []


# Docker contexts, in the user's Docker config (DOCKER_CONFIG or ~/.docker).


def _make_context(host: TestHost) -> None:
    _capture(["docker", "context", "rm", "-f", host.context])  # a leftover is replaced
    description = f"serverlab test host {host.name} (network namespace {host.namespace})"
    _run(["docker", "context", "create", host.context, "--description", description,
          "--docker", f"host={host.ssh_url}"])  # fmt: skip


def _check_contexts(hosts: tuple[TestHost, ...], env: dict[str, str]) -> None:
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


def _remove_contexts() -> list[str]:
    """Every serverlab-* context on a test host's address: this run's or a crashed one's."""
    listing = _capture(["docker", "context", "ls", "--format", "{{json .}}"])
    if listing.returncode != 0:
        return [f"docker context ls failed: {listing.stderr.strip()}"]
    problems: list[str] = []
    for context in map(json.loads, listing.stdout.splitlines()):
        ours = context.get("DockerEndpoint", "").startswith(f"ssh://{SSH_USER}@{ADDRESS_PREFIX}")
        if ours and context["Name"].startswith(CONTEXT_PREFIX):
            _run(["docker", "context", "rm", "-f", context["Name"]], problems)
    return problems


def _unmount_under(state_dir: Path) -> list[str]:
    """Unmount what dockerd left under the state folder (its netns file, overlays), deepest first."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        # Field 5 is the mount point, with space, tab, newline and backslash as octal escapes.
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), line.split()[4])
        if point.startswith(f"{state_dir}/"):
            points.append(point)
    problems: list[str] = []
    for point in sorted(points, key=len, reverse=True):
        if _capture(["umount", point]).returncode != 0:
            _run(["umount", "--lazy", point], problems)
    return problems


def _capture(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)


def _run(command: list[str], problems: list[str] | None = None) -> None:
    """Run `command`; a failure raises, or, given `problems` (down tries every step), is added."""
    result = _capture(command)
    if result.returncode != 0:
        message = f"{shlex.join(command)}: {result.stderr.strip()}"
        if problems is None:
            raise StepError("testhosts", command[0], message)
        problems.append(message)


def main(argv: list[str] | None = None) -> int:
    description = __doc__.splitlines()[0]
    parser = argparse.ArgumentParser(
        prog="python -m loadtest.host.testhosts", description=description
    )
    parser.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR)
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="make the hosts, e.g. server client1 client2")
    up.add_argument("names", nargs="+")
    up.add_argument("--delay", help="on each host's egress, e.g. 5ms (a round trip gets twice)")
    up.add_argument("--loss", help="on each host's egress, e.g. 0.1%%")
    commands.add_parser("down", help="remove them and everything they left")
    commands.add_parser("status", help="what runs")
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            TestHosts.up(args.names, delay=args.delay, loss=args.loss, state_dir=args.state_dir)
        if args.command == "down":
            down(args.state_dir)
        else:
            print(status(args.state_dir))
    except ValueError as error:
        parser.exit(2, f"{parser.prog}: {error}\n")
    except StepError as error:
        parser.exit(1, error.explain() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
