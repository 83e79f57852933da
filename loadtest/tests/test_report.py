"""Report generation from a small committed run (real records), and the HTML in Chromium."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from loadtest.report import generate
from loadtest.report.bundle import bundle_path
from loadtest.report.interactive import OFFLINE_META
from loadtest.report.summary import COLUMNS
from loadtest.tests.browser import (CHROMIUM, MISSING, chart_boxes, colored_pixels, inspect,
                                    screenshot)  # fmt: skip

RUN_FIXTURE = Path(__file__).parent / "fixtures" / "run-small"


def reported(tmp_path_factory, recorded: Path) -> Path:
    """A copy of a recorded run (results.jsonl and run.json) with its report generated."""
    folder = tmp_path_factory.mktemp("run") / recorded.name
    folder.mkdir()
    for name in ("results.jsonl", "run.json"):
        shutil.copy(recorded / name, folder / name)
    generate(folder)
    return folder


@pytest.fixture(scope="module")
def report_folder(tmp_path_factory) -> Path:
    return reported(tmp_path_factory, RUN_FIXTURE)


def test_every_output_is_written(report_folder):
    for name in ("summary.csv", "summary.md", "report.html"):
        assert (report_folder / name).stat().st_size > 0, name
    charts = {p.name for p in (report_folder / "charts").glob("*.png")}
    for expected in ("rps-hello.png", "latency-hello.png", "cdf-hello.png",
                     "resources.png", "bytes-per-response.png", "openloop-hello.png",
                     "cdf-openloop-hello.png"):  # fmt: skip
        assert expected in charts


# A real static-tls-smoke run (HTTPS nginx stand-ins for the static stacks, h2load over
# HTTP/2, 1 and 2 server cores at 25/65/100% of them, TTFB per case).
STATIC_FIXTURE = Path(__file__).parent / "fixtures" / "run-static-tls"


@pytest.fixture(scope="module")
def static_folder(tmp_path_factory) -> Path:
    return reported(tmp_path_factory, STATIC_FIXTURE)


def test_static_tls_charts_of_the_2019_experiment(static_folder):
    charts = {p.name for p in (static_folder / "charts").glob("*.png")}
    # Requests/s against CPU quota with a line per core count, the latency
    # distribution per server and configuration, and time to first byte.
    for expected in ("rps-share-page.png", "cdf-config-page.png", "ttfb-page.png"):
        assert expected in charts
        # Written with a 256-colour palette: an empty set of axes is about 3 KB.
        assert (static_folder / "charts" / expected).stat().st_size > 8_000
    # The per-quota chart of a single core count stays out of a core sweep.
    assert "rps-quota-page.png" not in charts
    page = (static_folder / "report.html").read_text()
    images = re.findall(r'<img alt="([^"]+)"', page)
    assert {"rps-share-page", "cdf-config-page", "ttfb-page"} <= set(images)
    assert "SHARED CORES" in page and "time to first byte" in page.lower()


def test_static_tls_summary_has_cores_share_and_ttfb(static_folder):
    with (static_folder / "summary.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert {r["server_cores"] for r in rows} == {"1", "2"}
    assert {r["cpu_share"] for r in rows} == {"0.25", "0.65", "1.0"}
    assert {r["protocol"] for r in rows} == {"h2"}
    for row in rows:
        assert float(row["ttfb_p50_ms"]) <= float(row["ttfb_p90_ms"]) <= float(row["ttfb_p99_ms"])
        assert float(row["ttfb_handshake_p50_ms"]) > 0
        assert (row["shared_cores"] == "True") == (row["server_cores"] == "2")
    keys = [(r["stack"], r["connections"], r["cpu_quota"], r["server_cores"]) for r in rows]
    assert len(keys) == len(set(keys)) == 2 * 2 * 3 * 2


def test_summary_csv_is_tidy(report_folder):
    with (report_folder / "summary.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert rows and list(rows[0]) == COLUMNS
    keys = [(r["stack"], r["scenario"], r["connections"], r["tool"], r["phase"], r["rate_spec"],
             r["cpu_quota"]) for r in rows]  # fmt: skip
    assert len(keys) == len(set(keys)), "one row per stack x scenario x connections (x tool, rate)"
    ceiling = [r for r in rows if r["ceiling"] == "True"]
    stacks = [r for r in rows if r["ceiling"] == "False" and r["tool"] == "wrk"]
    assert ceiling and stacks
    assert all(r["ceiling_rps"] for r in stacks)
    assert any(int(r["runs"]) >= 2 and r["rps_cv"] for r in stacks)


def test_markdown_and_html_say_what_wrk_latency_means(report_folder):
    md = (report_folder / "summary.md").read_text()
    page = (report_folder / "report.html").read_text()
    for text in (md, page):
        assert "coordinated omission" in text
        assert "CLIENT-BOUND" in text


def test_html_is_self_contained(report_folder):
    page = (report_folder / "report.html").read_text()
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # The embedded library's text may name web addresses; the markup around it may not.
    markup = re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", markup), "external reference"
    assert "@import" not in markup
    images = re.findall(r'<img [^>]*src="([^"]+)"', page)
    assert all(src.startswith("data:image/png;base64,") for src in images)
    # Every chart is in the page once: drawn live, or else as its PNG.
    live = set(re.findall(r'<div class="ix-chart" id="([^"]+)"', page))
    pngs = {p.stem for p in (report_folder / "charts").glob("*.png")}
    assert live and live <= pngs
    assert sorted(re.findall(r'<img alt="([^"]+)"', page)) == sorted(pngs - live)


NO_BUNDLE = ("!!! plotly.js basic bundle NOT INSTALLED (no npm?): the page inlines the whole "
             "library; make bootstrap installs it !!!")  # fmt: skip


@pytest.mark.skipif(bundle_path() is None, reason=NO_BUNDLE)
def test_the_page_carries_only_the_chart_code_it_uses(report_folder):
    page = (report_folder / "report.html").read_text()
    library = bundle_path().read_text()
    # The basic partial bundle (scatter, bar, pie: the charts draw scatter traces), not the
    # whole plotly.js; and no chart twice: the page stays small.
    assert library in page and len(library) < 1_500_000
    assert (report_folder / "report.html").stat().st_size < 2_000_000


@pytest.mark.skipif(CHROMIUM is None, reason=MISSING)
def test_report_opens_in_headless_chromium_with_every_chart_drawn_and_live(report_folder):
    page = report_folder / "report.html"
    seen = inspect(page)
    assert seen.get("done") == "1", seen
    assert int(seen["images"]) >= 4 and seen["broken"] == "0", "a PNG chart did not load"
    charts = int(seen["charts"])
    assert charts >= 3 and seen["drawn"] == str(charts), f"{seen['drawn']} of {charts} drawn"
    assert (seen["errors"], seen["console"]) == ("0", "0"), seen
    # Nothing was fetched, nor even tried: the page holds all it needs.
    assert seen["blocked"] == "0", seen["blocked-what"]
    assert seen["fetched"] == "", seen["fetched"]
    # Hover names the figure and what limited it.
    assert "req/s" in seen["hover"] and "limited by" in seen["hover"], seen["hover"]
    # A click on the first legend entry hides that stack; the log button switches the scale.
    assert int(seen["after"]) == int(seen["before"]) - 1 and seen["hidden"] == "1", seen
    assert (seen["scale-before"], seen["scale-after"]) == ("linear", "log"), seen

    # The page as a reader sees it, whole: every live chart has its traces painted inside
    # its axes (a chart whose traces were not drawn has no coloured pixel there).
    shot = screenshot(page, "report.png", height=int(seen["height"]))
    assert shot.stat().st_size > 50_000  # a blank page compresses to a few KB
    boxes = chart_boxes(seen)
    assert len(boxes) == charts, seen["boxes"]
    painted = {name: colored_pixels(shot, box) for name, box in boxes.items()}
    assert all(count > 30 for count in painted.values()), painted  # one marker paints ~50


def test_a_stack_faster_than_the_ceiling_makes_the_ceiling_invalid_not_a_ratio_below_one(tmp_path):
    """A real run's records with one stack's figure raised above the ceiling's."""
    records = [json.loads(line) for line in (RUN_FIXTURE / "results.jsonl").read_text().splitlines()]
    closed = [r for r in records if r.get("kind") == "measurement" and not r.get("rate_spec")]
    ceiling = next(r for r in closed if r.get("ceiling"))
    stack = next(r for r in closed if not r.get("ceiling") and r["scenario"] == ceiling["scenario"]
                 and r["connections"] == ceiling["connections"] and r["tool"] == ceiling["tool"])  # fmt: skip
    same = ("stack", "scenario", "connections", "tool", "phase")
    top = max(r["result"]["rps"] for r in closed if r.get("ceiling"))
    for record in closed:  # every round of that stack and case
        if all(record.get(k) == stack.get(k) for k in same):
            record["result"]["rps"] = top * 1.2
    folder = tmp_path / RUN_FIXTURE.name
    folder.mkdir()
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    shutil.copy(RUN_FIXTURE / "run.json", folder / "run.json")
    generate(folder)
    markdown = (folder / "summary.md").read_text()
    assert "ceiling invalid: a stack beat it" in markdown
    assert "above: ceiling invalid" in markdown
    rows = list(csv.DictReader((folder / "summary.csv").open()))
    beaten = [r for r in rows if r["ceiling_invalid"] == "True"]
    assert [r["stack"] for r in beaten] == [stack["stack"]]


