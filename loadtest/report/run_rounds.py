"""One figure per round of a committed run, with the flags of each round.

A claim is tested over rounds (core/change.py), so each figure is read per round
from the run's `results.jsonl`, flagged by report/flags.py as `make compare` marks
them. A run committed with its `summary.csv` alone still has its rounds of
requests/s when it ran three or fewer: min, median and max are then the rounds
themselves. Its other figures are medians, and are shown, not tested.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from loadtest.bench.results import RESULTS_FILE, RUN_FILE, read_records
from loadtest.core.manifest import REPO_ROOT
from loadtest.report.claims import Setting
from loadtest.report.flags import FLAGS, JIT_UNREAD, mark_rounds
from loadtest.report.summary import aggregation

MEASUREMENTS_DIR = REPO_ROOT / "docs" / "measurements"
SUMMARY_FILE = "summary.csv"
# The figures of a response that do not vary from round to round: judged on the floor alone.
EXACT_METRICS = ("header_bytes", "bytes_per_response")
# Figures that may be zero: tested as bounds on every round, never as ratios.
COUNT_METRICS = ("error_share", "errors")


def _errors(result: dict) -> int:
    return sum(result.get("errors", {}).values())


def _error_share(result: dict) -> float | None:
    errors = result.get("errors", {})
    attempted = result.get("requests", 0) + _errors(result) - errors.get("non2xx", 0)
    return _errors(result) / attempted if attempted else None


def _server(record: dict, key: str):
    return (record.get("server") or {}).get(key)


# How each metric is read from one measurement record.
READERS = {
    "rps": lambda r: r["result"]["rps"],
    "latency_mean_ms": lambda r: r["result"]["latency_ms"].get("mean"),
    "latency_p75_ms": lambda r: r["result"]["latency_ms"].get("p75"),
    "latency_p95_ms": lambda r: r["result"]["latency_ms"].get("p95"),
    "mb_per_s": lambda r: r["result"]["bytes_per_s"] / 1e6,
    "bytes_per_response": lambda r: (r["result"]["bytes_total"] / r["result"]["requests"]
                                     if r["result"]["requests"] else None),  # fmt: skip
    "header_bytes": lambda r: (r.get("response") or {}).get("header_bytes"),
    "rss_mb": lambda r: (_server(r, "rss_peak_bytes") or 0) / 2**20 or None,
    "cpu_pct": lambda r: _server(r, "cpu_mean_pct"),
    "error_share": lambda r: _error_share(r["result"]),
    "errors": lambda r: _errors(r["result"]),
}
# The summary.csv column of each metric (how it aggregates the rounds: summary.aggregation).
SUMMARY_COLUMNS = {
    "rps": "rps_median", "latency_mean_ms": "latency_mean_ms", "latency_p75_ms": "latency_p75_ms",
    "latency_p95_ms": "latency_p95_ms", "mb_per_s": "mb_per_s",
    "bytes_per_response": "bytes_per_response", "header_bytes": "header_bytes",
    "rss_mb": "rss_peak_mb", "cpu_pct": "server_cpu_mean_pct", "error_share": "error_rate",
    "errors": "errors_total",
}  # fmt: skip


@dataclass(frozen=True)
class Rounds:
    """One figure of a run: its value in each round, and each round's flags."""

    values: list[float]
    flags: list[list[str]]
    # Why there are no rounds to test ("" when there are): the summary keeps one figure of
    # them, made by the rule this names.
    missing: str = ""
    median: float | None = None  # that figure, shown when the rounds are missing

    @property
    def flag_counts(self) -> dict[str, int]:
        names = [name for flags in self.flags for name in flags if name != JIT_UNREAD]
        return {name: names.count(name) for name in dict.fromkeys(names)}


