"""A/A evidence on disk: results/aa-<first>-<last>/aa.json, written by `make aa` (and
the committed ones under docs/measurements), read by `make compare` to print the
false-alarm rate measured on the same host and to take the run-to-run spread of each
case (core/change.py, rule 3).

A host is the same when its CPU model and its number of cores are: the noise
of a 2-core VM says nothing of a 64-core server's. A run-to-run spread is
taken only from A/A runs of the same settings (MATCHED_ON): a 2-s round at 16
connections does not spread like a 10-s one at 256.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from loadtest.core.change import DEFAULT_RUN_TO_RUN_SD

AA_FILE = "aa.json"
AA_PREFIX = "aa-"
# The knobs an A/A's run-to-run spread must share with the runs it is used for.
MATCHED_ON = ("profile", "repeat", "duration", "connections")


def host_identity(run: dict) -> tuple:
    host = run.get("host") or {}
    return host.get("cpu_model"), host.get("cores_logical")


def matched_settings(run: dict) -> dict:
    knobs = run.get("knobs") or {}
    return {knob: knobs.get(knob) for knob in MATCHED_ON}


def settings_text(settings: dict) -> str:
    return " ".join(f"{knob.upper()}={value}" for knob, value in settings.items())


def same_invocation(old_run: dict, new_run: dict) -> bool:
    """Whether two sides come from one invocation of the harness (rounds interleaved in
    one plan): the same run id, start time and host."""
    return bool(old_run.get("run_id")) and all(
        old_run.get(fact) == new_run.get(fact) for fact in ("run_id", "started_at")
    ) and host_identity(old_run) == host_identity(new_run)


def aa_files(roots: Path | list[Path]) -> list[Path]:
    """The A/A summaries under each root: a results folder holds its A/As, and
    docs/measurements also one folder down."""
    found: dict[Path, Path] = {}
    for root in [roots] if isinstance(roots, Path) else roots:
        for pattern in (f"{AA_PREFIX}*/{AA_FILE}", f"*/{AA_PREFIX}*/{AA_FILE}"):
            for path in root.glob(pattern):
                found.setdefault(path.resolve(), path)
    return list(found.values())


def aa_summaries(roots: Path | list[Path], run: dict, leave_out: str = "") -> list[dict]:
    """Every A/A summary measured on the host of `run` under `roots`, newest measurement
    first; without the folder `leave_out` (an A/A written again does not feed on its own
    earlier output)."""
    wanted = host_identity(run)
    found = []
    for path in aa_files(roots):
        if path.parent.name == leave_out:
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if tuple(data.get("host_identity") or ()) == wanted:
            found.append({**data, "folder": path.parent.name})
    return sorted(found, key=measured_when, reverse=True)


def measured_when(summary: dict) -> tuple:
    """When an A/A's runs ended (`written_at` in the summaries written before)."""
    return summary.get("measured_until") or summary.get("written_at", ""), summary["folder"]


def host_noise(roots: Path | list[Path], run: dict) -> dict | None:
    """The newest A/A summary measured on the host of `run`, or None."""
    found = aa_summaries(roots, run)
    return found[0] if found else None


@dataclass(frozen=True)
class RunToRun:
    """Each side's run-to-run spread (sd of log requests/s of a run's offset) per case."""

    same_invocation: bool
    pooled: float  # for a case the A/A did not measure
    source: str  # where the figures come from, in words
    by_case: dict[str, float] = field(default_factory=dict)

    def sd(self, case_name: str) -> float:
        """The case's own spread, never below the pooled one: an estimate from a few runs
        is rough, and the moment estimate is often none where the rounds were noisy."""
        if self.same_invocation:
            return 0.0
        return max(self.by_case.get(case_name, self.pooled), self.pooled)


WITHIN = RunToRun(True, 0.0, "both sides are rounds of one invocation: they share its "
                  "run-to-run offset, which cancels")  # fmt: skip


def run_to_run(roots: Path | list[Path], old_run: dict, new_run: dict,
               leave_out: str = "") -> RunToRun:  # fmt: skip
    """The run-to-run term of a comparison: none within one invocation; across runs the
    newest A/A of the same host kind and settings (MATCHED_ON), else the stated default."""
    if same_invocation(old_run, new_run):
        return WITHIN
    settings = matched_settings(new_run)
    for aa in aa_summaries(roots, new_run, leave_out):
        measured = aa.get("run_to_run")
        if measured and measured.get("matched_on") == settings == matched_settings(old_run):
            spread = measured_spread(measured, aa["folder"])
            if spread is not None:
                return spread
    return default_spread(settings)


def measured_spread(measured: dict, folder: str) -> RunToRun | None:
    """The run-to-run term an A/A's `run_to_run` gives, or None when it measured no case
    (every run had fewer rounds than a spread needs)."""
    if not math.isfinite(measured.get("pooled", math.nan)):
        return None
    settings = measured["matched_on"]
    return RunToRun(False, measured["pooled"], (
        f"separate runs: each side's run-to-run spread per case as `make aa` measured it "
        f"on this host kind with {settings_text(settings)} ({folder}; "
        f"{measured['pooled']:.1%}, their root mean square, for a case it did not "
        "measure and at the least for every case)"), measured["by_case"])  # fmt: skip


def default_spread(settings: dict) -> RunToRun:
    return RunToRun(False, DEFAULT_RUN_TO_RUN_SD, (
        f"separate runs: no `make aa` of this host kind with {settings_text(settings)}, so each "
        f"side carries the default run-to-run spread of {DEFAULT_RUN_TO_RUN_SD:.0%} (sd of log "
        "requests/s), a default, not a measurement"))  # fmt: skip


def noise_line(noise: dict | None, run: dict | None = None) -> str:
    """One sentence for the comparison's head: what A/A runs on this host showed, and
    whether they were measured with the settings of `run`."""
    if not noise:
        return (
            "No A/A runs of this host yet: `make aa` measures how often two runs of the same "
            'thing are called different here (docs/methodology.md, "Is it a change?").'
        )
    return (
        f"A/A runs on this host ({noise['folder']}: {noise['pairs']} pairs of "
        f"{len(noise['runs'])} runs, {noise['knobs_text']}): "
        f"{noise['changes_called']} of {noise['cases_compared']} case comparisons called a change "
        f"({noise['false_alarm_rate']:.1%}); 95% of their differences within "
        f"{noise['floor']:.1%}." + other_settings(noise, run)
    )


def other_settings(noise: dict, run: dict | None) -> str:
    """' They were measured with other settings ...' when the A/A's differ from the run's."""
    measured_with = (noise.get("run_to_run") or {}).get("matched_on")
    if run is None or not measured_with or measured_with == matched_settings(run):
        return ""
    return (f" They were measured with other settings ({settings_text(measured_with)}) than "
            f"these runs ({settings_text(matched_settings(run))}): their rate is the host's, "
            "not this comparison's.")
