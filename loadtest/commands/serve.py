"""`make serve SERVER=x [FRONT=nginx|apache|self]`: one stack natively in the foreground."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading

from loadtest.core import manifest as manifests
from loadtest.core.errors import StepError
from loadtest.core.knobs import FRONTS
from loadtest.core.runner import Limits
from loadtest.host.tls import self_signed
from loadtest.runners import front
from loadtest.runners.native import NativeRunner


def register(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="run one stack in the foreground")
    serve.add_argument("server")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--workers", type=int)
    serve.add_argument(
        "--front",
        default="none",
        help=f"TLS before the stack: {', '.join(FRONTS)} (self: the stack's own TLS)",
    )
    serve.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    """Build, then replace this process with the stack's server (Ctrl-C stops it)."""
    manifest = manifests.load(args.server)
    runner = NativeRunner()
    reason = runner.unavailable_reason(manifest)
    if reason:
        raise StepError(manifest.name, "prerequisites", reason)
    if args.front == front.SELF:
        refusal = front.refusal(args.front, [manifest])
        if refusal:
            print(f"serve: {refusal}", file=sys.stderr)
            return 2
        # The stack serves HTTPS itself, exactly as a tls = true stack is served.
        manifest = front.SelfTlsRunner.served(manifest)
    elif args.front != "none":
        return serve_fronted(runner, manifest, args)
    runner.build(manifest)
    env = manifests.stack_env(manifest)
    env.update(PORT=str(manifest.port), HOST=args.host)
    if args.workers:
        env["WORKERS"] = str(args.workers)
    scheme = "http"
    if manifest.tls:
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
