"""`make lock-stack`: a Python stack's lock files compiled again under the interpreter it
runs on come out as committed (packages/python_lock.py); other stacks are refused."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from loadtest.core.manifest import REPO_ROOT, load
from loadtest.packages.python_lock import (FIND_PYTHON, LOCKED, LockError, interpreter, lock,
                                           pip_compile)  # fmt: skip

PIPTOOLS_VERSION = re.search(r"^PIPTOOLS_VERSION := (\S+)$", (REPO_ROOT / "Makefile").read_text(),
                             re.M).group(1)  # fmt: skip


# Python 3.13; 3.12; and the one mod_wsgi's Apache user can run (find-python --readable-by).
@pytest.mark.e2e
@pytest.mark.parametrize("stack", ["gunicorn", "meinheld", "mod-wsgi"])
def test_a_stack_locked_again_is_what_is_committed(tmp_path, stack):
    manifest = load(stack)
    for name in LOCKED:  # the .txt too: pip-compile keeps the pins the .in still allows
        for suffix in (".in", ".txt"):
            shutil.copy(manifest.folder / f"{name}{suffix}", tmp_path)
    python = interpreter(manifest)
    if stack == "mod-wsgi":  # the one its build takes: what Apache's user can run here
        built_with = subprocess.run([str(FIND_PYTHON), "3.13", "--readable-by", "www-data"],
                                    capture_output=True, text=True, check=True)  # fmt: skip
        assert python.path == built_with.stdout.strip()
    else:
        assert python.label == {"gunicorn": "3.13", "meinheld": "3.12"}[stack]
    written = lock(tmp_path, pip_compile(python, PIPTOOLS_VERSION))
    assert [path.name for path in written] == [f"{name}.txt" for name in LOCKED]
    for path in written:
        committed = (manifest.folder / path.name).read_text()
        if stack == "mod-wsgi":  # committed from a host where that is Debian's 3.11
            committed = committed.replace("with Python 3.11", f"with Python {python.label}")
        assert path.read_text() == committed, path.name


def test_a_stack_of_another_language_is_refused_by_name():
    with pytest.raises(LockError, match=r"gin is a Go stack: its own package manager"):
        interpreter(load("gin"))


def test_a_folder_without_requirements_is_refused(tmp_path):
    with pytest.raises(LockError, match="has no build-requirements.in or requirements.in"):
        lock(tmp_path, tmp_path / "pip-compile")


def test_make_lock_stack_says_how_to_use_it():
    env = {k: v for k, v in os.environ.items() if k not in ("SERVER", "MAKEFLAGS", "MAKELEVEL")}
    result = subprocess.run(["make", "-s", "lock-stack"], cwd=REPO_ROOT, capture_output=True,
                            text=True, env=env)  # fmt: skip
    assert result.returncode == 2 and "usage: make lock-stack SERVER=" in result.stdout
