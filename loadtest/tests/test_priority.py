"""The measured pair's scheduling priority (autogroup nice and nice)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loadtest.host.priority import can_raise, raise_priority
from loadtest.measure.tools.base import run_tool

pytestmark = pytest.mark.timing

needs_privilege = pytest.mark.skipif(
    not can_raise(-5) or not Path("/proc/self/autogroup").exists(),
    reason="raising priority needs root or CAP_SYS_NICE and autogroup support",
)


@needs_privilege
def test_tool_runs_with_raised_priority_in_its_own_autogroup(tmp_path):
    probe = [sys.executable, "-c",
             "import os; print(os.getpriority(os.PRIO_PROCESS, 0)); print(open('/proc/self/autogroup').read())"]  # fmt: skip
    code, out, *_ = run_tool(probe, tmp_path / "probe", timeout_s=30, priority=-5)
    assert code == 0
    nice, autogroup = out.splitlines()[:2]
    assert nice == "-5"
    assert autogroup.endswith("nice -5")
    # The harness's own autogroup is untouched.
    assert not Path("/proc/self/autogroup").read_text().strip().endswith("nice -5")


@needs_privilege
def test_running_server_tree_gets_the_priority():
    child = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        time.sleep(0.1)
        assert raise_priority([child.pid], -5)
        assert os.getpriority(os.PRIO_PROCESS, child.pid) == -5
        assert Path(f"/proc/{child.pid}/autogroup").read_text().strip().endswith("nice -5")
    finally:
        child.kill()
        child.wait()


def test_zero_priority_changes_nothing():
    assert raise_priority([os.getpid()], 0) is False
    assert can_raise(0)
