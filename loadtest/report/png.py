"""What every PNG chart shares: matplotlib (Agg backend), the ceiling's line style,
number formats, panels, and how a figure is written."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from PIL import Image  # noqa: E402

CEILING_STYLE = {"color": "black", "linestyle": "--", "linewidth": 1.5}
DPI = 110
# A chart has few colours: a 256-colour palette keeps it as drawn at a third of the bytes.
PNG_COLORS = 256


def thousands(value, _pos):
    return f"{value / 1000:g}k" if value >= 1000 else f"{value:g}"


def save(fig, path: Path, note: str = "") -> Path:
    if note:
        fig.text(0.01, 0.01, note, fontsize=7, color="#555")
    # Leave room at the bottom for the note.
    fig.tight_layout(rect=(0, 0.04 if note else 0, 1, 1))
    drawn = io.BytesIO()
    fig.savefig(drawn, dpi=DPI, format="png")
    plt.close(fig)
    with Image.open(drawn) as image:
        image.convert("RGB").quantize(colors=PNG_COLORS).save(path, "PNG", optimize=True)
    return path


def panels(count: int, width: float = 4.2, height: float = 3.6):
    """Up to four panels a row, sharing both axes so that panels compare at a glance."""
    columns = min(count, 4)
    rows = (count + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(max(8.5, width * columns + 1.5), height * rows),
                             squeeze=False, sharex=True, sharey=True)  # fmt: skip
    flat = [ax for line in axes for ax in line]
    for ax in flat[count:]:
        ax.set_visible(False)
    return fig, flat[:count]
