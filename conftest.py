"""Test-run settings shared by every Python test folder (markers: pytest.ini)."""

from __future__ import annotations

from loadtest.core.errors import StepError


def pytest_collection_modifyitems(config, items):
    """Tests marked `long` first, each group in its collected order: with two
    workers, a long test started last would leave one worker waiting for it.
    The workers must take one test at a time (make test passes
    --maxschedchunk 1): given chunks, one worker would queue every long test."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def pytest_exception_interact(node, call, report):
    """A failing step's message names the stack and step; its output (the
    server's or build's own log tail) holds the cause, so the report shows it."""
    error = call.excinfo.value if call.excinfo else None
    if isinstance(error, StepError) and error.output.strip():
        report.sections.append((f"output of {error.stack} ({error.step})", error.output))
