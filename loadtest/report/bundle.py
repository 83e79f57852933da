"""The plotly.js a report inlines: only the trace types its charts draw.

The reports draw scatter traces only, so they carry plotly.js's partial bundle
of the basic trace types (about 1.2 MB) rather than the whole library (4.8 MB).
Its package and exact version are pinned by the lock file beside this module
(plotly-bundle/), and `make bootstrap` installs it with `npm ci` into
.build/plotly-bundle/, from the registry or from the mirror like every npm
package (`make mirror` fills it). On a machine without npm the page inlines the
whole plotly.js of the pinned `plotly` package instead: larger, the same charts.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from plotly.offline import get_plotlyjs

from loadtest.core.manifest import REPO_ROOT

PACKAGE = Path(__file__).parent / "plotly-bundle"
INSTALLED = REPO_ROOT / ".build" / "plotly-bundle"


def bundle_path(package: Path = PACKAGE, installed: Path = INSTALLED) -> Path | None:
    """The installed partial bundle's file (its package's `main`), or None when absent."""
    (name,) = json.loads((package / "package.json").read_text())["dependencies"]
    manifest = installed / "node_modules" / name / "package.json"
    if not manifest.is_file():
        return None
    script = manifest.parent / json.loads(manifest.read_text())["main"]
    return script if script.is_file() else None


@cache
def plotly_library() -> str:
    """The plotly.js text a page inlines: the partial bundle, else the whole library."""
    path = bundle_path()
    return path.read_text() if path else get_plotlyjs()
