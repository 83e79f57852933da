"""`make hostile`: hostile input against every stack, one at a time, on 127.0.0.1.

For each stack that can run here: build, start (native runner), warm up
with a quick contract subset, record the RSS of its process tree, then
1. schemathesis from contracts/openapi.yaml (fixed seed, bounded examples
   per operation; the command line and seed are recorded);
2. the raw-socket cases of loadtest/hostile_cases.py;
3. the verdicts: still alive, still answers the contract (a subset of the
   conformance checker), no 5xx anywhere, RSS after <= 2 x RSS before, and
   a clean stop on SIGTERM.
A stack whose framework cannot meet a rule lists the case as
`[[known_failure]] check = "hostile:<case>"` in its server.toml and explains
it in its README; the table shows it as documented, never as passed.
docs/reliability.md has the rules and the reasons.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from contracts.conformance import ServerUnreachable, run_checks
from loadtest.commands import hostile_cases as cases
from loadtest.core.errors import StepError
from loadtest.core.manifest import REPO_ROOT, Manifest, load_all, stack_list
from loadtest.core.outcomes import skipped_banner, tally
from loadtest.host.ports import port_or_free
from loadtest.measure.metrics import tree_rss
from loadtest.runners.conformance import apply_known_failures
from loadtest.runners.lifecycle import running
from loadtest.runners.native import NativeRunner

OPENAPI = REPO_ROOT / "contracts" / "openapi.yaml"
OUTPUT_DIR = REPO_ROOT / ".build" / "hostile"
DEFAULT_SEED = 20261122
KNOWN_PREFIX = "hostile:"
# schemathesis' failure code for a 5xx answer (`st explain ST101`).
SERVER_ERROR_CODE = "ST101"
RSS_FACTOR = 2.0
SETTLE_S = 1.0  # after the cases, before RSS is read again

# Quick: `make test` (about 5 minutes for every stack together); full: `make hostile`.
MODES = {
    "quick": {
        "examples": 5,
        "idle": 1000,
        "hold": 1.0,
        "silent_hold": 1.5,
        "schemathesis_timeout": 120,
    },
    "full": {
        "examples": 100,
        "idle": 10000,
        "hold": 2.0,
        "silent_hold": 3.0,
        "schemathesis_timeout": 600,
    },
}
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
# Rows of the table, in order.
ROWS = [
    "schemathesis",
    *cases.CASES,
    "alive",
    "contract",
    "no-5xx",
    "rss",
    "clean-stop",
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


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "hostile",
        help="hostile input (schemathesis and raw-socket cases) against each stack",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--servers", help="comma-separated stack names (default: all)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="fewer schemathesis examples and 1,000 idle connections (make test)",
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="schemathesis seed")
    parser.add_argument("--examples", type=int, help="schemathesis examples per operation")
    parser.add_argument("--idle", type=int, help="idle connections held open at once")
    parser.add_argument("--cases", help="comma-separated raw-socket cases (default: all)")
    parser.add_argument("--output", type=Path, default=OUTPUT_DIR, help="folder for the JSON")
    parser.set_defaults(func=cmd_hostile)


def cmd_hostile(args: argparse.Namespace) -> int:

    mode = dict(MODES["quick" if args.quick else "full"])
    if args.examples:
        mode["examples"] = args.examples
    if args.idle:
        mode["idle"] = args.idle
    selected = stack_list(args.cases) or list(cases.CASES)
    unknown = set(selected) - set(cases.CASES)
    if unknown:
        print(f"hostile: unknown case(s) {', '.join(sorted(unknown))}; known: "
              f"{', '.join(cases.CASES)}", file=sys.stderr)  # fmt: skip
        return 2
    # Thousands of idle connections need thousands of descriptors, here and
    # in the server, which inherits the limit.
    limit = cases.raise_file_limit(mode["idle"] + 1024)
    manifests = load_all(stack_list(args.servers))
    # The hostile cases and schemathesis judge the API contract only.
    for manifest in [m for m in manifests if m.contract != "api"]:
        print(f"hostile: {manifest.name} skipped: serves the {manifest.contract} contract")
    manifests = [m for m in manifests if m.contract == "api"]
    args.output.mkdir(parents=True, exist_ok=True)
    print(f"hostile: {'quick' if args.quick else 'full'} mode, schemathesis seed {args.seed}, "
          f"{mode['examples']} examples per operation, {mode['idle']} idle connections "
          f"(open-file limit {limit})")  # fmt: skip
    runner = NativeRunner()
    started = time.monotonic()
    reports = []
    interrupted = False
    try:
        for manifest in manifests:
            reports.append(run_stack(runner, manifest, mode, args.seed, selected, args.output))
    except KeyboardInterrupt:  # the running stack was stopped by run_stack; keep the rest
        interrupted = True
        print(f"hostile: interrupted; reporting the {len(reports)} stack(s) already done")
    summary = {
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full",
        "seed": args.seed,
        "examples_per_operation": mode["examples"],
        "idle_connections": mode["idle"],
        "file_limit": limit,
        "cases": selected,
        "duration_s": round(time.monotonic() - started, 1),
        "interrupted": interrupted,
        "stacks": [r.to_dict() for r in reports],
    }
    out = args.output / "hostile.json"
    try:
        out.write_text(json.dumps(summary, indent=1))
    except OSError as exc:  # a full or read-only disk must not hide the table
        print(f"hostile: writing the results failed: {out}: {exc}", file=sys.stderr)
    print()
    print(table(reports, [r for r in ROWS if r not in cases.CASES or r in selected]))
    print()
    print(f"JSON: {out.relative_to(REPO_ROOT) if out.is_relative_to(REPO_ROOT) else out}")
    code = finish(reports)
    return 130 if interrupted else code


def finish(reports: list[StackReport]) -> int:
    skipped = [r for r in reports if r.status == "skipped"]
    failed = [r for r in reports if r.status == "failed"]
    for r in failed:
        bad = [row for row, v in r.rows.items() if v["status"] == "fail"]
        print(f"FAILED {r.stack}: {r.reason or ', '.join(bad)}")
        for row in bad:
            print(f"    {row}: {r.rows[row]['detail'][:300]}")
    for line in skipped_banner([(r.stack, r.reason) for r in skipped]):
        print(line)
    print(tally("hostile", len(reports), len(failed), len(skipped)))
    return 1 if failed else 0


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
        say(f"RSS: {_mb(rss_start)} at start, {_mb(info.get('rss_held'))} holding "
            f"{mode['idle']} connections")  # fmt: skip
        order = order[1:]
    report.rss_before = tree_rss(server.pids())
    say(f"RSS before: {_mb(report.rss_before)}")

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
            f"{_mb(report.rss_before)} -> {_mb(report.rss_after)} ({factor:.2f}x)",
            {"before": report.rss_before, "after": report.rss_after},
        )
    else:
        report.set("rss", False, "not measured: the server had died")
    say(f"RSS after: {_mb(report.rss_after)}; stopping")
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


CELL = {"pass": "pass", "fail": "FAIL", "documented": "doc"}


def table(reports: list[StackReport], rows: list[str]) -> str:
    """Case x stack: pass, FAIL, doc (documented in the stack's README), - (not run)."""
    stacks = [r for r in reports if r.status != "skipped"]
    first = max(len(r) for r in rows + ["case"])
    widths = [max(4, len(r.stack)) for r in stacks]
    lines = ["  ".join(["case".ljust(first)] + [r.stack.ljust(w) for r, w in zip(stacks, widths)])]
    lines.append("  ".join(["-" * first] + ["-" * w for w in widths]))
    for row in rows:
        cells = []
        for r, w in zip(stacks, widths):
            value = r.rows.get(row)
            cells.append((CELL[value["status"]] if value else "-").ljust(w))
        lines.append("  ".join([row.ljust(first)] + cells).rstrip())
    lines.append("  ".join(["RESULT".ljust(first)] + [
        ("pass" if r.status == "passed" else "FAIL").ljust(w) for r, w in zip(stacks, widths)
    ]).rstrip())  # fmt: skip
    lines.append("")
    lines.append("doc: fails, documented in the stack's README ([[known_failure]] hostile:<case>)")
    return "\n".join(lines)


def _mb(value: int | None) -> str:
    return "-" if not value else f"{value / 1e6:.1f} MB"

