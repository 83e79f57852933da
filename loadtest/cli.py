"""Command line of the harness: `python -m loadtest <command>`.

The Makefile is the documented interface; it only forwards its variables
here. Each command is one module of loadtest/commands/ with a `register`.
"""

from __future__ import annotations

import argparse
import sys

from loadtest.commands import (
    aa,
    ab,
    bench,
    check,
    compare,
    docker,
    hostile,
    labs,
    lock,
    measurements,
    mirror,
    remote,
    report,
    scaffold,
    serve,
    soak,
    stacks,
    then_and_now,
)
from loadtest.core.errors import StepError
from loadtest.core.manifest import ManifestError
from loadtest.packages import registries
from loadtest.packages.mirror import OfflineChoiceError

COMMANDS = (
    stacks, check, serve, bench, report, compare, then_and_now, measurements, aa, ab, scaffold,
    labs, lock, hostile, soak, docker, mirror, remote,
)  # fmt: skip
# The commands that build stacks or fetch packages: before them, each package family is
# pointed at its registry or at the mirror (OFFLINE, else a probe of each registry,
# printed), and the package managers they start follow it. The others read files or
# drive what is built already, and ask no registry.
FETCHING = (
    stacks.cmd_stack_tests, check.cmd_check, serve.cmd_serve, bench.cmd_bench, aa.cmd_aa,
    ab.cmd_ab, labs.cmd_lab, hostile.cmd_hostile, soak.cmd_soak, docker.cmd_build, docker.cmd_up,
    docker.cmd_lint, docker.cmd_smoke, mirror.cmd_mirror, remote.cmd_remote_smoke,
    lock.cmd_lock_stack,
)  # fmt: skip


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="python -m loadtest", description=__doc__.splitlines()[0])
    sub = root.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.func in FETCHING:
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
