from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from contracts.conformance.runner import DEFAULT_VECTORS  # noqa: E402
from contracts.conformance.vectors import load_inputs  # noqa: E402
from contracts.tests.reference_server import ReferenceServer  # noqa: E402

DISPLAY_NAME = "Reference Server"


def expected_ids() -> list:
    """Every check id a correct server produces, derived from the vector files."""
    inputs = load_inputs(DEFAULT_VECTORS / "inputs.json")
    ids = [
        "hello-status",
        "hello-content-type",
        "hello-body",
        "hello-clock",
        "hello-millis",
        "hello-not-cached",
    ]
    ids += [f"n-valid[{c.raw}]" for c in inputs.n_valid]
    ids += [f"n-hello[{c.raw}]" for c in inputs.n_hello]
    ids += [f"n-invalid[{c.raw}]" for c in inputs.n_invalid]
    ids += ["n-random", "workday-vectors"]
    ids += [f"at-valid[{c.raw}]" for c in inputs.at_valid]
    ids += [f"at-invalid[{c.raw}]" for c in inputs.at_invalid]
    ids += [
        "workday-now",
        "header-content-type",
        "header-content-length",
        "header-no-chunked",
        "header-no-cookie",
        "header-date",
        "header-no-compression",
    ]
    ids += ["not-found[/nope]", "not-found[/workday/]", "not-found[/index.html]"]
    ids += [
        f"method-not-allowed[{m}:{p}]"
        for p in ("/", "/workday")
        for m in ("POST", "PUT", "DELETE", "PATCH")
    ]
    ids += [
        "head[/]",
        "head[/?n=10]",
        "head[/workday]",
        "keep-alive",
        "http10",
        "http10-no-host",
        "connection-close",
        "concurrent",
        "header-date-fresh",
    ]
    return ids


@pytest.fixture(scope="module")
def reference():
    """A correct reference server, shared by the tests of one module."""
    with ReferenceServer(DISPLAY_NAME) as server:
        yield server