class CommittedRun:
    """A run folder under docs/measurements: its knobs and its figures per round."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.name = folder.name
        self.info = json.loads((folder / RUN_FILE).read_text())
        self.from_records = (folder / RESULTS_FILE).is_file()
        self._cases = self._records() if self.from_records else self._summary_rows()

    @property
    def knobs(self) -> dict:
        return self.info.get("knobs") or {}

    def _records(self) -> dict[tuple, list[dict]]:
        records, _ = mark_rounds(read_records(self.folder / RESULTS_FILE))
        cases: dict[tuple, list[dict]] = {}
        for record in records:
            if record.get("kind") == "measurement" and record.get("status") == "ok":
                if record.get("phase", "measure") == "measure":
                    cases.setdefault(self._key(record), []).append(record)
        return cases

    def _summary_rows(self) -> dict[tuple, list[dict]]:
        with (self.folder / SUMMARY_FILE).open() as handle:
            rows = list(csv.DictReader(handle))
        return {self._key(row): [row] for row in rows if row.get("phase", "measure") == "measure"}

    @staticmethod
    def _key(found: dict) -> tuple:
        quota, cores = found.get("cpu_quota"), found.get("server_cores")
        return (found["stack"], found["scenario"], int(found["connections"]),
                float(quota) if quota not in (None, "") else None,
                int(cores) if cores not in (None, "") else None)  # fmt: skip

    def find(self, setting: Setting) -> list[dict] | None:
        """The records (or the one summary row) of a setting; a quota or core count
        the claim leaves open matches the run's one value of it."""
        for key, found in self._cases.items():
            stack, scenario, connections, quota, cores = key
            if (stack, scenario, connections) != (setting.stack, setting.scenario,
                                                  setting.connections):  # fmt: skip
                continue
            # A quota is a share of the server's cores: 1 is no cap, as a run records it.
            if setting.quota is not None and (quota if quota is not None else 1.0) != setting.quota:
                continue
            if setting.cores is not None and cores != setting.cores:
                continue
            return found
        return None

    def rounds(self, setting: Setting, metric: str) -> Rounds | None:
        found = self.find(setting)
        if found is None:
            return None
        if self.from_records:
            values = [READERS[metric](r) for r in found]
            kept = [(v, r.get("_flags", [])) for v, r in zip(values, found, strict=True)
                    if v is not None]  # fmt: skip
            if not kept:
                return Rounds([], [], f"no {metric} in its records")
            return Rounds([v for v, _ in kept], [f for _, f in kept])
        return summary_rounds(found[0], metric)


def summary_rounds(row: dict, metric: str) -> Rounds:
    """The rounds a summary row still holds: with three runs or fewer, requests/s per
    round is its min, median and max; any other figure is one number over the rounds."""
    runs = int(row["runs"] or 0)
    flags = row_flag_rounds(row, runs)
    median = _number(row.get(SUMMARY_COLUMNS[metric]))
    if metric == "rps" and runs == 3:
        return Rounds([float(row["rps_min"]), float(row["rps_median"]), float(row["rps_max"])], flags)
    if metric in EXACT_METRICS and median is not None:
        return Rounds([median] * runs, flags)
    statistic = aggregation(SUMMARY_COLUMNS[metric])
    return Rounds([], flags, f"{SUMMARY_FILE} only: {statistic}, no rounds", median)


def row_flag_rounds(row: dict, runs: int) -> list[list[str]]:
    """Per-round flags rebuilt from a summary row's counts (which rounds is not known:
    the first n are marked, which is all a verdict needs: whether any is)."""
    counted = [(flag.name, int(row.get(flag.column) or 0)) for flag in FLAGS]
    counted += [("client-bound", int(row.get("client_bound_runs") or 0)),
                ("NOISY", int(row.get("noisy_runs") or 0))]  # fmt: skip
    return [[name for name, n in counted if i < n] for i in range(runs)]


def _number(text) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def open_run(name: str, root: Path = MEASUREMENTS_DIR) -> CommittedRun:
    return CommittedRun(root / name)
