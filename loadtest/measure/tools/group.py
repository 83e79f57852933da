"""One load spread over several client hosts, and their results merged truthfully.

A `ClientGroup` is made of client hosts, each an `Executor` (a loadgen
container on its own Docker engine, or this host). `run_load` is the one entry
for a measurement: a plain executor runs the tool as always; a group splits
the `LoadSpec` (`split_spec`), starts every host's tool at the same moment and
merges the parsed results (`merge_results`):

- counts and bytes are summed, and so are the hosts' own rates;
- latency percentiles come from the merged raw data, never from averaging
  the hosts' percentiles: each host's whole latency histogram (wrk's, exported
  by its report script; oha's, reduced from its per-request records) is
  summed, and the percentiles are read from the sum. A host whose histogram
  is missing or truncated leaves the merged percentiles out, with the reason;
- each host's share (connections, rate, requests, latency, CPU) is kept in
  `details["hosts"]`, and whether the client was the limit is judged per host.

Histograms are lists of [microseconds, count] pairs sorted by value. The
percentile p of N recorded values is the smallest value whose cumulative count
exceeds p% of N (rank floor(p·N/100) + 1, capped at N). That is wrk's own rule
(stats_percentile: rank = round(p/100·N + 0.5)) and oha's (index floor(p/100·N)
of its sorted latencies), so a group of one host gives the tool's own figures.

ab and h2load are refused: see REFUSALS.
"""

from __future__ import annotations

import math
import re
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

from loadtest.core.knobs import MERGEABLE_TOOLS
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.base import (
    ERROR_KINDS,
    PERCENTILES,
    Executor,
    LoadResult,
    LoadSpec,
    Tool,
    ToolError,
    client_bound,
    latency_key,
    tool_cpu_share,
)

# A group's `where`, recorded with every measurement: "clients:" and the hosts'
# labels joined by "+", e.g. "clients:lab1+lab2".
WHERE_PREFIX = "clients:"
WHERE_SEPARATOR = "+"
# Why a tool cannot spread its load over several client hosts.
REFUSALS = {
    "ab": (
        "ab cannot run over several client hosts: its report is a summary only (min, mean, "
        "sd, max and percentiles in whole milliseconds), and percentiles cannot be merged "
        "across hosts without each host's raw latencies; use wrk or oha"
    ),
    "h2load": (
        "h2load cannot run over several client hosts: its report is a summary only (min, "
        "max, mean, sd), its per-request log is a file left on the client host, and its "
        "re-runs after a server ends connections are not split across hosts; use wrk or oha"
    ),
}
# Every host's tool waits at most this long for the others before the load starts.
START_TIMEOUT_S = 60.0
# Where a tool that writes per-request records keeps them on its host (removed after).
RECORDS_FOLDER = "/tmp"
NOTE_GROUP = (
    "load from {n} client hosts ({labels}), started together; counts, bytes and rates are "
    "the hosts' sums, each host's share is in details.hosts"
)
NOTE_MERGED = (
    "latency percentiles, mean and stdev from the hosts' merged latency histograms "
    "({values} distinct microsecond values): percentile p is the smallest value whose "
    "cumulative count exceeds p% of the total"
)
NOTE_BUSIEST = (
    "tool_cpu_s and wall_s are those of the busiest client host, {label} ({share:.0%} of its "
    "{cores} core(s)), so that a client-bound test on this result judges the busiest host; "
    "every host is judged in details.hosts"
)
NOTE_LEFT_OUT = "latency percentiles and stdev left out: {}"


@dataclass(frozen=True)
class Member:
    """One client host of a group: its name and where its load tool runs."""

    label: str
    executor: Executor


@dataclass
class MemberRun:
    """One host's share of a group's load, and what came of it."""

    member: Member
    spec: LoadSpec
    raw_prefix: Path
    records: str  # where the host's tool keeps per-request records (oha), on that host
    command: list
    started: float | None = None
    ended: float | None = None
    result: LoadResult | None = None
    error: BaseException | None = None


