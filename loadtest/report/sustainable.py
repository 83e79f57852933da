"""The sustainable-throughput tables (RATE=slo): a ranking per scenario and connections."""

from __future__ import annotations

SLO_HEAD = ["#", "stack", "sustainable req/s", "its percentile (ms)", "peak req/s (wrk)",
            "share of peak", "rounds", "note"]  # fmt: skip
SLO_NOTE = (
    "Sustainable throughput: the highest constant rate (oha, latency corrected) at which "
    "the objective's percentile stayed within the objective with no errors and the whole "
    "rate answered, found by bisection from the wrk peak and confirmed by a second run "
    "(docs/methodology.md, \"Sustainable throughput\"). Ranked by that rate, not by the peak."
)


def slo_tables(rows: list[dict]) -> list[tuple[str, list[list[str]]]]:
    """(title, table rows) per scenario x connections that ran the search."""
    searched = [r for r in rows if r.get("rate_spec") == "slo"]
    peaks = {
        (r["stack"], r["scenario"], r["connections"], r.get("cpu_quota")): r["rps_median"]
        for r in rows
        if r.get("phase") == "peak"
    }
    groups: dict[tuple, list[dict]] = {}
    for row in searched:
        groups.setdefault((row["scenario"], row["connections"]), []).append(row)
    tables = []
    for (scenario, connections), group in sorted(groups.items()):
        objective = next((r["slo_objective_ms"] for r in group if r.get("slo_objective_ms")), "")
        ranked = sorted(group, key=lambda r: (r["ceiling"], -(r.get("slo_rps") or 0)))
        cells = []
        for place, row in enumerate(ranked, start=1):
            peak = peaks.get((row["stack"], scenario, connections, row.get("cpu_quota")))
            found = row.get("slo_rps")
            note = row.get("slo_reason") if found else ""
            cells.append([
                "-" if row["ceiling"] or not found else str(place),
                row.get("display_name") or row["stack"],
                f"{found:,.0f}" if found else f"none: {row.get('slo_reason') or 'not found'}",
                f"{row['slo_percentile_ms']:.2f}" if row.get("slo_percentile_ms") else "-",
                f"{peak:,.0f}" if peak else "-",
                f"{row['slo_share_of_peak']:.0%}" if row.get("slo_share_of_peak") else "-",
                str(row["runs"]),
                note or "",
            ])  # fmt: skip
        tables.append((f"{scenario}, {connections} connections, objective {objective:g} ms", cells))
    return tables
