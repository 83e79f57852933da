"""Locking a Python stack: its `*.in` files compiled to hash-pinned `*.txt` lock files
by pip-tools, run under the interpreter the stack runs on (`make lock-stack SERVER=x`).

pip-compile resolves environment markers for the Python it runs under, so a stack is
locked with the interpreter its manifest's build creates its venv with: `find-python
MINOR` (servers/_shared/python/find-python) or `pypy3`. pip-tools lives in a venv of
its own per interpreter under `.build/`, never in the stack's or the tooling's venv.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from loadtest.core.manifest import REPO_ROOT, Manifest

FIND_PYTHON = REPO_ROOT / "servers" / "_shared" / "python" / "find-python"
PIPTOOLS_ROOT = REPO_ROOT / ".build"
# The lock files of a stack, in the order they are installed: build tools first.
LOCKED = ("build-requirements", "requirements")
# --allow-unsafe: without it setuptools, which some builds ask for, is left unpinned and
# the hash-checked install refuses it (docs/reliability.md, "Re-locking a Python stack").
COMPILE_OPTIONS = ("--generate-hashes", "--allow-unsafe", "--strip-extras",
                   "--no-emit-find-links")  # fmt: skip
# `find-python 3.13 [--readable-by USER]`: the same arguments find the same interpreter.
FIND_PYTHON_IN_BUILD = re.compile(r"find-python (\d+\.\d+)((?: --readable-by [\w-]+)?)")


class LockError(Exception):
    """A stack this cannot lock, or a step that failed; the message says which."""


@dataclass(frozen=True)
class Interpreter:
    label: str  # "3.13", "pypy3": names the pip-tools venv
    path: str
    note: str = ""  # find-python's word when it fell back to another version


def interpreter(manifest: Manifest) -> Interpreter:
    """The Python the stack's build makes its venv with."""
    build = manifest.native.get("build", "")
    if manifest.language != "Python":
        raise LockError(f"{manifest.name} is a {manifest.language} stack: its own package "
                        "manager locks it (docs/reliability.md)")  # fmt: skip
    if "pypy3 -m venv" in build:
        path = shutil.which("pypy3")
        if not path:
            raise LockError(f"{manifest.name} runs on PyPy and pypy3 is not installed here")
        return Interpreter("pypy3", path)
    named = FIND_PYTHON_IN_BUILD.search(build)
    if not named:
        raise LockError(f"{manifest.name}: its [native] build names no interpreter "
                        "(find-python MINOR or pypy3)")  # fmt: skip
    found = run([str(FIND_PYTHON), named.group(1), *named.group(2).split()],
                "find the interpreter")  # fmt: skip
    path = found.stdout.strip()
    version = run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                  "read the interpreter's version").stdout.strip()  # fmt: skip
    return Interpreter(version, path, found.stderr.strip())


# pip-compile resolving a stack against PyPI takes seconds; a stuck index, not minutes.
STEP_TIMEOUT_S = 600


def run(command: list[str], step: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    try:
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                                timeout=STEP_TIMEOUT_S)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LockError(f"{step}: {exc}") from None
    if result.returncode != 0:
        raise LockError(f"{step}: {' '.join(command)} exited {result.returncode}\n"
                        f"{(result.stderr or result.stdout).strip()[-2000:]}")  # fmt: skip
    return result


def pip_compile(python: Interpreter, pip_tools: str, root: Path = PIPTOOLS_ROOT) -> Path:
    """pip-compile of `pip_tools`'s version in a venv of `python`, made once."""
    venv = root / f"piptools-{python.label}"
    tool = venv / "bin" / "pip-compile"
    if tool.is_file() and pip_tools in run([str(tool), "--version"], "pip-compile").stdout:
        return tool
    run([python.path, "-m", "venv", "--clear", str(venv)], "make the pip-tools venv")
    run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
         f"pip-tools=={pip_tools}"], "install pip-tools")  # fmt: skip
    return tool


def lock(folder: Path, tool: Path, upgrade: bool = False) -> list[Path]:
    """Compile each `*.in` of the stack's folder to its `*.txt`; the lock files written.
    pip-compile keeps every pin the `.in` still allows, unless `upgrade`."""
    written = []
    for name in LOCKED:
        source = folder / f"{name}.in"
        if not source.is_file():
            continue
        command = [str(tool), "-q", *COMPILE_OPTIONS, "-o", f"{name}.txt", source.name]
        run([*command, "--upgrade"] if upgrade else command, f"lock {source}", cwd=folder)
        written.append(folder / f"{name}.txt")
    if not written:
        raise LockError(f"{folder} has no {' or '.join(n + '.in' for n in LOCKED)} to lock")
    return written