class ClientGroup:
    """Several client hosts that carry one load together (see the module's docstring).

    It stands where an executor stands (`where`, `binary`, `output`, `argv`), but a
    load is given to it whole (`run`, through `run_load`), never as a command line.
    """

    def __init__(self, members: list[tuple[str, Executor]]) -> None:
        if not members:
            raise ToolError("a client group needs at least one client host")
        labels = [label for label, _ in members]
        file_names = {file_safe(label) for label in labels}
        if len(set(labels)) != len(labels) or len(file_names) != len(labels):
            raise ToolError(f"client hosts need distinct names: {labels}")
        self.members = [Member(label, executor) for label, executor in members]
        self.where = WHERE_PREFIX + WHERE_SEPARATOR.join(labels)

    @property
    def labels(self) -> list[str]:
        return [member.label for member in self.members]

    def binary(self, tool: Tool) -> str:
        """The tool's program on the first host, once every host is known to have it."""
        programs = []
        for member in self.members:
            try:
                programs.append(member.executor.binary(tool))
            except ToolError as exc:
                raise ToolError(f"client host {member.label}: {exc}") from None
        return programs[0]

    def output(self, command: list[str]) -> str:
        """A short command (a version query) on the first host: they run the same image."""
        return self.members[0].executor.output(command)

    def argv(self, command: list[str], cpus: tuple[int, ...] | None) -> list[str]:
        return self.members[0].executor.argv(command, cpus)

    def run_tool(self, command, raw_prefix, timeout_s, cpus=None, priority=0):
        raise ToolError(
            "a client group splits a load, not a command line: run it with group.run_load"
        )

    def run(self, tool: Tool, spec: LoadSpec, raw_prefix: Path) -> LoadResult:
        """Split the load, run every host's share started together, merge the results.

        A host that fails does not stop the others (no load is left running):
        once every host is done, the failure is raised with the host's name.
        """
        refuse_unmergeable(tool)
        self.binary(tool)  # every host has the tool before any load starts
        runs = self.prepare(tool, spec, raw_prefix)
        run_started_together(tool, runs)
        raise_failures(runs)
        merged = merge_results(tool.name, [(r.member.label, r.spec, r.result) for r in runs])
        # How far apart the hosts' runs were launched from here; each tool then starts
        # after its own executor's latency (a `docker exec` over SSH), not measured.
        starts = [r.started for r in runs]
        merged.details["start_skew_s"] = round(max(starts) - min(starts), 6)
        merged.details["load_window_s"] = round(load_window(runs), 6)
        return merged

    def prepare(self, tool: Tool, spec: LoadSpec, raw_prefix: Path) -> list[MemberRun]:
        runs = []
        for member, part in zip(self.members, split_spec(spec, len(self.members))):
            records = f"{RECORDS_FOLDER}/serverlab-{tool.name}-{uuid.uuid4().hex}.records"
            runs.append(MemberRun(
                member=member,
                spec=part,
                raw_prefix=raw_prefix.with_name(f"{raw_prefix.name}.{file_safe(member.label)}"),
                records=records,
                command=tool.command_for_merge(part, records),
            ))  # fmt: skip
        return runs


def load_window(runs: list[MemberRun]) -> float:
    """Seconds from the first host's load start to the last one's end: the span the
    server was loaded. Each host's end is when its tool returned here, and its start
    that end minus the tool's own duration (the `docker exec` latency before a tool
    starts differs from host to host and is not in it)."""
    ends = [run.ended for run in runs]
    starts = [run.ended - run.result.duration_s for run in runs]
    return max(ends) - min(starts)


def run_load(tool: Tool, spec: LoadSpec, raw_prefix: Path, executor: Executor) -> LoadResult:
    """The one way a measurement runs its load tool: on one executor, or split over a group."""
    if isinstance(executor, ClientGroup):
        return executor.run(tool, spec, raw_prefix)
    return tool.run(spec, raw_prefix, executor)


