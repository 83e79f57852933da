"""`make lab LAB=<n>`: run a teaching lab's measurements (docs/labs/).

Labs 1 to 4 are bench runs with their own profile (`lab1-body-size`, ...
in profiles.toml): the same verification, pinning, interleaved rounds,
statistics and report as `make bench`. Lab 5 pauses a running stack with
SIGSTOP/SIGCONT for `stall_for` seconds, `stall_at` seconds into runs of the
same length under oha (open loop, with and without latency correction) and
wrk (closed loop), and writes its own short report.

Environment knobs (SERVERS, DURATION, CONNECTIONS, ...) override a lab's
profile as they override a bench profile. PROFILE=smoke (or --smoke)
shrinks a lab to a quick check of the whole path: the docs test runs every
lab that way.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from loadtest.bench import coordinated_omission as lab5
from loadtest.bench.results import RESULTS_ROOT, new_run_id
from loadtest.bench.run import Bench
from loadtest.core.errors import StepError
from loadtest.core.knobs import KnobError, Knobs, load_profiles, resolve
from loadtest.core.manifest import REPO_ROOT, ManifestError, load, stack_names
from loadtest.host.ports import port_or_free
from loadtest.report import coordinated_omission as lab5_report
from loadtest.report.run_report import run_and_report
from loadtest.runners.native import NativeRunner

SMOKE_DURATION_S = 1.0
SMOKE_AB_REQUESTS = 300
# Lab 5 under PROFILE=smoke: short runs that still show a 1 s stall clearly.
SMOKE_LAB5 = {"duration": 4.0, "stall_at": 1.5, "rate": 1000.0}


@dataclass(frozen=True)
class Lab:
    number: int
    profile: str
    page: str
    title: str


LABS = {
    lab.number: lab
    for lab in (
        Lab(1, "lab1-body-size", "docs/labs/1-body-size.md", "Body size vs throughput"),
        Lab(2, "lab2-headers", "docs/labs/2-headers.md", "Headers matter"),
        Lab(3, "lab3-workers", "docs/labs/3-workers.md", "Sync vs async workers"),
        Lab(4, "lab4-cpu-cap", "docs/labs/4-cpu-cap.md", "Saturation under a CPU cap"),
        Lab(
            5,
            "lab5-coordinated-omission",
            "docs/labs/5-coordinated-omission.md",
            "Coordinated omission",
        ),
    )
}


def register(sub: argparse._SubParsersAction) -> None:
    lab = sub.add_parser(
        "lab",
        help="run a teaching lab's measurements (docs/labs/)",
        description="Knobs in the environment (SERVERS=..., DURATION=...) override the lab's "
        "profile; PROFILE=smoke shrinks the lab to a quick check.",
    )
    lab.add_argument("lab", nargs="?", help="lab number, 1 to 5")
    lab.add_argument("--list", action="store_true", help="list the labs")
    lab.add_argument("--smoke", action="store_true", help="a quick check (as PROFILE=smoke)")
    lab.add_argument("--results-dir", type=Path, default=RESULTS_ROOT, help=argparse.SUPPRESS)
    lab.set_defaults(func=cmd_lab)


def list_labs() -> str:
    lines = ["Labs (make lab LAB=<n>; each page has the goal, what to look for and the questions):"]
    for lab in LABS.values():
        lines.append(f"  {lab.number}  {lab.title:<28} {lab.page}  (profile {lab.profile})")
    return "\n".join(lines)


def cmd_lab(args: argparse.Namespace) -> int:
    if args.list or not args.lab:
        print(list_labs())
        return 0 if args.list else 2
    try:
        lab = LABS[int(args.lab)]
    except (ValueError, KeyError):
        print(f"lab: no lab {args.lab!r}\n{list_labs()}")
        return 2
    profile = os.environ.get("PROFILE", "")
    smoke = args.smoke or profile == "smoke"
    if profile and profile != "smoke":
        print(f"lab: PROFILE={profile} ignored; lab {lab.number} uses profile {lab.profile}")
    env = {k: v for k, v in os.environ.items() if k != "PROFILE"}
    try:
        knobs = resolve(lab.profile, env, {})
        if smoke:
            knobs = shrink_for_smoke(knobs)
    except (KnobError, ManifestError) as exc:
        print(f"lab {lab.number}: {exc}")
        return 2
    print(f"Lab {lab.number}: {lab.title} ({lab.page})" + (" [smoke]" if smoke else ""))
    if lab.number == 5:
        return run_lab5(knobs, args.results_dir, smoke)
    return run_bench_lab(lab, knobs, args.results_dir)


def runnable_stacks(names: list[str]) -> list[str]:
    """The stacks of a list that exist here and whose toolchain is present, in order."""
    runner = NativeRunner()
    known = set(stack_names())
    return [n for n in names if n in known and not runner.unavailable_reason(load(n))]


def shrink_for_smoke(knobs: Knobs) -> Knobs:
    """A lab's whole path in seconds: one stack, the extreme levels, 1 s runs, no ceiling."""
    changes = {
        "duration": min(knobs.duration, SMOKE_DURATION_S),
        "warmup": 0,
        "repeat": 1,
        "calibration": False,
        "requests": {k: min(v, SMOKE_AB_REQUESTS) for k, v in knobs.requests.items()},
    }
    if len(knobs.connections) > 2:
        changes["connections"] = [min(knobs.connections), max(knobs.connections)]
    if len(knobs.server_cpu_quota) > 2:
        changes["server_cpu_quota"] = [knobs.server_cpu_quota[0], knobs.server_cpu_quota[-1]]
    if knobs.sources.get("servers") == "profile":
        runnable = runnable_stacks(knobs.servers)
        changes["servers"] = runnable[:1] or knobs.servers[:1]
    return dataclasses.replace(knobs, **changes)


