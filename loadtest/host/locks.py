"""One process at a time: an exclusive lock on a file, for work that two
commands (or two test workers) on one machine must not do at once, such as
building the same stack or writing the same certificate."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if absent) for the `with` block.

    The kernel drops the lock when the process ends, so a killed holder never
    leaves it stuck.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
