"""A/A evidence on disk: results/aa-<first>-<last>/aa.json, written by `make aa`,
read by `make compare` to print the false-alarm rate measured on the same host
and to raise the noise floor to the one measured there.

A host is the same when its CPU model and its number of cores are: the noise
of a 2-core VM says nothing of a 64-core server's.
"""

from __future__ import annotations

import json
from pathlib import Path

AA_FILE = "aa.json"
AA_PREFIX = "aa-"


def host_identity(run: dict) -> tuple:
    host = run.get("host") or {}
    return host.get("cpu_model"), host.get("cores_logical")


def host_noise(results_root: Path, run: dict) -> dict | None:
    """The newest A/A summary measured on the host of `run`, or None."""
    wanted = host_identity(run)
    found = []
    for path in results_root.glob(f"{AA_PREFIX}*/{AA_FILE}"):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if tuple(data.get("host_identity") or ()) == wanted:
            found.append((data.get("written_at", ""), path.parent.name, data))
    if not found:
        return None
    _, folder, data = max(found, key=lambda item: (item[0], item[1]))
    return {**data, "folder": folder}


def noise_line(noise: dict | None) -> str:
    """One sentence for the comparison's head: what A/A runs on this host showed."""
    if not noise:
        return (
            "No A/A runs of this host yet: `make aa` measures how often two runs of the same "
            'thing are called different here (docs/methodology.md, "Is it a change?").'
        )
    return (
        f"A/A runs on this host ({noise['folder']}: {noise['pairs']} pairs of "
        f"{len(noise['runs'])} runs, {noise['knobs_text']}): "
        f"{noise['changes_called']} of {noise['cases_compared']} case comparisons called a change "
        f"({noise['false_alarm_rate']:.1%}) with the same rules; 95% of their differences within "
        f"{noise['floor']:.1%}."
    )
