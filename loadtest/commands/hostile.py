"""`make hostile`: hostile input against every stack, one at a time, on 127.0.0.1.

For each stack that can run here: build, start (native runner), warm up
with a quick contract subset, record the RSS of its process tree, then
1. schemathesis from contracts/openapi.yaml (fixed seed, bounded examples
   per operation; the command line and seed are recorded);
2. the raw-socket cases of loadtest/runners/hostile_cases.py (run by
   loadtest/runners/hostile.py);
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
import sys
import time
from pathlib import Path

from loadtest.core.manifest import REPO_ROOT, load_all, stack_list
from loadtest.core.outcomes import skipped_banner, tally
from loadtest.runners import hostile_cases as cases
from loadtest.runners.hostile import StackReport, run_stack
from loadtest.runners.native import NativeRunner

OUTPUT_DIR = REPO_ROOT / ".build" / "hostile"
DEFAULT_SEED = 20261122
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
