"""The then-and-now page and one handout per experiment, written from the claim files
and the committed runs alone, so that the same files give the same bytes.

The page is `docs/experiments/then-and-now.template.md` with its placeholders
filled: the rule, the counts and a table per experiment. The prose around the
tables lives in the template and in the claim files (each experiment's `intro`,
each claim's `why`); everything with a figure in it is generated here.
"""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass
from pathlib import Path

from loadtest.core.change import MIN_EFFECT, MIN_ROUNDS, POWER, SIGNIFICANCE
from loadtest.core.manifest import REPO_ROOT
from loadtest.report.claims import EXPERIMENTS_DIR, Experiment, load_all
from loadtest.report.run_rounds import CommittedRun, Rounds, open_run
from loadtest.report.then_and_now import (
    FAILS,
    HOLDS,
    UNDECIDED,
    VERDICTS,
    Comparison,
    Judged,
    counts,
    figure,
    judge_experiment,
    own_figures,
)

PAGE = REPO_ROOT / "docs" / "measurements" / "then-and-now.md"
TEMPLATE = EXPERIMENTS_DIR / "then-and-now.template.md"
HANDOUTS = REPO_ROOT / "docs" / "labs" / "then-and-now"

UNITS = {
    "rps": ("req/s", "{:,.0f}"), "latency_mean_ms": ("ms mean", "{:.2f}"),
    "latency_p75_ms": ("ms p75", "{:.2f}"), "latency_p95_ms": ("ms p95", "{:.2f}"),
    "mb_per_s": ("MB/s", "{:.2f}"), "bytes_per_response": ("B a response", "{:.0f}"),
    "header_bytes": ("header B", "{:.0f}"), "rss_mb": ("MB RSS", "{:.1f}"),
    "cpu_pct": ("% CPU", "{:.0f}"), "error_share": ("errors", "{:.1%}"),
    "errors": ("errors", "{:,.0f}"),
}  # fmt: skip
MARKS = {HOLDS: "**holds**", FAILS: "**does not hold**", UNDECIDED: "cannot tell"}

RULE = (
    f"A claim is tested as a comparison over one run's rounds by the rule of `make compare` "
    f"(`loadtest/core/change.py`): Welch's t on the logarithm of the figure over "
    f"{MIN_ROUNDS} or more rounds a side, the comparisons of one experiment corrected "
    f"together (Benjamini-Hochberg, q < {SIGNIFICANCE:g}), nothing under the "
    f"{MIN_EFFECT:.0%} floor called a difference. A ratio claim (a is r times b) holds "
    f"when a and r times b show no change; an order claim (a above b) holds when a is "
    f"above b by a change the rule calls, and does not hold when the change goes the other "
    f"way or no difference beyond the floor is seen. Beside every verdict that is not a "
    f"change: the smallest difference the run could have detected with {POWER:.0%} power. "
    f"Figures without spread (the bytes of a response) are judged against the floor alone; "
    f"error counts, which may be zero, as bounds every round must meet. A comparison "
    f"resting on a round that carries any flag of `loadtest/report/flags.py` (client-bound, "
    f"NOISY, NOT-STEADY, COLD, DRIFTED, STALL, UNEVEN, RECONNECTS) is **cannot tell**, "
    f"with the flag named and what the rule would have said; only the bytes of an answer, "
    f"which no flag's cause changes, are read from flagged rounds. An order claim with no "
    f"difference beyond the floor does not hold only when the run would have seen the "
    f"original's own gap; else it cannot tell. A claim holds when each of "
    f"its comparisons holds, and does not hold when one does not."
)  # fmt: skip


@dataclass(frozen=True)
class Judgement:
    experiment: Experiment
    runs: dict[str, CommittedRun]
    judged: list[Judged]


def judge_all_experiments(experiments: list[Experiment] | None = None,
                          measurements: Path | None = None) -> list[Judgement]:  # fmt: skip
    """Every experiment's claims judged on the runs its file names."""
    out = []
    for experiment in experiments if experiments is not None else load_all():
        runs = {key: (open_run(name, measurements) if measurements else open_run(name))
                for key, name in experiment.runs.items()}  # fmt: skip
        out.append(Judgement(experiment, runs, judge_experiment(experiment, runs)))
    return out


def shown(metric: str, rounds: Rounds | None) -> str:
    value = figure(rounds)
    if value is None:
        return "-"
    unit, pattern = UNITS[metric]
    return f"{pattern.format(value)} {unit}"


def comparison_text(metric: str, c: Comparison) -> str:
    """'sanic hello c=150 6,925 req/s / uvloop hello c=150 21,552 req/s = 0.32 (0.30-0.34)'."""
    text = f"{c.a.label} {shown(metric, c.a_rounds)}"
    if c.b is not None:
        text += f" / {c.b.label} {shown(metric, c.b_rounds)}"
    elif c.constant is not None:
        text += f" / {c.constant:g}"
    if c.ratio is not None and (c.b is not None or c.constant is not None):
        text += f" = {c.ratio:.2f}"
        text += f" ({c.interval[0]:.2f}-{c.interval[1]:.2f})" if c.interval else ""
    return text


