"""Filling the package mirror (`make mirror`): each family's package manager run into
the layout an offline run reads (packages/mirror.py), then checked with the lookup
that run will make (packages/offline.py). The command (commands/mirror.py) chooses
the parts; every part is one fill here.
"""

from __future__ import annotations

import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from loadtest.core import manifest as manifests
from loadtest.core.families import family_of
from loadtest.core.manifest import REPO_ROOT
from loadtest.packages import mirror
from loadtest.packages.offline import maven_poms, missing_from_mirror
from loadtest.packages.supply_chain import SHARED_JAVA, csharp_projects

FILL_TIMEOUT_S = 1800
TOOLING_LOCK = REPO_ROOT / "requirements-dev.txt"
TOOLING_PIP = Path(sys.executable).parent / "pip"  # the tooling venv's, running this command
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


Part = tuple[str, str | None, Callable[[], str | None]]  # label, registry, fill


def pip_download(pip: Path | str, lock: Path, root: Path, for_python: str | None = None) -> None:
    """Every file `lock` pins, for the interpreter of `pip` or for CPython `for_python`."""
    target = []
    if for_python:
        abi = "cp" + for_python.replace(".", "")
        target = ["--python-version", for_python, "--implementation", "cp", "--abi", abi]
        target += [arg for platform in OTHER_PYTHON_PLATFORMS for arg in ("--platform", platform)]
    dest = mirror.part_dir(root, "pypi")
    run([str(pip), "download", "--disable-pip-version-check", "--no-deps", "--require-hashes",
         "--no-build-isolation", *target, "--dest", str(dest), "-r", str(lock)],
        cwd=lock.parent)  # fmt: skip


def fill_go(folder: Path, root: Path) -> None:
    run(["go", "mod", "download", "all"], cwd=folder, env=go_fill_env(root))


def fill_npm(folder: Path, root: Path) -> None:
    # A copy of the two files: the stack's own node_modules stays as it is.
    with tempfile.TemporaryDirectory(prefix="serverlab-npm-") as work:
        for name in ("package.json", "package-lock.json"):
            shutil.copy(folder / name, work)
        run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=Path(work),
            env={"npm_config_cache": str(mirror.part_dir(root, "npm"))})  # fmt: skip


def fill_cargo(folder: Path, root: Path) -> None:
    run(["cargo", "fetch", "--locked"], cwd=folder, env=cargo_fill_env(root))


def fill_nuget(folder: Path, root: Path) -> str | None:
    if not shutil.which("dotnet"):
        return "toolchain not found: dotnet"
    for project in csharp_projects(folder):
        run(["dotnet", "restore", str(project), "--locked-mode", "--packages",
             str(mirror.part_dir(root, "nuget"))], cwd=folder)  # fmt: skip
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
    repository = mirror.part_dir(root, "maven")
    run([str(SHARED_JAVA / "with-jdk"), "mvn", "-B", "-ntp", "-q", "-f", str(SHARED_JAVA / "pom.xml"),
         "verify"],
        cwd=SHARED_JAVA, env={"MAVEN_ARGS": f"-Dmaven.repo.local={repository}"})  # fmt: skip
    recorded = mirror.part_dir(root, "poms")
    recorded.mkdir(parents=True, exist_ok=True)
    for manifest in manifests.load_all():
        if family_of(manifest.folder).name == "maven":
            for pom in maven_poms(manifest.folder):
                (recorded / mirror.pom_digest(pom)).touch()
    return None


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


def go_fill_env(root: Path) -> dict:
    # -modcacherw: the mirror stays deletable (Go makes its module cache read-only).
    return {"GOMODCACHE": str(mirror.part_dir(root, "go")), "GOFLAGS": "-modcacherw"}


def cargo_fill_env(root: Path) -> dict:
    return {"CARGO_HOME": str(mirror.part_dir(root, "cargo"))}


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
