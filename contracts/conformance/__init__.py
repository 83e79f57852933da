"""Conformance checker for the serverlab HTTP contract (v1).

Standard library only, Python >= 3.9. Command line:

    python3 -m contracts.conformance --base-url http://127.0.0.1:8101 --display-name "Go gin"

Python API:

    from contracts.conformance import run_checks
    report = run_checks("http://127.0.0.1:8101", "Go gin")   # same dict as --json
"""

from .runner import ServerUnreachable, UsageError, run_checks

__all__ = ["run_checks", "ServerUnreachable", "UsageError"]