def verdict_text(c: Comparison) -> str:
    text = MARKS[c.verdict] + (f": {c.detail}" if c.detail else "")
    return text


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def why_text(item: Judged) -> str:
    """Each comparison's reason; with several, each behind its own verdict."""
    if len(item.comparisons) == 1:
        return cell(item.comparisons[0].detail)
    return "<br>".join(cell(verdict_text(c)) for c in item.comparisons)


# A claim with more comparisons than this is summed up in the page's row; its handout
# lists each one.
SHOWN_IN_FULL = 3


def now_text(item: Judged) -> str:
    return "<br>".join(cell(comparison_text(item.claim.metric, c)) for c in item.comparisons)


def now_summary(item: Judged) -> str:
    """'15 comparisons, a/b from 2.59 to 22.06' for a claim with many."""
    ratios = [c.ratio for c in item.comparisons if c.ratio is not None]
    text = f"{len(item.comparisons)} comparisons"
    if ratios and item.claim.kind != "bound":
        text += f", a/b from {min(ratios):.2f} to {max(ratios):.2f}"
    elif ratios:
        text += f", from {min(ratios):.3g} to {max(ratios):.3g}"
    return text


def why_summary(item: Judged, link: str) -> str:
    """The comparisons' verdicts counted and the flags they rest on, for a claim with many."""
    verdicts = [c.verdict for c in item.comparisons]
    counted = ", ".join(f"{verdicts.count(v)} {v}" for v in VERDICTS if verdicts.count(v))
    flags = sorted({name for c in item.comparisons for counts in c.flags.values() for name in counts})
    text = counted + (f"; flagged: {', '.join(flags)}" if flags else "")
    return f"{text}; each comparison in [the handout]({link})"


def reread_text(item: Judged, handout: str) -> str:
    """'Reads again the figures of <claim>.' for a claim that adds no figure of its own."""
    if not item.rereads:
        return ""
    links = ", ".join(f"[{cell(c.title)}]({handout}#{c.id})" for c in item.rereads)
    return f"Reads again the figures of {links}."


def claim_row(item: Judged, handout: str) -> str:
    claim = item.claim
    link = f"{handout}#{claim.id}"
    full = len(item.comparisons) <= SHOWN_IN_FULL
    now = now_text(item) if full else now_summary(item)
    why = why_text(item) if full else why_summary(item, link)
    why = "<br>".join(filter(None, (reread_text(item, handout), why)))
    title = f"[{cell(claim.title)}]({link})"
    return (f"| {title} (`{claim.source}`) | {cell(claim.then)} | {now} (`{item.run}`) | "
            f"{verdict_mark(item)} | {why} |")  # fmt: skip


def run_line(key: str, run: CommittedRun) -> str:
    knobs = run.knobs
    stacks = ", ".join(knobs.get("servers") or [])
    skipped = sorted((run.info.get("failed_stacks") or {}))
    levels = ", ".join(str(c) for c in knobs.get("connections") or [])
    quotas = ", ".join(f"{q:g}" for q in knobs.get("server_cpu_quota") or [])
    text = (f"- `{run.name}` ({key}): {knobs.get('tool')}, {levels} connections, "
            f"{knobs.get('repeat')} rounds")  # fmt: skip
    text += f", CPU quota {quotas}" if quotas else ""
    text += f", memory {knobs['server_memory']}" if knobs.get("server_memory") else ""
    text += f"; stacks: {stacks}" + (f" (not run here: {', '.join(skipped)})" if skipped else "")
    text += "" if run.from_records else "; committed with summary.csv only"
    return text + "."


def verdict_counts(judged: list[Judged], skip_none: bool = False) -> str:
    found = counts(judged)
    return ", ".join(f"{found[v]} {v}" for v in VERDICTS if found[v] or not skip_none)


def verdict_mark(item: Judged) -> str:
    """The verdict, and beside it when the replay measured the figure otherwise."""
    mark = MARKS[item.verdict]
    return mark + (" (measured otherwise)" if item.claim.measured_otherwise else "")


def count_line(judged: list[Judged], untestable: int) -> str:
    line = f"{len(judged)} claims tested: {verdict_counts(judged)}; {untestable} not testable here."
    otherwise = [i for i in judged if i.claim.measured_otherwise and i.verdict != UNDECIDED]
    if otherwise:
        line += (f" {len(otherwise)} of those decided rest on a figure this replay measures "
                 f"otherwise than the original did (each says how): "
                 f"{verdict_counts(otherwise, skip_none=True)}, a difference of method, not "
                 f"of the stacks.")  # fmt: skip
    own = own_figures(judged)
    if len(own) < len(judged):
        line += (f" {len(judged) - len(own)} of the {len(judged)} read again the figures of an "
                 f"earlier claim (a closed loop ties mean latency and MB/s to requests/s); "
                 f"the {len(own)} with figures of their own: {verdict_counts(own)}.")
    return line


