"""Verify a stack against its contract: the checker run on a started server.

`check_stack` takes one stack through the same steps as a benchmark
(prerequisites, build, start, wait-ready, conformance, stop); a failure in one
step is reported with the stack's own output, and `check_all` carries on with
the next stack.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from loadtest.core.errors import StepError
from loadtest.core.families import build_group
from loadtest.core.manifest import REPO_ROOT, Manifest
from loadtest.core.outcomes import skipped_banner, tally
from loadtest.core.runner import Runner
from loadtest.runners.lifecycle import running

CHECKER_TIMEOUT_S = 300
LAST_CHECK_FILE = REPO_ROOT / ".build" / "last-check.json"


@dataclass
class CheckOutcome:
    stack: str
    status: str  # passed | failed | skipped
    passed: int = 0
    failed: int = 0
    ready_s: float | None = None
    reason: str = ""
    failures: list[str] = field(default_factory=list)
    known: list[str] = field(default_factory=list)


def conformance_command(
    manifest: Manifest, base_url: str, tls_cert: Path | None = None, extra_args: tuple = ()
) -> list[str]:
    """The checker for the stack's contract: the API checker, or the static-site one.

    An HTTPS stack is checked over TLS trusting exactly its run's certificate.
    """
    if manifest.contract == "static":
        command = [sys.executable, "-m", "contracts.conformance.static", "--base-url", base_url]
    else:
        command = [
            sys.executable, "-m", "contracts.conformance",
            "--base-url", base_url, "--display-name", manifest.display_name,
        ]  # fmt: skip
    if tls_cert is not None:
        command += ["--tls", str(tls_cert)]
    return [*command, "--json", *extra_args]


def server_cert(server) -> Path | None:
    """The certificate to trust for an HTTPS server (a tls stack or a TLS front), else None."""
    return getattr(server, "tls_cert", None)


def run_conformance(
    manifest: Manifest,
    base_url: str,
    extra_args: tuple[str, ...] = (),
    tls_cert: Path | None = None,
) -> dict:
    """Run the stdlib conformance checker against a running stack; returns its JSON report.

    `tls_cert`: the server's `tls_cert` (None for plain HTTP).
    """
    command = conformance_command(manifest, base_url, tls_cert, extra_args)
    try:
        result = subprocess.run(
            command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=CHECKER_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        raise StepError(manifest.name, "conformance", f"checker ran over {CHECKER_TIMEOUT_S} s")
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        raise StepError(
            manifest.name,
            "conformance",
            f"checker exited {result.returncode} without a JSON report",
            (result.stderr or result.stdout)[-3000:],
        ) from None
    return apply_known_failures(report, manifest)


def apply_known_failures(report: dict, manifest: Manifest) -> dict:
    """Count a failure the manifest documents as a property of the server as 'known'.

    Only exact check ids listed under [[known_failure]] (each with a reason,
    repeated in the stack's README) are excused; any other failure, and any
    listed check that unexpectedly passes, is still visible in the report.
    """
    known = {entry["check"]: entry["why"] for entry in manifest.known_failures}
    excused = []
    for check in report.get("checks", []):
        if not check["ok"] and check["id"] in known:
            check["known"] = known[check["id"]]
            excused.append(check["id"])
    report["known_failures"] = excused
    report["failed"] = report.get("failed", 0) - len(excused)
    return report


def check_stack(runner: Runner, manifest: Manifest, log=print) -> CheckOutcome:
    outcome = CheckOutcome(manifest.name, "failed")
    reason = runner.unavailable_reason(manifest)
    if reason:
        outcome.status, outcome.reason = "skipped", reason
        log(f"[{manifest.name}] SKIPPED: {reason}")
        return outcome
    try:
        with running(runner, manifest, say=lambda text: log(f"[{manifest.name}] {text}")) as up:
            outcome.ready_s = up.ready_s
            report = run_conformance(manifest, up.server.base_url, tls_cert=server_cert(up.server))
            outcome.passed, outcome.failed = report["passed"], report["failed"]
            outcome.known = report["known_failures"]
            outcome.failures = failure_lines(report["checks"])
            if not up.server.is_alive():
                raise StepError(
                    manifest.name,
                    "conformance",
                    "server died during the checks",
                    up.server.output_tail(),
                )
        outcome.status = "passed" if outcome.failed == 0 else "failed"
        if outcome.failed:
            outcome.reason = f"{outcome.failed} conformance check(s) failed"
        elif outcome.known:
            outcome.reason = (
                f"known failure(s), documented in its README: {', '.join(outcome.known)}"
            )
    except StepError as exc:
        outcome.reason = str(exc)
        log(exc.explain())
    for line in outcome.failures:
        log(f"[{manifest.name}] {line}")
    return outcome


def failure_lines(checks: list[dict]) -> list[str]:
    """Failed, known-failing and skipped checks, one line each (skips stay visible)."""
    return (
        [
            f"FAIL {c['id']}  {c.get('detail', '')}"
            for c in checks
            if not c["ok"] and "known" not in c
        ]
        + [f"KNOWN {c['id']}  {c['known']}" for c in checks if "known" in c]
        + [f"SKIP {c['id']}  {c['detail']}" for c in checks if c.get("skipped")]
    )


def summary_table(outcomes: list[CheckOutcome]) -> str:
    rows = [("stack", "result", "checks", "ready", "note")]
    for o in outcomes:
        total = o.passed + o.failed + len(o.known)
        checks = f"{o.passed}/{total}" if total else "-"
        ready = f"{o.ready_s:.1f} s" if o.ready_s is not None else "-"
        rows.append((o.stack, o.status.upper(), checks, ready, o.reason))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    for i, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[4])
        if i == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 4)
    return "\n".join(line.rstrip() for line in lines)


def write_outcomes(outcomes: list[CheckOutcome]) -> None:
    """Keep the last check's outcome for `make test`'s closing summary."""
    LAST_CHECK_FILE.parent.mkdir(parents=True, exist_ok=True)
    LAST_CHECK_FILE.write_text(json.dumps([asdict(o) for o in outcomes], indent=1))


def check_in_queues(runner: Runner, manifests: list[Manifest], jobs: int) -> list[CheckOutcome]:
    """Each stack checked, `jobs` at a time; stacks of one build group (core/families)
    one after the other. The outcomes in the order of `manifests`."""
    queues: dict[str, list[Manifest]] = {}
    for manifest in manifests:
        queues.setdefault(build_group(manifest.folder), []).append(manifest)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        done = pool.map(lambda queue: [check_stack(runner, m) for m in queue], queues.values())
        by_stack = {o.stack: o for outcomes in done for o in outcomes}
    return [by_stack[m.name] for m in manifests]


def check_all(runner: Runner, manifests: list[Manifest], jobs: int = 1) -> int:
    outcomes = check_in_queues(runner, manifests, jobs)
    write_outcomes(outcomes)
    print()
    print(summary_table(outcomes))
    skipped = [(o.stack, o.reason) for o in outcomes if o.status == "skipped"]
    failed = [o for o in outcomes if o.status == "failed"]
    if skipped:
        print()
        print("\n".join(skipped_banner(skipped)))
    print()
    print(tally("check", len(outcomes), len(failed), len(skipped)))
    return 1 if failed else 0
