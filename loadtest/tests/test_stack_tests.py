"""`loadtest stack-tests` (the stack-tests stage of `make test`) on throw-away stacks.

Each stack's own tests run from its manifest's `[native] test`, or its family's
default; a failure names the stack and shows the output; a missing toolchain is
a listed skip, never a pass; a stack tested by another stage says which.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from loadtest.core.manifest import REPO_ROOT

pytestmark = pytest.mark.e2e


def write_stack(root: Path, name: str, requires: list[str], test: str | None, files=None) -> str:
    folder = root / name
    folder.mkdir(parents=True)
    for file_name, text in (files or {}).items():
        (folder / file_name).write_text(text)
    test_line = f"test = {json.dumps(test)}" if test is not None else ""
    (folder / "server.toml").write_text(
        textwrap.dedent(
            f"""\
            display_name = "{name}"
            language = "Shell"
            framework = "none"
            framework_version = "1.0"
            runtime = "bash"
            runtime_version = "5.2"
            port = 1234

            [concurrency]
            kind = "threads"
            default_workers = "cpus"
            workers = "none"

            [native]
            requires = {json.dumps(requires)}
            apt = ["bash"]
            version = "bash --version | head -1"
            build = "echo built > \\"$BUILD_DIR/artefact\\""
            run = "exec sleep 60"
            {test_line}

            [docker]
            dockerfile = "Dockerfile"

            [[tuning]]
            setting = "none"
            why = "a stand-in for the stack-tests command"
            """
        )
    )
    return name


def test_each_stacks_own_tests_run_fail_or_are_skipped_by_name(tmp_path):
    token = secrets.token_hex(3)
    names = {
        # The test sees the build's output: stack-tests builds first.
        "passes": write_stack(tmp_path, f"st-pass-{token}", ["bash"],
                              'test "$(cat "$BUILD_DIR/artefact")" = built'),
        "fails": write_stack(tmp_path, f"st-fail-{token}", ["bash"],
                             "echo 'vector 3: want 2024-05-06'; exit 3"),
        "toolless": write_stack(tmp_path, f"st-notool-{token}", ["no-such-tool-here"], "true"),
        "python": write_stack(tmp_path, f"st-py-{token}", ["bash"], None,
                              files={"requirements.txt": "flask==3.1.2\n"}),
        "debian": write_stack(tmp_path, f"st-deb-{token}", ["bash"], None),
    }  # fmt: skip
    env = dict(os.environ, SERVERLAB_SERVERS_DIR=str(tmp_path))
    try:
        result = subprocess.run(
            [sys.executable, "-m", "loadtest", "stack-tests"], cwd=REPO_ROOT, env=env,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        out = result.stdout
        assert result.returncode == 1, out + result.stderr
        assert f"passed {names['passes']}: " in out
        assert f"FAILED {names['fails']}: `echo 'vector 3" in out
        assert "exit code 3" in out and "vector 3: want 2024-05-06" in out
        assert f"SKIPPED {names['toolless']}: toolchain not found: no-such-tool-here" in out
        assert f"- {names['python']}: run by the python-fast and python-e2e stages" in out
        assert f"- {names['debian']}: no tests: set [native] test" in out
        assert f"stack-tests: failed for {names['fails']}" in out
        skipped = json.loads((REPO_ROOT / ".build" / "last-stack-tests.json").read_text())
        assert skipped == [{"stack": names["toolless"], "status": "skipped",
                            "reason": "toolchain not found: no-such-tool-here"}]  # fmt: skip
    finally:
        for name in names.values():
            shutil.rmtree(REPO_ROOT / ".build" / name, ignore_errors=True)
