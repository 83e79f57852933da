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
import os
import re
import shutil
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from loadtest.core.errors import StepError
from loadtest.host import testhost_parts as parts
from loadtest.host.testhost_parts import DEFAULT_STATE_DIR, TestHost

DELAY = re.compile(r"(\d+(?:\.\d+)?)(us|ms|s)")
LOSS = re.compile(r"(\d+(?:\.\d+)?)%")
MAX_DELAY_SECONDS = 10.0


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
        names = [host["name"] for host in parts.read_state(state_dir).get("hosts", [])]
        return cls(_describe(names, state_dir), state_dir) if names else None

    def __getitem__(self, name: str) -> TestHost:
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError(f"no test host {name!r} (hosts: {', '.join(h.name for h in self.hosts)})")

    def env(self) -> dict[str, str]:
        """os.environ with the run's `ssh` wrapper first on PATH: what the Docker CLI needs."""
        wrapper_dir = self.state_dir / parts.CLIENT_DIR / "bin"
        return {**os.environ, "PATH": f"{wrapper_dir}{os.pathsep}{os.environ.get('PATH', '')}"}

    def set_conditions(self, delay: str | None = None, loss: str | None = None) -> None:
        """Apply (or, with neither, clear) delay and loss on every host's egress."""
        validate_delay(delay)
        validate_loss(loss)
        if (delay or loss) and (problem := netem_problem()):
            raise StepError("testhosts", "netem", problem)
        for host in self.hosts:
            parts.apply_netem(host, delay, loss)
        parts.write_state(
            self.state_dir, {**parts.read_state(self.state_dir), "delay": delay, "loss": loss}
        )

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
        parts.write_state(
            state_dir, {"bridge": parts.BRIDGE, "hosts": made, "delay": delay, "loss": loss}
        )
        parts.run(["ip", "link", "add", parts.BRIDGE, "type", "bridge"])
        bridge_address = f"{parts.BRIDGE_ADDRESS}/{parts.NETWORK.prefixlen}"
        parts.run(["ip", "addr", "add", bridge_address, "dev", parts.BRIDGE])
        parts.run(["ip", "link", "set", parts.BRIDGE, "up"])
        for host in self.hosts:
            parts.make_namespace(host)
            if delay or loss:
                parts.apply_netem(host, delay, loss)
        (state_dir / parts.CLIENT_DIR).mkdir(mode=0o700)
        parts.keygen(state_dir / parts.CLIENT_DIR / "id_ed25519")
        for host in self.hosts:
            parts.host_dir(state_dir, host.name).mkdir(mode=0o700)
            parts.keygen(parts.host_dir(state_dir, host.name) / "ssh_host_ed25519_key")
        parts.write_ssh_files(state_dir, self.hosts)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation dir
        for host in self.hosts:  # all start at once, then each is waited for
            parts.start_sshd(state_dir, host)
            parts.start_dockerd(state_dir, host)
        for host in self.hosts:
            parts.wait_sshd(state_dir, host)
            parts.wait_dockerd(state_dir, host)
            parts.make_context(host)
        parts.check_contexts(self.hosts, self.env())


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
    missing += [path for path in (parts.SSHD, parts.SSH) if not os.access(path, os.X_OK)]
    if missing:
        packages = "iproute2, util-linux, openssh-server, openssh-client, docker.io"
        return f"missing for test hosts: {', '.join(missing)} (Debian: {packages})"
    return None


def netem_problem() -> str | None:
    """Why delay and loss cannot be applied here (no tc, a kernel without netem), or None."""
    if not shutil.which("tc") or not shutil.which("unshare"):
        return "tc or unshare missing (Debian: iproute2, util-linux)"
    # A throw-away network namespace that vanishes with the command: nothing to clean.
    probe = parts.capture(["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", "netem"])
    if probe.returncode != 0:
        reason = probe.stderr.strip()
        return f"this kernel has no netem qdisc, so no delay or loss here (tc: {reason})"
    return None


def running_namespaces() -> list[str]:
    """`slab-*` namespaces with processes in them: test hosts in use."""
    return [ns for ns in parts.slab_namespaces() if parts.namespace_pids(ns)]


