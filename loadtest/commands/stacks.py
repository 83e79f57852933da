"""`make list`, `make validate` and the stack-tests stage of `make test`."""

from __future__ import annotations

import argparse
import json
import subprocess
import time

from loadtest.core import manifest as manifests
from loadtest.core.errors import StepError
from loadtest.core.families import own_tests
from loadtest.host.process import tail
from loadtest.runners.native import NativeRunner

STACK_TESTS_TIMEOUT_S = 900
# What the last stack-tests run skipped, for the summary at the end of `make test`.
LAST_STACK_TESTS_FILE = manifests.REPO_ROOT / ".build" / "last-stack-tests.json"


def register(sub: argparse._SubParsersAction) -> None:
    listing = sub.add_parser("list", help="list stacks and whether they can run here")
    listing.add_argument(
        "--first-runnable",
        metavar="A,B,...",
        help="print only the first of these stacks that can run here (the first one if none can)",
    )
    listing.set_defaults(func=cmd_list)
    sub.add_parser("validate", help="validate every server.toml").set_defaults(func=cmd_validate)
    tests = sub.add_parser("stack-tests", help="run each stack's own tests (manifest or family)")
    tests.add_argument("--servers", help="comma-separated stacks (default: all)")
    tests.set_defaults(func=cmd_stack_tests)


def first_runnable(names: list[str]) -> str:
    """The first of `names` whose toolchain (and, offline, packages) this machine has."""
    runner = NativeRunner()
    for manifest in manifests.load_all(names):
        if runner.unavailable_reason(manifest) is None:
            return manifest.name
    return names[0]


def cmd_list(args: argparse.Namespace) -> int:
    if args.first_runnable:
        print(first_runnable(manifests.stack_list(args.first_runnable)))
        return 0
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
    if any("@" in row[0] for row in rows):
        print("\nname@variant: the same stack in another configuration (its manifest's "
              "[[variant]] table,\nservers/README.md), run by naming it: SERVERS=name@variant")  # fmt: skip
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


def cmd_stack_tests(args: argparse.Namespace) -> int:
    """Each stack's own tests: built natively, then its test command in its folder.

    A stack whose toolchain is missing is skipped and named; one whose tests
    another stage runs (Python, JVM) says which. Exit 1 if any failed.
    """
    runner = NativeRunner()
    failed, skipped = [], []
    for manifest in manifests.load_all(manifests.stack_list(args.servers)):
        command, where = own_tests(manifest.native, manifest.folder)
        reason = runner.unavailable_reason(manifest)
        if command is None:
            print(f"- {manifest.name}: {where}")
        elif reason:
            print(f"SKIPPED {manifest.name}: {reason} (its tests: `{command}`)")
            skipped.append({"stack": manifest.name, "status": "skipped", "reason": reason})
        else:
            started = time.monotonic()
            problem = run_stack_tests(runner, manifest, command)
            took = f"{time.monotonic() - started:.0f} s"
            print(f"{'FAILED' if problem else 'passed'} {manifest.name}: `{command}` ({where}, "
                  f"{took})" + (f"\n{problem}" if problem else ""), flush=True)  # fmt: skip
            if problem:
                failed.append(manifest.name)
    LAST_STACK_TESTS_FILE.parent.mkdir(parents=True, exist_ok=True)
    LAST_STACK_TESTS_FILE.write_text(json.dumps(skipped, indent=1))
    if failed:
        print(f"stack-tests: failed for {', '.join(failed)}")
    return 1 if failed else 0


def run_stack_tests(runner: NativeRunner, manifest, command: str) -> str | None:
    """None when the build and the tests pass; else what went wrong, with the output's tail."""
    try:
        runner.build(manifest)
    except StepError as exc:
        return exc.explain()
    log = manifest.build_dir / "stack-tests.log"
    with log.open("w") as out:
        try:
            result = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", command], cwd=manifest.folder,
                env=manifests.stack_env(manifest), stdout=out, stderr=subprocess.STDOUT,
                timeout=STACK_TESTS_TIMEOUT_S,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return f"timed out after {STACK_TESTS_TIMEOUT_S} s (log: {log})\n{tail(log)}"
    if result.returncode != 0:
        return f"exit code {result.returncode} (log: {log})\n{tail(log)}"
    return None