def file_safe(label: str) -> str:
    """A host's name as a part of a file name (an ssh:// URL has slashes)."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", label)


def refuse_unmergeable(tool: Tool) -> None:
    if tool.name in MERGEABLE_TOOLS:
        return
    raise ToolError(
        REFUSALS.get(
            tool.name,
            f"{tool.name} cannot run over several client hosts: it gives no raw latencies "
            "to merge; use wrk or oha",
        )
    )


# ---------------------------------------------------------------- splitting


def split_spec(spec: LoadSpec, n: int) -> list[LoadSpec]:
    """`spec` shared by n client hosts: connections as evenly as possible (the first
    hosts take the remainder), an open-loop rate and ab's request count in
    proportion to each host's connections; everything else the same. Each host
    gets one connection at least: CONNECTIONS is never fewer than CLIENT_HOSTS
    (core/knobs.validate_hosts)."""
    if n < 1:
        raise ToolError(f"a load is shared by at least one client host, not {n}")
    base, remainder = divmod(spec.connections, n)
    connections = [base + (1 if i < remainder else 0) for i in range(n)]
    rates = [spec.rate * c / spec.connections for c in connections] if spec.rate else None
    requests = proportional_counts(spec.requests, connections) if spec.requests else None
    return [
        replace(
            spec,
            connections=c,
            rate=rates[i] if rates else spec.rate,
            requests=requests[i] if requests else spec.requests,
        )
        for i, c in enumerate(connections)
    ]


def proportional_counts(total: int, weights: list[int]) -> list[int]:
    """`total` split in proportion to `weights`, summing exactly (largest remainders;
    ties go to the earlier share)."""
    whole = sum(weights)
    exact = [Fraction(total * w, whole) for w in weights]
    counts = [math.floor(x) for x in exact]
    by_remainder = sorted(range(len(weights)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in by_remainder[: total - sum(counts)]:
        counts[i] += 1
    if min(counts) < 1:
        raise ToolError(
            f"{total} request(s) cannot be shared by {len(weights)} client hosts: "
            "each host needs at least one"
        )
    return counts


# ----------------------------------------------------------------- running


def run_started_together(tool: Tool, runs: list[MemberRun]) -> None:
    """Every host's run in its own thread, released at once by a barrier."""
    gate = threading.Barrier(len(runs), timeout=START_TIMEOUT_S)
    threads = [
        threading.Thread(target=run_member, args=(tool, run, gate), daemon=True) for run in runs
    ]
    for thread in threads:
        thread.start()
    join_all(threads)


def run_member(tool: Tool, run: MemberRun, gate: threading.Barrier) -> None:
    """One host's share: run, parse, record, complete; any failure is kept for later."""
    executor = run.member.executor
    try:
        gate.wait()
        run.started = time.monotonic()
        code, out, err, cpu, wall = tool.execute(run.spec, run.command, run.raw_prefix, executor)
        run.ended = time.monotonic()
        result = tool.parse(out, err, code)
        result = tool.finish(result, run.spec, run.command, code, cpu, wall, executor)
        tool.complete_for_merge(result, run.records, executor)
        run.result = result
    except threading.BrokenBarrierError:
        run.error = ToolError("not started: another client host could not start")
    except Exception as exc:  # raised with the host's name once every host is done
        run.error = exc


def join_all(threads: list[threading.Thread]) -> None:
    """Wait for every host's load. An interrupt waits too: the tools run in
    threads that cannot be stopped from here, and each ends at its own duration
    (or its deadline), so no load is left running."""
    interrupted = None
    for thread in threads:
        while thread.is_alive():
            try:
                thread.join()
            except KeyboardInterrupt as exc:
                interrupted = exc
    if interrupted is not None:
        raise interrupted


def raise_failures(runs: list[MemberRun]) -> None:
    failed = [run for run in runs if run.error is not None]
    if not failed:
        return
    unexpected = [run for run in failed if not isinstance(run.error, ToolError)]
    if unexpected:
        error = unexpected[0].error
        error.add_note(f"on client host {unexpected[0].member.label}")
        raise error
    message = "; ".join(f"client host {run.member.label}: {run.error}" for run in failed)
    raise ToolError(message) from failed[0].error


# ----------------------------------------------------------------- merging


