"""Command line of the harness: `python -m loadtest <command>`.

The Makefile is the documented interface; it only forwards its variables
here. Each command is one module of loadtest/commands/ with a `register`.
"""

from __future__ import annotations

import argparse
import sys

from loadtest.commands import (
    aa,
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
from loadtest.core.errors import StepError
from loadtest.core.manifest import ManifestError
from loadtest.core.mirror import OfflineChoiceError
from loadtest.host import registries

COMMANDS = (
    stacks, check, serve, bench, report, compare, aa, scaffold, labs, hostile, soak, docker,
    mirror, remote,
)  # fmt: skip


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="python -m loadtest", description=__doc__.splitlines()[0])
    sub = root.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # Each package family from its registry or the mirror (OFFLINE, else a probe of
    # each registry, printed): the package managers this process starts follow it.
    try:
        registries.apply_offline_env(report=registries.say)
    except OfflineChoiceError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except (StepError, ManifestError) as exc:
        print(exc.explain() if isinstance(exc, StepError) else str(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
