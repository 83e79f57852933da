"""Command line of the harness: `python -m loadtest <command>`.

The Makefile is the documented interface; it only forwards its variables
here. Each subcommand lives in its own module and registers itself below.
"""

from __future__ import annotations

import argparse
import contextlib
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
    for m in manifests.load_all(manifests.stack_ids()):  # variants too (name@variant)
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
    from . import front
    from .check import check_all
    from .runner import RunnerUnavailable, choose_runner, get_runner

    # Native unless RUNNER says otherwise: the contributor's fast loop needs no images.
    try:
        if args.runner is None:
            chosen, reason = "native", "the default of check; RUNNER=docker or auto for containers"
        else:
            chosen, reason = choose_runner(args.runner)
    except RunnerUnavailable as exc:
        print(f"check: {exc}", file=sys.stderr)
        return 2
    print(f"runner: {chosen} — {reason}")
    if args.servers:
        stacks = manifests.load_all(stack_list(args.servers))
    else:
        # Every stack and every [[variant]] (a stock config must pass too); behind
        # a FRONT only the plain-HTTP api stacks, the ones a front can serve.
        stacks = manifests.load_all(manifests.stack_ids())
        if args.front not in ("", "none"):
            stacks = [m for m in stacks if m.contract == "api" and not m.tls]
    refusal = front.refusal(args.front, stacks)
    if refusal:
        print(f"check: {refusal}", file=sys.stderr)
        return 2
    runner = front.wrap(get_runner(chosen), args.front, front.DEFAULT_FOLDER)
    if args.front != "none":
        print(f"every stack behind a TLS + HTTP/2 front: {front.version(args.front)}")
    return check_all(runner, stacks)


def cmd_serve(args: argparse.Namespace) -> int:
    """Build, then replace this process with the stack's server (Ctrl-C stops it)."""
    from .native import NativeRunner, base_env

    manifest = manifests.load(args.server)
    runner = NativeRunner()
    reason = runner.unavailable_reason(manifest)
    if reason:
        raise StepError(manifest.name, "prerequisites", reason)
    if args.front != "none":
        return serve_fronted(runner, manifest, args)
    runner.build(manifest)
    env = base_env(manifest)
    env.update(PORT=str(manifest.port), HOST=args.host)
    if args.workers:
        env["WORKERS"] = str(args.workers)
    scheme = "http"
    if manifest.tls:
        from .tls import self_signed

        tls = self_signed(runner.tls_folder)
        env.update(tls.env())
        scheme = "https"
        print(f"Self-signed certificate for clients to trust: {tls.cert}")
    print(
        f"Serving {manifest.display_name} on {scheme}://{args.host}:{manifest.port}/ (Ctrl-C stops)"
    )
    sys.stdout.flush()
    os.chdir(manifest.folder)
    os.execvpe("bash", ["bash", "-c", manifest.native["run"]], env)


def serve_fronted(runner, manifest, args: argparse.Namespace) -> int:
    """The stack on its port behind a TLS front on a free port, until Ctrl-C."""
    import signal
    import threading

    from . import front
    from .runner import Limits

    refusal = front.refusal(args.front, [manifest])
    if refusal:
        print(f"serve: {refusal}", file=sys.stderr)
        return 2
    runner.build(manifest)
    fronted = front.FrontedRunner(runner, args.front, front.DEFAULT_FOLDER)
    limits = Limits(cpus=None, extra_env={"WORKERS": str(args.workers)} if args.workers else {})
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    server = fronted.start(manifest, limits)
    try:
        server.wait_ready()
        print(
            f"Serving {manifest.display_name} behind {args.front} on {server.base_url}/ "
            f"(HTTP/2 and HTTP/1.1; trust {server.tls_cert}); the stack itself on "
            f"{server.stack.base_url}/ (Ctrl-C stops both)"
        )
        sys.stdout.flush()
        while not stopping.wait(1.0):
            if not server.is_alive():
                print(server.output_tail(), file=sys.stderr)
                return 1
    except KeyboardInterrupt:
        pass
    finally:
        with contextlib.suppress(StepError):
            server.stop()
        server.kill()
    return 0


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="python -m loadtest", description=__doc__.splitlines()[0])
    sub = root.add_subparsers(dest="command", required=True)

    sub.add_parser("list", help="list stacks and whether they can run here").set_defaults(
        func=cmd_list
    )
    sub.add_parser("validate", help="validate every server.toml").set_defaults(func=cmd_validate)

    check = sub.add_parser("check", help="build, start and verify stacks")
    check.add_argument("--servers", help="comma-separated stack names (default: all)")
    check.add_argument(
        "--runner",
        choices=("native", "docker", "auto"),
        help="native (default), docker, or auto (Docker when a daemon answers)",
    )
    check.add_argument(
        "--front", default="none", help="TLS reverse proxy before each stack: none, nginx, apache"
    )
    check.set_defaults(func=cmd_check)

    serve = sub.add_parser("serve", help="run one stack in the foreground")
    serve.add_argument("server")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--workers", type=int)
    serve.add_argument(
        "--front", default="none", help="TLS reverse proxy before the stack: none, nginx, apache"
    )
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
