"""Hostile input against one started stack (`make hostile`): schemathesis from the
contract's OpenAPI file, the raw-socket cases of `hostile_cases`, and the verdicts:
still alive, still answers the contract, no 5xx anywhere, RSS after <= 2 x RSS before,
a clean stop. A case the stack's manifest documents as a known failure
(`hostile:<case>`) is shown as documented, never as passed."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from contracts.conformance import ServerUnreachable, run_checks
from loadtest.core.errors import StepError
from loadtest.core.manifest import REPO_ROOT, Manifest
from loadtest.host.ports import port_or_free
from loadtest.measure.metrics import tree_rss
from loadtest.runners import hostile_cases as cases
from loadtest.runners.conformance import apply_known_failures
from loadtest.runners.lifecycle import running

OPENAPI = REPO_ROOT / "contracts" / "openapi.yaml"
KNOWN_PREFIX = "hostile:"
# schemathesis' failure code for a 5xx answer (`st explain ST101`).
SERVER_ERROR_CODE = "ST101"
RSS_FACTOR = 2.0
SETTLE_S = 1.0  # after the cases, before RSS is read again
# The contract subset run before (as a warm-up) and after the cases.
CONTRACT_SUBSET = [
    "hello-get",
    "n-vectors",
    "at-vectors",
    "not-found",
    "methods",
    "head-requests",
    "keep-alive",
    "http10",
    "concurrent",
]


@dataclass
class StackReport:
    stack: str
    status: str = "failed"  # passed | failed | skipped
    reason: str = ""
    port: int | None = None
    rows: dict = field(default_factory=dict)  # row -> {status, detail, info}
    rss_before: int | None = None
    rss_after: int | None = None
    schemathesis: dict = field(default_factory=dict)
    seconds: float = 0.0

    def set(self, row: str, ok: bool, detail: str, info: dict | None = None) -> None:
        self.rows[row] = {"status": "pass" if ok else "fail", "detail": detail, "info": info or {}}

    def to_dict(self) -> dict:
        return {
            "stack": self.stack,
            "status": self.status,
            "reason": self.reason,
            "port": self.port,
            "rss_before": self.rss_before,
            "rss_after": self.rss_after,
            "schemathesis": self.schemathesis,
            "seconds": round(self.seconds, 1),
            "rows": self.rows,
        }


def contract_subset(manifest: Manifest, base_url: str) -> tuple[bool, str]:

    try:
        report = run_checks(base_url, manifest.display_name, seed=1, only=CONTRACT_SUBSET)
    except ServerUnreachable as exc:
        return False, f"unreachable: {exc}"
    report = apply_known_failures(report, manifest)
    failed = [c["id"] for c in report["checks"] if not c["ok"] and "known" not in c]
    known = report["known_failures"]
    detail = f"{report['passed']} passed, {len(failed)} failed"
    if known:
        detail += f", known: {', '.join(known)}"
    if failed:
        detail += f": {', '.join(failed[:8])}"
    return not failed, detail


def run_schemathesis(base_url: str, seed: int, examples: int, timeout: int, out: Path) -> dict:
    """schemathesis' CLI: reproducible from the recorded command line and seed."""
    command = [
        sys.executable, "-m", "schemathesis.cli", "run", str(OPENAPI.relative_to(REPO_ROOT)),
        "--url", base_url,
        "--seed", str(seed),
        "--max-examples", str(examples),
        "--workers", "1",
        "--checks", "all",
        "--generation-database", "none",  # no examples carried over from earlier runs
        "--request-timeout", "5",
        "--no-color",
        "--report", "json",
        "--report-json-path", str(out),
    ]  # fmt: skip
    out.unlink(missing_ok=True)
    started = time.monotonic()
    try:
        result = subprocess.run(
            command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "detail": f"ran over {timeout} s", "command": command}
    record = {
        "command": [Path(command[0]).name, *command[1:]],
        "exit_code": result.returncode,
        "seconds": round(time.monotonic() - started, 1),
    }
    try:
        data = json.loads(out.read_text())
    except (OSError, json.JSONDecodeError):
        tail = (result.stdout + result.stderr).strip().splitlines()[-15:]
        record.update(ok=False, detail=f"no JSON report (exit {result.returncode})", tail=tail)
        return record
    failures = [
        f"{f.get('code')} {f.get('title')}: {', '.join(f.get('operations', []))}"
        for f in data.get("failures", [])
    ]
    record.update(
        codes=sorted({str(f.get("code")) for f in data.get("failures", [])}),
        seed=data.get("seed"),
        generated=data["test_cases"]["generated"],
        with_failures=data["test_cases"]["with_failures"],
        errored=data["test_cases"]["errored"],
        failures=failures,
        errors=[json.dumps(e)[:400] for e in data.get("errors", [])],
        report=str(out),
    )
    ok = result.returncode == 0 and not failures and not data.get("errors")
    detail = f"{record['generated']} generated, {record['with_failures']} with failures"
    if failures:
        detail += ": " + "; ".join(failures)
    if data.get("errors"):
        detail += f", {len(data['errors'])} errors"
    if not ok:
        detail += f" (report: {out})"
        record["tail"] = result.stdout.strip().splitlines()[-60:]
    record.update(ok=ok, detail=detail)
    return record


