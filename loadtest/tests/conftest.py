"""Fixtures shared by the harness's test modules."""

from __future__ import annotations

import pytest

from loadtest.tests.stand_in_manifest import Stacks


@pytest.fixture
def stacks(tmp_path):
    """A servers folder of stand-in stacks for a bench in a child process; whatever they
    leave running, and their build folders, are removed afterwards."""
    made = Stacks(tmp_path / "servers")
    yield made
    made.clean()