def down(state_dir: Path = DEFAULT_STATE_DIR) -> None:
    """Remove test hosts and everything they left; safe to repeat, and when nothing exists.

    Also sweeps the `slab-*` namespaces and links and the `serverlab-*`
    contexts on 198.18.7.x that a crashed run left. Every step is tried; a
    StepError at the end lists those that failed (the state folder is then
    kept, so that a second `down` can finish).
    """
    state_dir = Path(state_dir).resolve()
    names = [host["name"] for host in parts.read_state(state_dir).get("hosts", [])]
    if not names and state_dir.is_dir():  # a crash before state.json was written
        names = [p.name.removeprefix("host-") for p in state_dir.glob("host-*")]
    problems: list[str] = []
    # Containers first, through their engine: they and their shims go the clean way.
    for name in names:
        if parts.daemon_pid(parts.host_dir(state_dir, name) / "dockerd.pid", "dockerd"):
            problems += parts.remove_containers(parts.host_dir(state_dir, name) / "docker.sock")
    daemons = [
        parts.daemon_pid(parts.host_dir(state_dir, name) / f"{command}.pid", command)
        for name in names
        for command in ("dockerd", "sshd")
    ]
    problems += parts.stop([pid for pid in daemons if pid], parts.STOP_TIMEOUT)
    # What a daemon killed by SIGKILL leaves in its namespace (sessions, containerd,
    # shims) and the shims' children (containers with a network namespace of their own).
    leftovers = parts.with_descendants(
        {p for ns in parts.slab_namespaces() for p in parts.namespace_pids(ns)}
    )
    problems += parts.stop(sorted(leftovers), 5.0, first_signal=signal.SIGKILL)
    problems += parts.remove_contexts()
    for namespace in parts.slab_namespaces():
        parts.run(["ip", "netns", "delete", namespace], problems)
    for link in parts.slab_links():  # the bridge, and veth ends their namespace did not take along
        if (
            parts.capture(["ip", "link", "delete", link]).returncode != 0
            and link in parts.slab_links()
        ):
            problems.append(f"ip link delete {link} failed")
    problems += parts.unmount_under(state_dir)
    # Their sshd gone, the shared connections have ended: only the sockets' folder is left.
    shutil.rmtree(parts.control_dir(state_dir), ignore_errors=True)
    if state_dir.exists() and not problems:
        shutil.rmtree(state_dir)
    if problems:
        raise StepError("testhosts", "down", "; ".join(problems))


def status(state_dir: Path = DEFAULT_STATE_DIR) -> str:
    """One line per host: address, context, namespace and daemons; or that there is none."""
    if (hosts := TestHosts.load(state_dir)) is None:
        return f"no test hosts; leftovers: {parts.slab_namespaces() + parts.slab_links() or 'none'}"
    state, namespaces = parts.read_state(hosts.state_dir), parts.slab_namespaces()
    wrapper_dir = hosts.env()["PATH"].split(os.pathsep)[0]
    lines = [f"delay {state.get('delay')}, loss {state.get('loss')}; PATH={wrapper_dir}:$PATH"]
    for host in hosts.hosts:
        folder = parts.host_dir(hosts.state_dir, host.name)
        running = [c for c in ("sshd", "dockerd") if parts.daemon_pid(folder / f"{c}.pid", c)]
        namespace = host.namespace if host.namespace in namespaces else "no namespace"
        lines.append(f"{host.name:10} {host.address:12} {host.context:20} {namespace:16} {running}")
    return "\n".join(lines)


def _describe(names: list[str], state_dir: Path) -> tuple[TestHost, ...]:
    hosts = []
    for index, name in enumerate(names, 1):
        address = str(parts.NETWORK.network_address + index)
        socket_path = parts.host_dir(state_dir, name) / "docker.sock"
        ssh_url = f"ssh://{parts.SSH_USER}@{address}"
        hosts.append(TestHost(name, address, parts.CONTEXT_PREFIX + name, ssh_url, socket_path))
    return tuple(hosts)


def _check_request(names: list[str], delay: str | None, loss: str | None, state_dir: Path) -> None:
    """Everything that can be refused before anything is made."""
    validate_delay(delay)
    validate_loss(loss)
    if not names or len(set(names)) != len(names):
        raise ValueError(f"host names: none, or repeated: {names}")
    if len(names) > parts.NETWORK.num_addresses - 3:  # the network's, the broadcast, the bridge's
        raise ValueError(f"at most {parts.NETWORK.num_addresses - 3} hosts")
    for name in names:
        if not parts.HOST_NAME.fullmatch(name) or len(name) > parts.MAX_HOST_NAME:
            limit = (f"at most {parts.MAX_HOST_NAME} characters: {parts.NAME_PREFIX}<name> names "
                     "an interface")  # fmt: skip
            raise ValueError(f"host name {name!r}: a-z, 0-9 and '-', a letter first, {limit}")
        longest = parts.host_dir(state_dir, name) / parts.LONGEST_SOCKET
        if len(os.fsencode(longest)) > parts.UNIX_PATH_MAX:
            limit = f"over {parts.UNIX_PATH_MAX} bytes, the limit of a Unix socket's path"
            raise ValueError(f"state folder {state_dir}: the socket {longest} would be {limit}")
    # A blank would need quoting in ssh_config, sshd_config, DOCKER_HOST and the wrapper.
    if re.search(r"\s", str(state_dir)):
        raise ValueError(f"state folder {str(state_dir)!r}: a path without blanks, please")
    if problem := prerequisite_problem() or ((delay or loss) and netem_problem()):
        raise StepError("testhosts", "prerequisites", problem)


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
