"""Command line of the harness: `python -m loadtest <command>`.

The Makefile is the documented interface; it only forwards its variables
here. Each command is one module of loadtest/commands/ with a `register`.
"""

from __future__ import annotations

import argparse
import sys

from loadtest.commands import (
    bench,
    check,
    compare,
    docker,
    hostile,
    labs,
    mirror,
    remote,
    report,
    scaffold,
    serve,
    soak,
    stacks,
)
from loadtest.core import mirror as package_mirror
from loadtest.core.errors import StepError
from loadtest.core.manifest import ManifestError

COMMANDS = (
    stacks, check, serve, bench, report, compare, scaffold, labs, hostile, soak, docker, mirror,
    remote,
)  # fmt: skip


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="python -m loadtest", description=__doc__.splitlines()[0])
    sub = root.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # OFFLINE=1: every package manager this process starts uses the mirror, and only it.
    package_mirror.apply_offline_env()
    try:
        return args.func(args)
    except (StepError, ManifestError) as exc:
        print(exc.explain() if isinstance(exc, StepError) else str(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
