"""Small helpers for the stacks' own tests that start the real server.

Stack tests (servers/<name>/tests) run with the tooling venv and start the
stack through `loadtest.native.running_stack`; these helpers keep the
socket plumbing in one place.
"""

from __future__ import annotations

import http.client
import json
from .manifest import REPO_ROOT
from .ports import free_port  # noqa: F401  (re-exported for stack tests)

VECTORS_DIR = REPO_ROOT / "contracts" / "vectors"
N_ERROR = b"n must be an integer between 1 and 100"
AT_ERROR = b"at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]"


def vectors(name: str) -> dict:
    """contracts/vectors/<name>.json, e.g. vectors("workday")."""
    return json.loads((VECTORS_DIR / f"{name}.json").read_text())


def get(conn: http.client.HTTPConnection, target: str, method: str = "GET"):
    """One request on a kept-alive connection; returns (response, body)."""
    conn.request(method, target)
    response = conn.getresponse()
    return response, response.read()
