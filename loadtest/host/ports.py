"""Ports on 127.0.0.1: is one taken, and which one is free."""

from __future__ import annotations

import os
import socket

# "free": every stack instance takes any free port instead of its manifest's,
# so that several instances of one stack can run side by side (the test suite
# on both cores). Unset, the manifest's port, as a user expects.
PORTS_VARIABLE = "SERVERLAB_PORTS"


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def free_port() -> int:
    """A TCP port nothing listens on right now (for runs on a shared machine)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ports_are_free() -> bool:
    """Whether every instance takes a free port (PORTS_VARIABLE)."""
    return os.environ.get(PORTS_VARIABLE) == "free"


def port_or_free(preferred: int) -> int:
    """`preferred` when nothing listens there, else any free port (a shared machine).
    With PORTS_VARIABLE=free, a free port at once: two instances started together
    would both find `preferred` unused and both bind it."""
    return free_port() if ports_are_free() or port_in_use(preferred) else preferred


def instance_port(manifest_port: int) -> int:
    """The port a stack instance listens on: its manifest's, or a free one (PORTS_VARIABLE)."""
    return free_port() if ports_are_free() else manifest_port
