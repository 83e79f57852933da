"""The published experiments' claims as data: `docs/experiments/<experiment>.toml`.

One file per experiment. Each testable claim carries where it was said (a file of
the source texts), the author's own words and their English, the original's
figures and setting, and the comparison that tests it over one committed run:

- `ratio`: figure a over figure b is `expected` (b may be a constant, `{value = 9}`);
- `greater` / `less`: figure a above / below each figure b;
- `bound`: figure a within `at_least` .. `at_most` in every round; with
  `percentile`, the percentile the original claimed where the metric's stands in
  for it (p75 for p80), the bound decides only what the stand-in can.

`measured_otherwise` says how this replay measures the figure otherwise than the
original did, where that alone can decide the verdict: the page shows it beside
the verdict and counts such verdicts apart. `[sources]` names each source text a
claim cites by its author, title, where and when it appeared: the texts
themselves are not in the repository.

A side is a stack name, or a table that overrides the claim's own settings
(`{stack = "aspnetcore", scenario = "kb100"}`). The claim's `connections`,
`quota` and `cores` may be lists: the claim is tested at each of them. Claims this
project cannot test are listed under `[[untestable]]`, each with its reason.
Reading and checking only; report/then_and_now.py judges them.
"""

from __future__ import annotations

import itertools
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from loadtest.core.manifest import REPO_ROOT

EXPERIMENTS_DIR = REPO_ROOT / "docs" / "experiments"
# The source texts sit beside the repository (../shared/seeds), as CI clones it.
SEEDS_DIR = REPO_ROOT.parent / "shared" / "seeds"

KINDS = ("ratio", "greater", "less", "bound")
# Every figure a claim can rest on, by the name the claim files use.
METRICS = ("rps", "latency_mean_ms", "latency_p75_ms", "latency_p95_ms", "mb_per_s",
           "bytes_per_response", "header_bytes", "rss_mb", "cpu_pct", "error_share",
           "errors")  # fmt: skip
SETTINGS = ("scenario", "connections", "quota", "cores")


class ClaimError(Exception):
    """A claim file that cannot be read: the message names the file and the claim."""


@dataclass(frozen=True)
class Setting:
    """Where one figure is read: a stack's case in a run (quota and cores None when the
    run does not sweep them)."""

    stack: str
    scenario: str
    connections: int
    quota: float | None = None
    cores: int | None = None

    @property
    def label(self) -> str:
        text = f"{self.stack} {self.scenario} c={self.connections}"
        text += f" q{self.quota:g}" if self.quota is not None else ""
        return text + (f" {self.cores} core{'s' if self.cores != 1 else ''}" if self.cores else "")


@dataclass(frozen=True)
class Side:
    """One operand of a claim: a stack with optional settings of its own, or a constant."""

    stack: str | None = None
    overrides: tuple[tuple[str, object], ...] = ()
    value: float | None = None

    def at(self, base: dict) -> Setting | None:
        if self.stack is None:
            return None
        merged = {**base, **dict(self.overrides)}
        return Setting(self.stack, merged["scenario"], int(merged["connections"]),
                       merged.get("quota"), merged.get("cores"))  # fmt: skip


@dataclass(frozen=True)
class Claim:
    id: str
    title: str
    source: str  # a file name in SEEDS_DIR
    words: str  # verbatim from the source
    translation: str  # English; "" when the source is English
    then: str  # the original's figures and setting
    run: str  # a key of the experiment's runs
    kind: str
    metric: str
    a: Side
    b: tuple[Side, ...]
    grid: tuple[dict, ...]  # the settings the claim is tested at
    expected: float | None = None
    at_least: float | None = None
    at_most: float | None = None
    # The percentile the original claimed, where the metric is another one standing in for
    # it (the harness keeps p75 and p95, not p80 and p98): a bound then decides only what
    # the stand-in can (then_and_now.judge_bound).
    percentile: float | None = None
    # How this replay measures the figure otherwise than the original did, where that alone
    # can decide the verdict (RSS of every process against one docker stats figure): said
    # beside the verdict and counted apart, so that it is not read as the stacks' change.
    measured_otherwise: str = ""
    why: str = ""


