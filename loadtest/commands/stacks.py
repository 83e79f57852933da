"""`make list` and `make validate`: the stacks, and their manifests checked."""

from __future__ import annotations

import argparse

from loadtest.core import manifest as manifests
from loadtest.runners.native import NativeRunner


def register(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("list", help="list stacks and whether they can run here").set_defaults(
        func=cmd_list
    )
    sub.add_parser("validate", help="validate every server.toml").set_defaults(func=cmd_validate)


def cmd_list(args: argparse.Namespace) -> int:
    runner = NativeRunner()
    rows = [("stack", "language", "framework", "runtime (image)", "runtime here", "port", "native")]
    for m in manifests.load_all(manifests.stack_ids()):  # variants too (name@variant)
        reason = runner.unavailable_reason(m)
        rows.append(
            (
                m.name,
                m.language,
                f"{m.framework} {m.framework_version}",
                f"{m.runtime} {m.runtime_version}",
                native_runtime(runner, m) if reason is None else "-",
                str(m.port),
                reason or "ok",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return 0


def native_runtime(runner: NativeRunner, manifest: manifests.Manifest) -> str:
    """What the stack runs on natively here: its version command's answer.

    A stack whose runtime lives in its build (a Python venv) says so until built.
    """
    version = runner.versions(manifest)["runtime_native"]
    return "(not built yet)" if version == "unknown" else version


def cmd_validate(args: argparse.Namespace) -> int:
    problems = manifests.validate_all()
    for problem in problems:
        print(f"manifest: {problem}")
    print(f"{len(manifests.stack_names())} manifest(s), {len(problems)} problem(s)")
    return 1 if problems else 0
