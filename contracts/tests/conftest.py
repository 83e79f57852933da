from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from contracts.tests.reference_server import ReferenceServer  # noqa: E402

DISPLAY_NAME = "Reference Server"


@pytest.fixture(scope="module")
def reference():
    """A correct reference server, shared by the tests of one module."""
    with ReferenceServer(DISPLAY_NAME) as server:
        yield server
