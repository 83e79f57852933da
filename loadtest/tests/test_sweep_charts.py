"""The sweep charts draw every point they are given (report/sweep_charts.py): panels
that share their y-axis once hid the highest points of the panels drawn last."""

from __future__ import annotations

from loadtest.report import sweep_charts


def row(stack: str, share: float, rps: float, connections: int = 9) -> dict:
    return {"stack": stack, "display_name": stack, "scenario": "kb10", "ceiling": False,
            "rate_spec": "", "rps_median": rps, "connections": connections,
            "cpu_share": share, "server_cores": 1}  # fmt: skip


def test_every_panel_of_the_quota_chart_shows_its_highest_point(tmp_path, monkeypatch):
    drawn = {}

    def keep(fig, path, note=""):
        drawn["axes"] = [ax for ax in fig.axes if ax.get_visible()]
        return path

    monkeypatch.setattr(sweep_charts, "save", keep)
    # The stack drawn last (by name) is by far the fastest, as uvloop was in lab 4.
    rows = [row(stack, share, rps * scale)
            for stack, scale in (("a-go", 1.0), ("b-webflux", 0.8), ("c-uvloop", 3.0))
            for share, rps in ((0.25, 10_000), (0.41, 15_000), (0.65, 18_000))]  # fmt: skip
    assert sweep_charts.rps_vs_share(rows, "kb10", tmp_path / "rps-share-kb10.png")
    highest = max(r["rps_median"] for r in rows)
    for ax in drawn["axes"]:
        low, high = ax.get_ylim()
        assert low == 0 and high >= highest, (ax.get_title(), ax.get_ylim())