def experiment_section(judgement: Judgement, page_dir: Path) -> str:
    experiment = judgement.experiment
    handout = relative(handout_path(experiment), page_dir)
    out = [f"## {experiment.title}", "", experiment.intro, "", "Sources:", ""]
    out += source_lines(experiment) + [""]
    out += [count_line(judgement.judged, len(experiment.untestable)), "", "Runs:", ""]
    out += [run_line(key, run) for key, run in judgement.runs.items()]
    out += ["", "| claim (source) | then | now (run) | verdict | why |", "| --- | --- | --- | --- | --- |"]
    out += [claim_row(item, handout) for item in judgement.judged]
    out += ["", "Not testable here:", "", "| the original said (source) | then | why not here |",
            "| --- | --- | --- |"]  # fmt: skip
    out += [f"| {cell(said(u.words, u.translation))} (`{u.source}`) | {cell(u.then)} | "
            f"{cell(u.reason)} |" for u in experiment.untestable]  # fmt: skip
    out += ["", experiment.notes] if experiment.notes else []
    return "\n".join(out)


def source_lines(experiment: Experiment) -> list[str]:
    return [f"- `{name}`: {text}" for name, text in experiment.sources.items()]


def said(words: str, translation: str) -> str:
    """The author's words, and their English beside them when the source is not in English."""
    return f"«{words}»" + (f" ({translation})" if translation else "")


def relative(path: Path, start: Path) -> str:
    """A link from a page in `start` to `path`."""
    return Path(os.path.relpath(path, start)).as_posix()


def handout_path(experiment: Experiment) -> Path:
    return HANDOUTS / f"{experiment.name}.md"


def page(judgements: list[Judgement], template: str) -> str:
    all_judged = [item for j in judgements for item in j.judged]
    untestable = sum(len(j.experiment.untestable) for j in judgements)
    sections = "\n\n".join(experiment_section(j, PAGE.parent) for j in judgements)
    filled = (template.replace("{{rule}}", textwrap.fill(RULE, 76, break_on_hyphens=False))
              .replace("{{counts}}", count_line(all_judged, untestable))
              .replace("{{experiments}}", sections))  # fmt: skip
    return filled.rstrip("\n") + "\n"


def quoted(words: str) -> list[str]:
    return ["> " + line if line else ">" for line in words.splitlines()]


def handout(judgement: Judgement) -> str:
    experiment = judgement.experiment
    source = relative(experiment.path, HANDOUTS)
    out = [f"# Handout: {experiment.title}", "",
           "A handout: each claim of the original, the figure then, the figure measured "
           "here, the verdict and why. Generated by `make then-and-now` from "
           f"[`{experiment.path.name}`]({source}) and the runs below; the method is on "
           f"[the then-and-now page]({relative(PAGE, HANDOUTS)}). A figure is the median "
           "of its rounds; a ratio is that of the rounds' geometric means, which the rule "
           "tests, so where the rounds spread it need not equal the ratio of the two medians "
           "shown.", ""]  # fmt: skip
    out += ["Sources:", ""] + source_lines(experiment) + [""]
    out += [run_line(key, run) for key, run in judgement.runs.items()] + [""]
    for number, item in enumerate(judgement.judged, 1):
        out += claim_section(number, item)
    out += ["## Notes", "", experiment.notes, ""] if experiment.notes else []
    return "\n".join(out).rstrip("\n") + "\n"


def claim_section(number: int, item: Judged) -> list[str]:
    claim = item.claim
    out = [f'<a id="{claim.id}"></a>', f"## {number}. {claim.title}", ""]
    out += quoted(claim.words) + [">", f"> (`{claim.source}`)", ""]
    if claim.translation:
        out += [f"In English: {claim.translation}", ""]
    now, why = now_text(item), why_text(item)
    out += ["| | |", "| --- | --- |", f"| figure then | {cell(claim.then)} |",
            f"| figure now (`{item.run}`) | {now} |", f"| verdict | {verdict_mark(item)} |",
            f"| by the rule | {why} |"]  # fmt: skip
    if claim.measured_otherwise:
        out.append(f"| measured otherwise | {cell(claim.measured_otherwise)} |")
    out.append("")
    reread = reread_text(item, "")
    return out + ([reread, ""] if reread else []) + ([claim.why, ""] if claim.why else [])


def write_all(judgements: list[Judgement]) -> list[Path]:
    """The page and the handouts, written; returns their paths."""
    PAGE.write_text(page(judgements, TEMPLATE.read_text()))
    HANDOUTS.mkdir(parents=True, exist_ok=True)
    written = [PAGE]
    for judgement in judgements:
        path = handout_path(judgement.experiment)
        path.write_text(handout(judgement))
        written.append(path)
    return written
