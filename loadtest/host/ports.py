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


def port_or_free(preferred: int) -> int:
    """`preferred` when nothing listens there, else any free port (a shared machine)."""
    return free_port() if port_in_use(preferred) else preferred


def instance_port(manifest_port: int) -> int:
    """The port a stack instance listens on: its manifest's, or a free one (PORTS_VARIABLE)."""
    return free_port() if os.environ.get(PORTS_VARIABLE) == "free" else manifest_port
