"""results/index.html: every run under the results folder, newest first.

Written after each `make bench` and by `make report`, from each run's
run.json and results.jsonl alone; a folder whose run.json is missing or
broken is listed as such, never the reason the page is not written. The
page is self-contained (no script, no network) and links each run's
report.html and summary.md by relative path.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from loadtest.bench.results import RESULTS_FILE, RUN_FILE
from loadtest.report.interactive import OFFLINE_META

INDEX_FILE = "index.html"
HEAD = ["run", "started", "profile", "stacks", "host", "commit", "status", "measurements",
        "reports"]  # fmt: skip
CSS = """
body { font-family: -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif; margin: 2em;
       color: #222; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.broken { color: #b00; }
"""


def measurement_count(path: Path) -> int:
    if not path.is_file():
        return 0
    with path.open(encoding="utf-8", errors="replace") as handle:
        return sum(1 for line in handle if '"kind": "measurement"' in line)


def run_entry(folder: Path) -> dict:
    """What the index shows of one run folder (`broken` says what is wrong with it)."""
    entry = {"id": folder.name, "folder": folder, "broken": ""}
    try:
        run = json.loads((folder / RUN_FILE).read_text())
    except FileNotFoundError:
        run, entry["broken"] = {}, f"no {RUN_FILE}"
    except (OSError, ValueError) as exc:
        run, entry["broken"] = {}, f"unreadable {RUN_FILE}: {exc}"
    host = run.get("host") or {}
    git = run.get("git") or {}
    commit = (git.get("commit") or "")[:10]
    entry.update(
        started=run.get("started_at", ""),
        profile=(run.get("knobs") or {}).get("profile", ""),
        stacks=", ".join(sorted(run.get("stacks") or {})),
        host=f"{host.get('cpu_model', '?')}, {host.get('cores_available', '?')} cores"
        if host
        else "",
        commit=commit + (" (dirty)" if git.get("dirty") else ""),
        status=run.get("status", "") or entry["broken"],
        measurements=measurement_count(folder / RESULTS_FILE),
    )
    return entry


def runs_under(root: Path) -> list[dict]:
    folders = [p for p in root.iterdir() if p.is_dir() and
               ((p / RUN_FILE).exists() or (p / RESULTS_FILE).exists())]  # fmt: skip
    entries = [run_entry(folder) for folder in folders]
    return sorted(entries, key=lambda e: (e["started"] or e["id"]), reverse=True)


def links(entry: dict) -> str:
    found = [name for name in ("report.html", "summary.md") if (entry["folder"] / name).is_file()]
    return " ".join(
        f'<a href="{html.escape(entry["id"])}/{name}">{name}</a>' for name in found
    ) or "(no report yet: make report RUN=" + html.escape(entry["id"]) + ")"


def write_index(root: Path) -> Path:
    """Write root/index.html listing every run; returns its path."""
    entries = runs_under(root)
    rows = []
    for e in entries:
        cells = [html.escape(str(e[key])) for key in
                 ("id", "started", "profile", "stacks", "host", "commit", "status",
                  "measurements")]  # fmt: skip
        status_class = ' class="broken"' if e["broken"] else ""
        rows.append("<tr>" + "".join(
            f"<td{status_class if i == 6 else ''}>{c}</td>" for i, c in enumerate(cells))
            + f"<td>{links(e)}</td></tr>")  # fmt: skip
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">' + OFFLINE_META +
        f"<title>serverlab runs</title><style>{CSS}</style></head><body>"
        f"<h1>serverlab runs</h1><p>{len(entries)} run(s) under {html.escape(str(root))}, "
        "newest first. Compare two: <code>make compare RUNS=&lt;old&gt;,&lt;new&gt;</code>.</p>"
        "<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in HEAD) + "</tr></thead><tbody>"
        + "".join(rows) + "</tbody></table></body></html>\n"
    )
    path = root / INDEX_FILE
    path.write_text(page)
    return path