def merge_results(tool_name: str, parts: list[tuple[str, LoadSpec, LoadResult]]) -> LoadResult:
    """One result from the hosts' (label, their share of the spec, their result)."""
    tool = get_tool(tool_name)
    results = [result for _, _, result in parts]
    hosts = [host_summary(tool, label, spec, result) for label, spec, result in parts]
    merged = LoadResult(tool=tool_name)
    add_counts(merged, results)
    merged.ok = all(result.ok for result in results)
    latency_problem = merge_latency(merged, parts)
    busiest = max(hosts, key=lambda host: host["tool_cpu_share"])
    merged.tool_cpu_s, merged.wall_s = busiest["tool_cpu_s"], busiest["wall_s"]
    merged.command = list(results[0].command)
    merged.exit_code = next((r.exit_code for r in results if r.exit_code), results[0].exit_code)
    problems = [f"{label}: {result.problem}" for label, _, result in parts if result.problem]
    merged.problem = "; ".join([*problems, *([latency_problem] if latency_problem else [])])
    labels = [label for label, _, _ in parts]
    merged.notes = [
        *merged_notes(tool, parts),
        NOTE_GROUP.format(n=len(parts), labels=", ".join(labels)),
        *merged.notes,
        NOTE_BUSIEST.format(
            label=busiest["label"], share=busiest["tool_cpu_share"], cores=busiest["tool_cores"]
        ),
    ]
    merged.details = {"hosts": hosts}
    return merged


def add_counts(merged: LoadResult, results: list[LoadResult]) -> None:
    """Counts and bytes summed; rates are the sum of each host's own rate."""
    merged.requests = sum(r.requests for r in results)
    merged.bytes_total = sum(r.bytes_total for r in results)
    merged.rps = sum(r.rps for r in results)
    merged.bytes_per_s = sum(r.bytes_per_s for r in results)
    merged.duration_s = max(r.duration_s for r in results)
    errors = Counter(dict.fromkeys(ERROR_KINDS, 0))
    statuses = Counter()
    for result in results:
        errors.update(result.errors)
        statuses.update(result.status_counts)
    merged.errors = dict(errors)
    merged.status_counts = dict(sorted(statuses.items()))


def host_summary(tool: Tool, label: str, spec: LoadSpec, result: LoadResult) -> dict:
    """One host's share and figures, and whether it was the limit."""
    cores = tool.usable_cores(spec)
    return {
        "label": label,
        "connections": spec.connections,
        "rate": spec.rate,
        "requests": result.requests,
        "rps": result.rps,
        "bytes_total": result.bytes_total,
        "errors_total": result.errors_total,
        "errors": dict(result.errors),
        "latency_p50_ms": result.latency_ms.get("p50"),
        "latency_p99_ms": result.latency_ms.get("p99"),
        "tool_cpu_s": result.tool_cpu_s,
        "wall_s": result.wall_s,
        "tool_cores": cores,
        "tool_cpu_share": round(tool_cpu_share(result.tool_cpu_s, result.wall_s, cores), 4),
        "client_bound": client_bound(result.tool_cpu_s, result.wall_s, cores),
        "command": result.command,
        "exit_code": result.exit_code,
        "ok": result.ok,
        "problem": result.problem,
    }


def merged_notes(tool: Tool, parts: list[tuple[str, LoadSpec, LoadResult]]) -> list[str]:
    """The tool's standing notes once; any other note (a count, a host's own figure)
    with the name of its host, even when two hosts happen to say the same."""
    # What the parser notes on every result, whatever the output: those of no output at all.
    standing = tool.parse("", "", 0).notes
    notes = [note for note in standing if any(note in r.notes for _, _, r in parts)]
    for label, _, result in parts:
        notes += [f"{label}: {note}" for note in result.notes if note not in standing]
    return list(dict.fromkeys(notes))


def merge_latency(merged: LoadResult, parts: list[tuple[str, LoadSpec, LoadResult]]) -> str:
    """Fill the merged latency figures; return why the percentiles are left out, or ""."""
    results = [result for _, _, result in parts]
    answered = [r for r in results if r.latency_ms]
    if not answered:
        return ""
    missing = [f"{label}: {why_no_histogram(r)}" for label, _, r in parts if not has_histogram(r)]
    merged.latency_ms = {
        "mean": weighted_mean_ms(answered),
        "stdev": None,
        "min": min(r.latency_ms["min"] for r in answered),
        "max": max(r.latency_ms["max"] for r in answered),
        **{latency_key(p): None for p in PERCENTILES},
    }
    if missing:
        reason = NOTE_LEFT_OUT.format("; ".join(missing))
        merged.notes.append(reason)
        return reason
    histogram = merge_histograms([r.details["histogram_us"] for r in results])
    if not histogram:
        return ""
    points = curve_points(results)
    by_percent = histogram_percentiles(histogram, [*PERCENTILES, *points])
    _, stdev_us = histogram_mean_stdev(histogram)
    merged.latency_ms["stdev"] = stdev_us / 1000
    merged.latency_ms.update({latency_key(p): by_percent[p] / 1000 for p in PERCENTILES})
    merged.latency_curve = [[p, by_percent[p] / 1000] for p in points]
    merged.notes.append(NOTE_MERGED.format(values=len(histogram)))
    return ""


