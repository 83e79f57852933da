"""`make lock-stack SERVER=x`: a Python stack's lock files, compiled again with pip-tools
under the interpreter the stack runs on (packages/python_lock.py)."""

from __future__ import annotations

import argparse
import sys

from loadtest.core import manifest as manifests
from loadtest.packages.python_lock import LockError, interpreter, lock, pip_compile


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("lock-stack", help="re-lock a Python stack's requirements files")
    parser.add_argument("server")
    parser.add_argument("--pip-tools", required=True, help="the pip-tools version (Makefile)")
    parser.add_argument("--upgrade", action="store_true",
                        help="newest versions the .in files allow, not the pins kept")  # fmt: skip
    parser.set_defaults(func=cmd_lock_stack)


def cmd_lock_stack(args: argparse.Namespace) -> int:
    manifest = manifests.load(args.server)
    try:
        python = interpreter(manifest)
        if python.note:
            print(f"lock-stack: {python.note}")
        print(f"lock-stack: {manifest.name} runs on {python.path}; pip-tools {args.pip_tools}")
        written = lock(manifest.folder, pip_compile(python, args.pip_tools), args.upgrade)
    except LockError as exc:
        print(f"lock-stack: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(f"lock-stack: wrote {path.relative_to(manifests.REPO_ROOT)}")
    return 0