def run_bench_lab(lab: Lab, knobs: Knobs, results_dir: Path) -> int:
    folder = results_dir / new_run_id(lab.profile)
    code = run_and_report(Bench(knobs, folder, Console(highlight=False, soft_wrap=True)))
    print(f"\nLab {lab.number} report: {_shown(folder / 'report.html')}")
    print(f"  tables: {_shown(folder / 'summary.md')}; charts: {_shown(folder / 'charts')}/")
    print(f"  what to look for and the questions: {lab.page}")
    return code


def coordinated_omission(settings: dict, folder: Path, say=print) -> dict:
    """Lab 5 measured (bench/coordinated_omission.py) and its report written; its data."""
    data = lab5.measure(settings, folder, say)
    lab5_report.write_report(data, folder)
    return data


def lab5_settings(knobs: Knobs, smoke: bool) -> dict:
    profile = load_profiles()["lab5-coordinated-omission"]
    rate = float(knobs.rate[0]) if knobs.rate and not knobs.rate[0].endswith("%") else 1000.0
    settings = {
        "stack": knobs.servers[0] if knobs.servers else "go-nethttp",
        "connections": knobs.connections[0],
        "rate": rate,
        "duration": knobs.duration,
        "warmup": knobs.warmup,
        "timeout": knobs.timeout,
        "stall_at": float(os.environ.get("STALL_AT") or profile.get("stall_at", 4.0)),
        "stall_for": float(os.environ.get("STALL_FOR") or profile.get("stall_for", 1.0)),
        "server_cpus": list(knobs.server_cpus),
        "client_cpus": list(knobs.client_cpus),
        "baselines": not smoke,
        "rounds": 1 if smoke else knobs.repeat,
    }
    if smoke:
        settings.update(SMOKE_LAB5, warmup=0.0)
        if knobs.sources.get("servers") == "profile":
            settings["stack"] = (runnable_stacks(knobs.servers) or knobs.servers)[0]
    if settings["stall_at"] + settings["stall_for"] >= settings["duration"]:
        raise KnobError("lab 5: the stall must end before the run does (STALL_AT, DURATION)")
    # Requests stuck in the stall must not time out: they are the point.
    settings["timeout"] = max(settings["timeout"], math.ceil(settings["stall_for"]) + 2)
    return settings


def run_lab5(knobs: Knobs, results_dir: Path, smoke: bool) -> int:
    try:
        settings = lab5_settings(knobs, smoke)
        settings["port"] = lab5_port(load(settings["stack"]).port)
        folder = results_dir / new_run_id("lab5-coordinated-omission")
        coordinated_omission(settings, folder)
    except KnobError as exc:
        print(str(exc))
        return 2
    except Exception as exc:
        if isinstance(exc, StepError):
            print(exc.explain())
            return 1
        raise
    print(f"\nLab 5 report: {_shown(folder / lab5_report.REPORT_FILE)}")
    data, chart = folder / lab5.DATA_FILE, folder / lab5_report.CHART_FILE
    print(f"  data: {_shown(data)}; chart: {_shown(chart)}")
    print("  what to look for and the questions: docs/labs/5-coordinated-omission.md")
    return 0


def lab5_port(port: int) -> int:
    """The stack's own port, or any free one when something else listens there."""
    free = port_or_free(port)
    if free != port:
        print(f"lab 5: port {port} is in use; the stack listens on {free} instead")
    return free


def _shown(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.relative_to(REPO_ROOT))
    return str(path)