def test_the_ceiling_share_is_explained_where_it_is_shown_and_only_there(tmp_path):
    records = (RUN_FIXTURE / "results.jsonl").read_text().splitlines()
    without = [line for line in records if not json.loads(line).get("ceiling")]
    for name, lines in (("with", records), ("without", without)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "results.jsonl").write_text("\n".join(lines) + "\n")
        shutil.copy(RUN_FIXTURE / "run.json", folder / "run.json")
        generate(folder, drawn=False)
    shown = (tmp_path / "with" / "summary.md").read_text()
    assert "% ceiling: the stack's median" in shown and "without a CPU quota" in shown
    assert "% ceiling:" not in (tmp_path / "without" / "summary.md").read_text()


@pytest.mark.skipif(CHROMIUM is None, reason=MISSING)
def test_the_browser_probe_sees_a_fetch_a_script_error_and_an_undrawn_chart(tmp_path):
    """The same probe on a page that breaks each rule: it must not pass such a page."""
    page = tmp_path / "broken.html"
    page.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'>" + OFFLINE_META + "</head><body>"
        # Refused by the page's policy before any request leaves: counted, never sent.
        "<img src='http://127.0.0.1:9/chart.png'>"
        "<div class='ix-chart' id='never-drawn'></div>"
        "<script>window.Plotly = {}; undefinedFunction();</script></body></html>"
    )
    seen = inspect(page)
    assert seen["done"] == "1"
    assert int(seen["blocked"]) >= 1 and "127.0.0.1" in seen["blocked-what"], seen
    assert int(seen["errors"]) >= 1 and seen["broken"] == "1", seen
    assert (seen["charts"], seen["drawn"]) == ("1", "0"), seen
