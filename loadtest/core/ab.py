"""The two sides of an interleaved A/B run (`make ab`): what each side changes.

A side is written as the `A=` or `B=` of `make ab`, words separated by spaces:

- `SERVER_CPU_QUOTA=0.9`: the side's CPU quota, in CPUs; a list
  (`SERVER_CPU_QUOTA=0.95,0.9,0.8`) starts the side once per value in every
  round, and each value is compared with the other side on its own;
- `NAME=value`: an environment variable of the side's server (`WORKERS=2`);
- any other word: a git revision (`HEAD~1`, `main`, a commit id), the stack
  and the shared libraries as that commit has them; at most one.

An empty side is the stack as the working tree has it, with the run's knobs.
Both sides are the same stack, started fresh in every round, in the order
the run's seed shuffles, beside the nginx ceiling: what the host does during
the run falls on both sides alike, so the comparison needs no run-to-run term.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

QUOTA_KNOB = "SERVER_CPU_QUOTA"
# How a side is named in the stack ids of the run: "gin@A", as a [[variant]] is.
SIDE_SEPARATOR = "@"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Knobs of the whole run, which a side cannot set: they would differ between the
# sides in ways the comparison would not show.
RUN_KNOBS = {"SERVERS", "SERVER", "PROFILE", "REPEAT", "DURATION", "WARMUP", "CONNECTIONS",
             "SCENARIOS", "TOOL", "RATE", "SEED", "RUNNER", "SERVER_CPUS", "CLIENT_CPUS",
             "SERVER_CORES", "PRIORITY", "FRONT"}  # fmt: skip


class SideError(ValueError):
    """A side that cannot be run: the message says which word and why."""


@dataclass(frozen=True)
class Side:
    name: str  # "A" or "B"
    revision: str = ""  # a git revision; "": the working tree
    env: dict = field(default_factory=dict)
    quotas: tuple = ()  # CPU quotas in CPUs; (): the run's SERVER_CPU_QUOTA

    def describe(self) -> str:
        """The side in words, as reports name it: 'HEAD~1, WORKERS=2'."""
        parts = [self.revision or "working tree"]
        parts += [f"{key}={value}" for key, value in sorted(self.env.items())]
        if self.quotas:
            parts.append(f"{QUOTA_KNOB}={','.join(f'{q:g}' for q in self.quotas)}")
        return ", ".join(parts)

    def stack_id(self, stack: str) -> str:
        return f"{stack}{SIDE_SEPARATOR}{self.name}"


def parse_side(name: str, text: str) -> Side:
    """One side from its words; raises SideError."""
    revision, env, quotas = "", {}, ()
    for word in (text or "").split():
        key, equals, value = word.partition("=")
        if not equals:
            if revision:
                raise SideError(f"{name}={text!r}: two revisions ({revision}, {word}); give one")
            revision = word
        elif key == QUOTA_KNOB:
            quotas = _quotas(name, value)
        elif key in RUN_KNOBS:
            raise SideError(f"{name}={text!r}: {key} is a knob of the whole run, the same for "
                            f"both sides; give it beside A and B")  # fmt: skip
        elif not _ENV_NAME.match(key):
            raise SideError(f"{name}={text!r}: {key!r} is not an environment variable name")
        else:
            env[key] = value
    return Side(name, revision, env, quotas)


def _quotas(name: str, value: str) -> tuple:
    try:
        quotas = tuple(float(part) for part in value.split(",") if part.strip())
    except ValueError:
        raise SideError(f"{name}: {QUOTA_KNOB}={value!r}: give CPUs, e.g. 0.9") from None
    if not quotas or any(q <= 0 for q in quotas):
        raise SideError(f"{name}: {QUOTA_KNOB}={value!r}: each quota must be > 0 (CPUs)")
    return quotas


def parse_sides(a_text: str, b_text: str) -> tuple[Side, Side]:
    """A and B; raises SideError when they are the same (an A/A is `make aa`)."""
    a, b = parse_side("A", a_text), parse_side("B", b_text)
    if (a.revision, a.env, a.quotas) == (b.revision, b.env, b.quotas):
        raise SideError(f"A and B are the same ({a.describe()}): give at least one of them a "
                        "revision or a setting (runs of the same thing are `make aa`)")  # fmt: skip
    return a, b
