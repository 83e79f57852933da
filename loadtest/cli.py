"""Command line of the harness: `python -m loadtest <command>`.

The Makefile is the documented interface; it only forwards its variables
here. Each subcommand lives in its own module and registers itself below.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import manifest as manifests
from .errors import StepError


def stack_list(text: str | None) -> list[str] | None:
    """'gin,sanic' -> ['gin', 'sanic']; empty or None -> every stack."""
    names = [n.strip() for n in (text or "").replace(" ", ",").split(",") if n.strip()]
    return names or None


def cmd_list(args: argparse.Namespace) -> int:
    from .native import NativeRunner

    runner = NativeRunner()
    rows = [("stack", "language", "framework", "runtime", "port", "native")]
    for m in manifests.load_all():
        reason = runner.unavailable_reason(m)
        rows.append(
            (
                m.name,
                m.language,
                f"{m.framework} {m.framework_version}",
                f"{m.runtime} {m.runtime_version}",
                str(m.port),
                reason or "ok",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    problems = manifests.validate_all()
    for problem in problems:
        print(f"manifest: {problem}")
    print(f"{len(manifests.stack_names())} manifest(s), {len(problems)} problem(s)")
    return 1 if problems else 0


def cmd_check(args: argparse.Namespace) -> int:
    from .check import check_all
    from .runner import get_runner

    return check_all(get_runner(args.runner), manifests.load_all(stack_list(args.servers)))


def cmd_serve(args: argparse.Namespace) -> int:
    """Build, then replace this process with the stack's server (Ctrl-C stops it)."""
    from .native import NativeRunner, base_env

    manifest = manifests.load(args.server)
    runner = NativeRunner()
    reason = runner.unavailable_reason(manifest)
    if reason:
        raise StepError(manifest.name, "prerequisites", reason)
    runner.build(manifest)
    env = base_env(manifest)
    env.update(PORT=str(manifest.port), HOST=args.host)
    if args.workers:
        env["WORKERS"] = str(args.workers)
    print(f"Serving {manifest.display_name} on http://{args.host}:{manifest.port}/ (Ctrl-C stops)")
    sys.stdout.flush()
    os.chdir(manifest.folder)
    os.execvpe("bash", ["bash", "-c", manifest.native["run"]], env)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="python -m loadtest", description=__doc__.splitlines()[0])
    sub = root.add_subparsers(dest="command", required=True)

    sub.add_parser("list", help="list stacks and whether they can run here").set_defaults(
        func=cmd_list
    )
    sub.add_parser("validate", help="validate every server.toml").set_defaults(func=cmd_validate)

    check = sub.add_parser("check", help="build, start and verify stacks")
    check.add_argument("--servers", help="comma-separated stack names (default: all)")
    check.add_argument("--runner", default="native", choices=("native", "docker"))
    check.set_defaults(func=cmd_check)

    serve = sub.add_parser("serve", help="run one stack in the foreground")
    serve.add_argument("server")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--workers", type=int)
    serve.set_defaults(func=cmd_serve)

    for register in extra_commands():
        register(sub)
    return root


def extra_commands():
    """Subcommands that live in their own modules (bench, report, ...)."""
    registered = []
    for module in ("bench", "report", "scaffold", "labs", "hostile", "soak"):
        try:
            imported = __import__(f"{__package__}.{module}", fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.{module}":
                raise
            continue
        if hasattr(imported, "register"):
            registered.append(imported.register)
    return registered


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (StepError, manifests.ManifestError) as exc:
        print(exc.explain() if isinstance(exc, StepError) else str(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
