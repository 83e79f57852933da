"""Printing a report: one line per check and a summary, or JSON."""

from __future__ import annotations

import json


def one_line(text: str) -> str:
    """Details come from servers' bytes; keep each check on one line."""
    return " ".join(str(text).splitlines())


def check_line(check: dict) -> str:
    status = "SKIP" if check.get("skipped") else "PASS" if check["ok"] else "FAIL"
    return f"{status} {check['id']}  {one_line(check['detail'])}"


def info_lines(report: dict) -> list:
    """Recorded, not judged: what a reader of benchmark results wants to know."""
    observed = report["observed"]
    sizes = observed["response_header_bytes"]
    server = observed["server_header"]
    return [
        f"INFO seed  {report['seed']}",
        f"INFO server-header  {server!r}" if server is not None else "INFO server-header  none",
        "INFO response-header-bytes  " + " ".join(f"{key}={value}" for key, value in sizes.items()),
    ]


def summary_line(report: dict) -> str:
    skipped = f", {report['skipped']} skipped" if report.get("skipped") else ""
    return f"{report['passed']} passed, {report['failed']} failed{skipped}"


def to_json(report: dict) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False)