def has_histogram(result: LoadResult) -> bool:
    return result.details.get("histogram_us") is not None


def why_no_histogram(result: LoadResult) -> str:
    if result.details.get("histogram_truncated"):
        return "its latency histogram export ran out of its CPU budget (truncated)"
    if result.details.get("histogram_missing"):
        return result.details["histogram_missing"]
    if not result.ok:
        return "its tool gave no report"
    return "its tool gave no latency histogram"


def weighted_mean_ms(results: list[LoadResult]) -> float:
    """The mean over every recorded latency: each host's mean weighted by how many
    latencies it recorded (its histogram's count, else its responses)."""
    weights = [histogram_count(r) or r.requests for r in results]
    if sum(weights) == 0:
        return results[0].latency_ms["mean"]
    total = sum(r.latency_ms["mean"] * w for r, w in zip(results, weights))
    return total / sum(weights)


def histogram_count(result: LoadResult) -> int:
    histogram = result.details.get("histogram_us") or []
    return sum(count for _, count in histogram)


def curve_points(results: list[LoadResult]) -> list[float]:
    """The percentiles of the hosts' own curves: the tool's usual points."""
    return sorted({point for r in results for point, _ in r.latency_curve})


# -------------------------------------------------------------- histograms


def merge_histograms(histograms: list[list]) -> list[list[int]]:
    """The sum of [value, count] histograms, sorted by value."""
    counts: Counter = Counter()
    for histogram in histograms:
        for value, count in histogram:
            counts[value] += count
    return [[value, counts[value]] for value in sorted(counts) if counts[value]]


def percentile_rank(percent: float, total: int) -> int:
    """The 1-based rank of percentile `percent` among `total` values: floor(p·N/100) + 1,
    capped at N, with p taken as the decimal it is written as (99.9, not its float)."""
    return min(total, math.floor(Fraction(str(percent)) * total / 100) + 1)


def histogram_percentiles(histogram: list, percents) -> dict:
    """{percent: the smallest value whose cumulative count exceeds percent% of the total}."""
    total = sum(count for _, count in histogram)
    wanted = sorted((percentile_rank(p, total), p) for p in set(percents))
    found = {}
    cumulative = 0
    for value, count in histogram:
        cumulative += count
        while wanted and wanted[0][0] <= cumulative:
            found[wanted.pop(0)[1]] = value
    return found


def histogram_mean_stdev(histogram: list) -> tuple[float, float]:
    """Mean and sample standard deviation (n - 1, as wrk computes it) of a histogram."""
    total = sum(count for _, count in histogram)
    mean = sum(value * count for value, count in histogram) / total
    if total < 2:
        return mean, 0.0
    squares = sum(count * (value - mean) ** 2 for value, count in histogram)
    return mean, math.sqrt(squares / (total - 1))


def client_load(tool: Tool, spec: LoadSpec, result: LoadResult) -> tuple[float, bool, int]:
    """(share of its cores the tool used, client-bound, those cores) for the record.

    A merged result is judged per host: the busiest host's share and cores,
    and client-bound when any host was (each host has only its own share of
    the connections, so its wrk may use fewer threads than the whole spec's).
    """
    hosts = result.details.get("hosts") if result.details else None
    if not hosts:
        cores = tool.usable_cores(spec)
        share = tool_cpu_share(result.tool_cpu_s, result.wall_s, cores)
        return share, client_bound(result.tool_cpu_s, result.wall_s, cores), cores
    busiest = max(hosts, key=lambda host: host["tool_cpu_share"])
    bound = any(host["client_bound"] for host in hosts)
    return busiest["tool_cpu_share"], bound, busiest["tool_cores"]
