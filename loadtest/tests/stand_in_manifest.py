"""A manifest for a throw-away Python stand-in stack, as the runner tests build them."""

from __future__ import annotations

from pathlib import Path

from loadtest.core.manifest import Manifest
from loadtest.host.ports import free_port


def python_stand_in(
    folder: Path,
    run: str,
    build: str = "true",
    display_name: str | None = None,
    requires: tuple[str, ...] = ("python3",),
    kind: str = "threads",
) -> Manifest:
    """`folder` holds the stand-in's files; `run` starts it (a manifest's native run)."""
    return Manifest(
        name=folder.name,
        folder=folder,
        display_name=display_name or folder.name,
        language="Python",
        framework="http.server",
        framework_version="3.11",
        runtime="CPython",
        runtime_version="3.11",
        port=free_port(),
        concurrency={"kind": kind, "default_workers": "cpus", "workers": "1"},
        native={
            "requires": list(requires),
            "apt": [],
            "version": "python3 -V",
            "build": build,
            "run": run,
        },
        docker={"dockerfile": "Dockerfile"},
        tuning=[],
    )