@dataclass(frozen=True)
class Untestable:
    source: str
    words: str
    translation: str
    then: str
    reason: str


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    path: Path
    intro: str
    runs: dict[str, str]  # key -> run folder name under docs/measurements
    claims: tuple[Claim, ...]
    untestable: tuple[Untestable, ...]
    order: int = 0  # the experiment's place on the page
    notes: str = ""  # prose after the tables: how figures were checked by hand
    # Each source text by its file name: its author, title, where and when it appeared.
    # The texts are not in the repository (SEEDS_DIR); this is how a reader finds them.
    sources: dict[str, str] = field(default_factory=dict)


def load_all(folder: Path = EXPERIMENTS_DIR) -> list[Experiment]:
    """Every experiment file, in the order of its `order` key."""
    return sorted((load(path) for path in folder.glob("*.toml")), key=lambda e: (e.order, e.name))


def load(path: Path) -> Experiment:
    data = tomllib.loads(path.read_text())
    try:
        runs = dict(data["runs"])
        claims = tuple(_claim(c, runs) for c in data.get("claim", []))
        untestable = tuple(_untestable(u) for u in data.get("untestable", []))
        sources = dict(data["sources"])
        unnamed = sorted({said.source for said in (*claims, *untestable)} - set(sources))
        if unnamed:
            raise ValueError(f"[sources] does not name {', '.join(unnamed)}")
        return Experiment(data["experiment"], data["title"], path, data.get("intro", "").strip(),
                          runs, claims, untestable, int(data.get("order", 0)),
                          data.get("notes", "").strip(), sources)  # fmt: skip
    except (KeyError, TypeError, ValueError) as exc:
        raise ClaimError(f"{path.name}: {exc}") from exc


def _side(raw) -> Side:
    if isinstance(raw, str):
        return Side(stack=raw)
    if "value" in raw:
        return Side(value=float(raw["value"]))
    overrides = tuple((k, v) for k, v in raw.items() if k in SETTINGS)
    return Side(stack=raw["stack"], overrides=overrides)


def _as_list(value) -> list:
    return list(value) if isinstance(value, list) else [value]


def _grid(raw: dict) -> tuple[dict, ...]:
    """Every combination of the claim's settings (lists are tested at each value)."""
    names = [name for name in SETTINGS if name in raw]
    values = [_as_list(raw[name]) for name in names]
    return tuple(dict(zip(names, combo, strict=True)) for combo in itertools.product(*values))


def _claim(raw: dict, runs: dict) -> Claim:
    where = f"claim {raw.get('id', '?')}"
    kind, metric = raw["kind"], raw.get("metric", "rps")
    if kind not in KINDS or metric not in METRICS:
        raise ValueError(f"{where}: kind {kind!r} or metric {metric!r} unknown")
    if raw["run"] not in runs:
        raise ValueError(f"{where}: run {raw['run']!r} is not one of [runs]")
    b = tuple(_side(s) for s in _as_list(raw.get("b", [])))
    if kind != "bound" and not b:
        raise ValueError(f"{where}: a {kind} claim needs b")
    return Claim(
        id=raw["id"], title=raw["title"], source=raw["source"], words=raw["words"].strip(),
        translation=raw.get("translation", "").strip(), then=raw["then"].strip(),
        run=raw["run"], kind=kind, metric=metric, a=_side(raw["a"]), b=b, grid=_grid(raw),
        expected=raw.get("expected"), at_least=raw.get("at_least"), at_most=raw.get("at_most"),
        percentile=raw.get("percentile"),
        measured_otherwise=raw.get("measured_otherwise", "").strip(),
        why=raw.get("why", "").strip(),
    )  # fmt: skip


def _untestable(raw: dict) -> Untestable:
    return Untestable(raw["source"], raw["words"].strip(), raw.get("translation", "").strip(),
                      raw.get("then", "").strip(), raw["reason"].strip())  # fmt: skip


def squeezed(text: str) -> str:
    """Text with every run of white space as one space: a quote spans lines or table cells."""
    return re.sub(r"\s+", " ", text).strip()


def quote_found(words: str, source_text: str) -> bool:
    """Whether the author's words appear verbatim in the source (white space aside).
    A quote may leave words out with ' ... ': each part must then appear, in order."""
    text, start = squeezed(source_text), 0
    for part in squeezed(words).split(" ... "):
        at = text.find(part, start)
        if at < 0:
            return False
        start = at + len(part)
    return True
