"""Small helpers for the stacks' own tests that start the real server.

Stack tests (servers/<name>/tests) run with the tooling venv and start the
stack through `loadtest.native.running_stack`; these helpers keep the
socket plumbing in one place.
"""

from __future__ import annotations

import http.client
import json
import socket

from .manifest import REPO_ROOT

VECTORS_DIR = REPO_ROOT / "contracts" / "vectors"
N_ERROR = b"n must be an integer between 1 and 100"
AT_ERROR = b"at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def vectors(name: str) -> dict:
    """contracts/vectors/<name>.json, e.g. vectors("workday")."""
    return json.loads((VECTORS_DIR / f"{name}.json").read_text())


def get(conn: http.client.HTTPConnection, target: str, method: str = "GET"):
    """One request on a kept-alive connection; returns (response, body)."""
    conn.request(method, target)
    response = conn.getresponse()
    return response, response.read()
