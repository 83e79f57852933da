"""A page of the harness opened in headless Chromium, as a reader opens it from disk.

`inspect(page)` loads a copy of the page with two probes written into it: one at
the top of <head> that counts script errors, console errors and any attempt to
load something (a Content-Security-Policy violation: the pages allow nothing but
inline content), and one at the end that, once the page has loaded, checks the
PNGs and every interactive chart, hovers a point, clicks a legend entry and the
log-scale button the way a mouse would, and writes what it saw as data-*
attributes of <body>. Chromium's --dump-dom prints that DOM.

`screenshot(page, name)` keeps a picture under .build/test-artifacts/, taken at
the width `inspect` lays the page out at, so the chart boxes it reports are where
`colored_pixels` finds each chart in the picture.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from PIL import Image

from loadtest.core.manifest import REPO_ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = REPO_ROOT / ".build" / "test-artifacts"
WIDTH = 1280  # the window's width in both runs: the same layout, the same boxes
MISSING = ("!!! chromium NOT INSTALLED: the page was not opened in a browser "
           "(apt-get install chromium, or make bootstrap) !!!")  # fmt: skip

HEAD_PROBE = """<script>
window.__seen = {errors: 0, console: 0, blocked: 0, blockedWhat: ''};
window.addEventListener('error', function () { window.__seen.errors++; }, true);
window.addEventListener('unhandledrejection', function () { window.__seen.errors++; });
document.addEventListener('securitypolicyviolation', function (e) {
  window.__seen.blocked++; window.__seen.blockedWhat += e.blockedURI + ' ';
});
(function () {
  var original = console.error;
  console.error = function () { window.__seen.console++; return original.apply(console, arguments); };
})();
</script>"""

END_PROBE = """<script>
window.addEventListener('load', function () {
  var body = document.body, seen = window.__seen;
  function mark(name, value) { body.setAttribute('data-' + name, String(value)); }
  function drawnTraces(div) { return div.querySelectorAll('.scatterlayer .trace').length; }
  function press(element) {  // a mouse press and release where the element is
    var box = element.getBoundingClientRect();
    var at = {bubbles: true, cancelable: true, view: window, button: 0, buttons: 1,
              clientX: box.left + box.width / 2, clientY: box.top + box.height / 2};
    element.dispatchEvent(new MouseEvent('mousedown', at));
    element.dispatchEvent(new MouseEvent('mouseup', at));
    element.dispatchEvent(new MouseEvent('click', at));
  }
  var images = Array.prototype.slice.call(document.images);
  mark('images', images.length);
  mark('broken', images.filter(function (i) { return !i.complete || i.naturalWidth === 0; }).length);
  var charts = Array.prototype.slice.call(document.querySelectorAll('.ix-chart'));
  mark('charts', charts.length);
  mark('drawn', charts.filter(function (d) { return d._fullData && drawnTraces(d) > 0; }).length);
  // Where each chart's plotting area (inside its axes: no legend, no title) sits on the
  // page, as id:left,top,width,height, for the screenshot's test.
  mark('boxes', charts.map(function (d) {
    var box = d.getBoundingClientRect(), area = d._fullLayout ? d._fullLayout._size : {l: 0, t: 0, w: 0, h: 0};
    return d.id + ':' + [box.left + window.scrollX + area.l, box.top + window.scrollY + area.t,
                         area.w, area.h].map(Math.round).join(',');
  }).join(' '));
  mark('height', document.documentElement.scrollHeight);
  var subject = charts.filter(function (d) { return d._fullData && d._fullData.length > 1; })[0];
  mark('subject', subject ? subject.id : '');
  if (subject) {
    mark('before', drawnTraces(subject));
    Plotly.Fx.hover(subject, [{curveNumber: 0, pointNumber: 0}]);
    mark('hover', (subject.querySelector('.hoverlayer') || {}).textContent || '');
    Plotly.Fx.unhover(subject);
    press(subject.querySelector('.legend .traces .legendtoggle'));
    var buttons = subject.querySelectorAll('.updatemenu-button');
    mark('scale-before', subject._fullLayout.yaxis.type);
    if (buttons.length > 1) { press(buttons[1]); }
  }
  // The legend acts after its double-click delay; read everything after it.
  setTimeout(function () {
    if (subject) {
      mark('after', drawnTraces(subject));
      mark('hidden', subject._fullData.filter(function (t) { return t.visible !== true; }).length);
      mark('scale-after', subject._fullLayout.yaxis.type);
    }
    mark('errors', seen.errors);
    mark('console', seen.console);
    mark('blocked', seen.blocked);
    mark('blocked-what', seen.blockedWhat);
    var resources = performance.getEntriesByType('resource').map(function (r) { return r.name; });
    mark('fetched', resources.filter(function (n) { return !/^(data|blob|file):/.test(n); }).join(' '));
    mark('done', 1);
  }, 1500);
});
</script>"""


def chromium(*args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        command = [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={profile}", "--virtual-time-budget=15000", *args,
        ]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, timeout=180)


def inspect(page: Path) -> dict[str, str]:
    """What a reader's browser did with the page: the probes' data-* attributes."""
    text = page.read_text()
    probed = text.replace("<head>", "<head>" + HEAD_PROBE, 1).replace("</body>", END_PROBE + "</body>")
    copy = page.resolve().with_name(page.stem + ".probe.html")
    copy.write_text(probed)
    try:
        result = chromium("--dump-dom", f"--window-size={WIDTH},2400", copy.as_uri())
    finally:
        copy.unlink()
    assert result.returncode == 0, result.stderr[-2000:]
    body = re.search(r"<body([^>]*)>", result.stdout)
    assert body, result.stdout[:500]
    return dict(re.findall(r'data-([\w-]+)="([^"]*)"', body.group(1)))


def screenshot(page: Path, name: str, height: int = 2400) -> Path:
    """A picture of the page as drawn, kept under .build/test-artifacts/ for a reader."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / name
    result = chromium(f"--screenshot={shot}", f"--window-size={WIDTH},{height}", page.resolve().as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return shot


def chart_boxes(seen: dict[str, str]) -> dict[str, tuple[int, int, int, int]]:
    """The probe's boxes of the charts' plotting areas: {id: (left, top, width, height)}
    in page pixels."""
    boxes = {}
    for entry in seen.get("boxes", "").split():
        name, numbers = entry.rsplit(":", 1)
        boxes[name] = tuple(int(n) for n in numbers.split(","))
    return boxes


def colored_pixels(shot: Path, box: tuple[int, int, int, int]) -> int:
    """Pixels of a vivid colour inside a box of a screenshot: in a plotting area, the drawn
    traces and markers (axes, grid, text and the page are black, white or grey)."""
    left, top, width, height = box
    with Image.open(shot) as image:
        region = image.convert("HSV").crop((left, top, left + width, top + height))
        return sum(1 for _, saturation, value in region.get_flattened_data() if saturation > 80 and value > 60)
