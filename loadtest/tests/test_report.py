"""Report generation from a small committed run (real records), and the HTML in Chromium."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from loadtest.report import generate
from loadtest.report.summary import COLUMNS

RUN_FIXTURE = Path(__file__).parent / "fixtures" / "run-small"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


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
        assert (static_folder / "charts" / expected).stat().st_size > 20_000
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
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "external reference"
    assert "@import" not in page
    images = re.findall(r'<img [^>]*src="([^"]+)"', page)
    assert len(images) == len(list((report_folder / "charts").glob("*.png")))
    assert all(src.startswith("data:image/png;base64,") for src in images)


PROBE = """<script>
window.addEventListener('load', function () {
  var images = Array.prototype.slice.call(document.images);
  var broken = images.filter(function (i) { return !i.complete || i.naturalWidth === 0; });
  document.body.setAttribute('data-images', images.length);
  document.body.setAttribute('data-broken', broken.length);
  document.body.setAttribute('data-errors', window.__errors || 0);
});
window.addEventListener('error', function () { window.__errors = (window.__errors || 0) + 1; }, true);
</script>"""


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    command = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", f"--user-data-dir={profile}", "--virtual-time-budget=10000", *args,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="!!! chromium NOT INSTALLED: report.html was not opened in a browser "
    "(apt-get install chromium, or make bootstrap) !!!",
)
def test_report_opens_in_headless_chromium_with_every_chart(report_folder, tmp_path):
    page = report_folder / "report.html"
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    with tempfile.TemporaryDirectory() as profile:
        dom = chromium("--dump-dom", probe.as_uri(), profile=Path(profile))
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body([^>]*)>", dom.stdout)
    assert body, dom.stdout[:500]
    attributes = dict(re.findall(r'data-(\w+)="(\d+)"', body.group(1)))
    assert int(attributes["images"]) >= 6
    assert attributes["broken"] == "0", "some chart did not load"
    assert attributes["errors"] == "0"

    shot = tmp_path / "report.png"
    with tempfile.TemporaryDirectory() as profile:
        result = chromium(f"--screenshot={shot}", "--window-size=1280,2400", page.as_uri(),
                          profile=Path(profile))  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 50_000  # a blank page compresses to a few KB


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
