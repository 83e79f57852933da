"""Which port an instance takes: its own, or a free one when several run at once."""

from __future__ import annotations

import socket

from loadtest.host.ports import PORTS_VARIABLE, instance_port, port_or_free


def listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


def test_a_preferred_port_nothing_holds_is_taken_unless_ports_are_free(monkeypatch):
    monkeypatch.delenv(PORTS_VARIABLE, raising=False)
    with listening() as sock:
        port = sock.getsockname()[1]
    assert port_or_free(port) == port
    assert instance_port(port) == port
    # Two instances started together would both find it unused and both bind it.
    monkeypatch.setenv(PORTS_VARIABLE, "free")
    assert port_or_free(port) != port
    assert instance_port(port) != port


def test_a_held_port_is_never_given(monkeypatch):
    monkeypatch.delenv(PORTS_VARIABLE, raising=False)
    with listening() as sock:
        held = sock.getsockname()[1]
        assert port_or_free(held) != held
