"""`make check`: build, start, verify and stop each stack, then summarise."""

from __future__ import annotations

import argparse
import sys

from loadtest.core import manifest as manifests
from loadtest.core.knobs import FRONTS
from loadtest.core.runner import RunnerUnavailable
from loadtest.runners import front
from loadtest.runners.choose import choose_runner, docker_problem, get_runner
from loadtest.runners.conformance import check_all


def register(sub: argparse._SubParsersAction) -> None:
    check = sub.add_parser("check", help="build, start and verify stacks")
    check.add_argument("--servers", help="comma-separated stack names (default: all)")
    check.add_argument(
        "--runner",
        choices=("native", "docker", "auto"),
        help="native (default), docker, or auto (Docker when a daemon answers)",
    )
    check.add_argument(
        "--front",
        default="none",
        help=f"TLS before each stack: {', '.join(FRONTS)} (self: the stack's own TLS)",
    )
    check.add_argument(
        "--server-host",
        default="",
        help="RUNNER=docker: the stacks run on this Docker engine (a context or ssh://user@host)",
    )
    check.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="stacks checked side by side (default 1; the stacks of one Maven reactor "
        "or .NET solution always one after the other)",
    )
    check.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    # Native unless RUNNER says otherwise: the contributor's fast loop needs no images.
    try:
        if args.runner is None:
            chosen, reason = "native", "the default of check; RUNNER=docker or auto for containers"
        else:
            chosen, reason = choose_runner(args.runner, probe=lambda: docker_problem(named(args)))
    except RunnerUnavailable as exc:
        print(f"check: {exc}", file=sys.stderr)
        return 2
    print(f"runner: {chosen} — {reason}")
    if args.servers:
        stacks = manifests.load_all(manifests.stack_list(args.servers))
    else:
        # Every stack and every [[variant]] (a stock config must pass too); behind
        # a FRONT only the plain-HTTP api stacks, the ones a front can serve; with
        # FRONT=self the stacks that can serve TLS themselves ([self_tls]), once each
        # (their https variant already does).
        stacks = manifests.load_all(manifests.stack_ids())
        if args.front == front.SELF:
            stacks = [m for m in stacks if front.terminator(m) is not None and not m.tls]
        elif args.front not in ("", "none"):
            stacks = [m for m in stacks if m.contract == "api" and not m.tls]
    refusal = front.refusal(args.front, stacks)
    if refusal:
        print(f"check: {refusal}", file=sys.stderr)
        return 2
    if args.server_host and (chosen != "docker" or args.front != "none"):
        print("check: SERVER_HOST needs RUNNER=docker and no FRONT (docs/remote.md)",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        runner = front.wrap(get_runner(chosen, args.server_host), args.front, front.DEFAULT_FOLDER)
    except ValueError as exc:
        print(f"check: SERVER_HOST: {exc}", file=sys.stderr)
        return 2
    if args.front != "none":
        print(front.describe(args.front, stacks))
    if args.jobs < 1:
        print("check: --jobs must be 1 or more", file=sys.stderr)
        return 2
    return check_all(runner, stacks, args.jobs)


def named(args: argparse.Namespace) -> list[manifests.Manifest] | None:
    """The stacks SERVERS names, for the Docker runner's registry check: only their
    package families count (None: every stack's). A name that does not load counts
    for nothing here; loading the stacks afterwards reports it."""
    if not args.servers:
        return None
    try:
        return manifests.load_all(manifests.stack_list(args.servers))
    except manifests.ManifestError:
        return []