def run_case(name: str, port: int, mode: dict, server=None) -> cases.CaseResult:
    started = time.monotonic()
    func = cases.CASES[name]
    try:
        if name == "idle-connections":
            probe = (lambda: tree_rss(server.pids())) if server else None
            result = func(port, mode["idle"], hold_s=mode["hold"], rss=probe)
        elif name == "connect-send-nothing":
            result = func(port, hold_s=mode["silent_hold"])
        else:
            result = func(port)
    except Exception as exc:  # a bug in a case must not stop the suite
        result = cases.CaseResult(name, False, f"case error: {type(exc).__name__}: {exc}")
    result.seconds = time.monotonic() - started
    return result


def run_and_record(report: StackReport, name: str, server, mode: dict, statuses: list, say):
    if not server.is_alive():
        report.set(name, False, "not run: the server had died")
        return
    result = run_case(name, report.port, mode, server)
    statuses += result.statuses
    if not server.is_alive():
        result.ok = False
        result.detail = f"server died: {result.detail}"
    report.set(name, result.ok, result.detail, result.info)
    say(f"{'pass' if result.ok else 'FAIL'} {name} ({result.seconds:.1f} s): {result.detail[:200]}")


def run_stack(
    runner, manifest: Manifest, mode: dict, seed: int, selected: list[str], out_dir: Path
) -> StackReport:
    report = StackReport(manifest.name)
    started = time.monotonic()
    say = lambda text: print(f"[{manifest.name}] {text}", flush=True)  # noqa: E731
    reason = runner.unavailable_reason(manifest)
    if reason:
        report.status, report.reason = "skipped", reason
        say(f"SKIPPED: {reason}")
        return report
    statuses: list[int] = []
    report.port = port_or_free(manifest.port)
    try:
        with running(runner, manifest, port=report.port, say=say) as up:
            exercise(report, up, manifest, mode, seed, selected, out_dir, statuses, say)
    except StepError as exc:
        report.reason = str(exc)
        say(exc.explain())
    apply_documented(report, manifest)
    failed = [row for row, v in report.rows.items() if v["status"] == "fail"]
    report.status = "failed" if failed or report.reason else "passed"
    report.seconds = time.monotonic() - started
    say(f"{report.status.upper()} in {report.seconds:.0f} s")
    return report


