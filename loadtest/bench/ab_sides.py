"""The manifests of an A/B run's two sides (core/ab.py): one stack, two ways.

A side with a git revision reads the stack and the shared libraries from a
worktree of this repository at that commit (`.build/ab/<commit>/`, kept for
the next run of the same commit), built into its own folder; a side's
settings reach the server as a [[variant]]'s do (its environment) or as the
quota of its starts. Both sides carry their stack id (`gin@A`, `gin@B`) and
are labelled with what they change.
"""

from __future__ import annotations

import dataclasses
import subprocess
from dataclasses import dataclass
from pathlib import Path

from loadtest.core.ab import Side
from loadtest.core.errors import StepError
from loadtest.core.manifest import REPO_ROOT, Manifest, load
from loadtest.host.locks import exclusive

WORKTREES = REPO_ROOT / ".build" / "ab"
GIT_TIMEOUT_S = 120


@dataclass(frozen=True)
class Sides:
    """What the bench runs in place of SERVERS: each side's stack id, manifest and quotas."""

    stack: str
    a: Side
    b: Side
    manifests: dict  # side's stack id -> its Manifest, A first
    commits: dict  # side's stack id -> the commit its revision names ("" for the working tree)

    @property
    def quotas(self) -> dict:
        """Side's stack id -> its own CPU quotas, for the sides that set them."""
        return {side.stack_id(self.stack): side.quotas for side in (self.a, self.b) if side.quotas}

    def record(self) -> dict:
        """run.json's "ab": which stack, and what each side is."""
        return {"stack": self.stack, "sides": {
            side.name: {"stack_id": (side_id := side.stack_id(self.stack)),
                        "describe": side.describe(), "revision": side.revision,
                        "commit": self.commits[side_id], "env": dict(side.env),
                        "quotas": list(side.quotas)}
            for side in (self.a, self.b)
        }}  # fmt: skip


def make_sides(stack: str, a: Side, b: Side) -> Sides:
    """Both sides' manifests; raises StepError (a revision git cannot check out) or
    ManifestError (the stack is not in the tree or the commit asked for)."""
    manifests, commits = {}, {}
    for side in (a, b):
        commit = commit_of(side.revision) if side.revision else ""
        manifests[side.stack_id(stack)] = side_manifest(stack, side, commit)
        commits[side.stack_id(stack)] = commit
    return Sides(stack, a, b, manifests, commits)


def side_manifest(stack: str, side: Side, commit: str) -> Manifest:
    """The stack as this side runs it, labelled with what the side changes."""
    root = worktree(commit) if commit else REPO_ROOT
    manifest = load(stack, root / "servers")
    described = side.describe() + (f" = {commit[:12]}" if commit else "")
    return dataclasses.replace(
        manifest,
        name=side.stack_id(stack),
        variant=f"{side.name}: {described}",
        env={**manifest.env, **side.env},
        repo_root=root,
        # The side's own build when its source or its environment differs (a build reads it).
        build_id="" if commit or side.env else stack,
    )


def commit_of(revision: str) -> str:
    """The full commit id of a revision; raises StepError."""
    return _git("rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}",
                step=f"revision {revision!r}").strip()  # fmt: skip


def worktree(commit: str) -> Path:
    """A detached worktree of this repository at the commit, made once."""
    folder = WORKTREES / commit
    WORKTREES.mkdir(parents=True, exist_ok=True)
    with exclusive(WORKTREES / f".{commit}.lock"):
        if not (folder / "servers").is_dir():
            _git("worktree", "prune", step="worktree")
            _git("worktree", "add", "--force", "--detach", str(folder), commit, step="worktree")
    return folder


def _git(*args: str, step: str) -> str:
    try:
        result = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                                timeout=GIT_TIMEOUT_S)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StepError("ab", step, f"git {' '.join(args)}: {exc}") from exc
    if result.returncode != 0:
        why = result.stderr.strip() or "not a commit of this repository"
        raise StepError("ab", step, f"git {' '.join(args)}: {why}")
    return result.stdout