def exercise(report, started, manifest, mode, seed, selected, out_dir, statuses, say) -> None:
    """The suite on one ready server: raw cases, schemathesis, then alive, contract, RSS, stop."""
    server = started.server
    say("warming up with the contract subset")
    contract_subset(manifest, server.base_url)
    # The idle connections go first: memory a runtime keeps for reuse after
    # holding them (Go, the JVM, malloc arenas) is not a leak, so the RSS
    # rule judges what the rest of the suite does on top of it.
    order = sorted(selected, key=lambda name: name != "idle-connections")
    if order and order[0] == "idle-connections":
        rss_start = tree_rss(server.pids())
        run_and_record(report, "idle-connections", server, mode, statuses, say)
        info = report.rows["idle-connections"]["info"]
        info["rss_start"] = rss_start
        say(f"RSS: {megabytes(rss_start)} at start, {megabytes(info.get('rss_held'))} holding "
            f"{mode['idle']} connections")  # fmt: skip
        order = order[1:]
    report.rss_before = tree_rss(server.pids())
    say(f"RSS before: {megabytes(report.rss_before)}")

    st = run_schemathesis(
        server.base_url,
        seed,
        mode["examples"],
        mode["schemathesis_timeout"],
        out_dir / f"{manifest.name}-schemathesis.json",
    )
    report.schemathesis = st
    report.set("schemathesis", st["ok"], st["detail"])
    say(f"schemathesis: {'pass' if st['ok'] else 'FAIL'}  {st['detail']}")
    if not st["ok"] and not set(st.get("codes") or ["-"]) <= documented_codes(manifest):
        for line in st.get("tail", [])[-40:]:
            say(f"  | {line}")

    for name in order:
        run_and_record(report, name, server, mode, statuses, say)

    time.sleep(SETTLE_S)
    alive = server.is_alive() and bool(server.pids())
    report.set("alive", alive, "process tree alive" if alive else "the server exited")
    if alive:
        ok, detail = contract_subset(manifest, server.base_url)
        report.set("contract", ok, detail)
        report.rss_after = tree_rss(server.pids())
    else:
        report.set("contract", False, "not run: the server had died")
    fives = sorted({s for s in statuses if s >= 500 and s != cases.VERSION_NOT_SUPPORTED})
    st_5xx = SERVER_ERROR_CODE in st.get("codes", [])
    detail = "none from the raw cases or schemathesis"
    if fives or st_5xx:
        detail = f"raw cases: {fives or 'none'}; schemathesis: {'yes' if st_5xx else 'none'}"
    report.set("no-5xx", not fives and not st_5xx, detail)
    if report.rss_before and report.rss_after:
        factor = report.rss_after / report.rss_before
        report.set(
            "rss",
            factor <= RSS_FACTOR,
            f"{megabytes(report.rss_before)} -> {megabytes(report.rss_after)} ({factor:.2f}x)",
            {"before": report.rss_before, "after": report.rss_after},
        )
    else:
        report.set("rss", False, "not measured: the server had died")
    say(f"RSS after: {megabytes(report.rss_after)}; stopping")
    try:
        started.stop()
        report.set("clean-stop", True, "exited cleanly on SIGTERM")
    except StepError as exc:
        report.set("clean-stop", False, exc.message)


def documented_codes(manifest: Manifest) -> set[str]:
    """schemathesis failure codes the manifest documents (hostile:schemathesis:<code>)."""
    prefix = KNOWN_PREFIX + "schemathesis:"
    return {e["check"][len(prefix) :] for e in manifest.known_failures
            if e["check"].startswith(prefix)}  # fmt: skip


def apply_documented(report: StackReport, manifest: Manifest) -> None:
    """Failures listed in server.toml as [[known_failure]] show as documented.

    `check = "hostile:<row>"` excuses a row; `check = "hostile:schemathesis:<code>"`
    excuses one kind of schemathesis failure (its code, e.g. ST204): the row
    is documented only when every code it failed with is listed. A listed row
    that passes is reported for removal, unless its entry says
    `intermittent = true` (the failure depends on timing, and its README says
    how often it was seen).
    """
    known = {
        e["check"][len(KNOWN_PREFIX) :]: e
        for e in manifest.known_failures
        if e["check"].startswith(KNOWN_PREFIX)
    }
    codes = documented_codes(manifest)
    for row, value in report.rows.items():
        if row == "schemathesis" and codes and value["status"] == "fail":
            failed = set(report.schemathesis.get("codes", []))
            if failed and failed <= codes and not report.schemathesis.get("errors"):
                value["status"] = "documented"
                value["why"] = "; ".join(known[f"schemathesis:{c}"]["why"] for c in sorted(failed))
            continue
        if row not in known:
            continue
        if value["status"] == "fail":
            value["status"] = "documented"
            value["why"] = known[row]["why"]
        elif known[row].get("intermittent"):
            value["note"] = "a known intermittent failure that did not occur this time"
        else:
            value["note"] = "listed as a known failure but passed: remove it from server.toml"
            print(f"[{manifest.name}] note: hostile:{row} is listed as a known failure but passed")


def megabytes(value: int | None) -> str:
    return "-" if not value else f"{value / 1e6:.1f} MB"
