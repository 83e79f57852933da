"""Client-bound detection: the load tool's own CPU time, measured by the kernel."""

from __future__ import annotations

import sys

from loadtest.measure.tools.base import CLIENT_BOUND_SHARE, client_bound, run_tool, tool_cpu_share


def test_threshold_is_ninety_percent_of_the_tool_cores():
    assert CLIENT_BOUND_SHARE == 0.9
    assert client_bound(cpu_seconds=9.0, wall_seconds=10.0, cores=1)
    assert not client_bound(cpu_seconds=8.9, wall_seconds=10.0, cores=1)
    assert not client_bound(cpu_seconds=9.0, wall_seconds=10.0, cores=2)
    assert client_bound(cpu_seconds=18.5, wall_seconds=10.0, cores=2)
    assert tool_cpu_share(1.0, 0.0, 1) == 0.0


def test_tool_cpu_time_comes_from_the_kernel(tmp_path):
    """A spinning process shows its CPU seconds, a sleeping one none.

    Fixed work rather than fixed time: on a busy shared host the spinner may
    get only part of a core, and the share would then say little.
    """
    busy = [sys.executable, "-c", "import time\nend = time.process_time() + 0.4\n"
            "while time.process_time() < end: pass"]  # fmt: skip
    idle = [sys.executable, "-c", "import time; time.sleep(0.4)"]
    code, _, _, busy_cpu, busy_wall = run_tool(busy, tmp_path / "busy", timeout_s=30)
    assert code == 0
    assert busy_cpu >= 0.4, busy_cpu
    code, _, _, idle_cpu, idle_wall = run_tool(idle, tmp_path / "idle", timeout_s=30)
    assert code == 0
    assert idle_cpu < 0.2, idle_cpu
    assert not client_bound(idle_cpu, idle_wall, cores=1)
    assert tool_cpu_share(busy_cpu, busy_wall, 1) > tool_cpu_share(idle_cpu, idle_wall, 1)


def test_run_tool_kills_at_the_deadline(tmp_path):
    code, *_, wall = run_tool(["sleep", "30"], tmp_path / "slow", timeout_s=0.5)
    assert code == -9
    assert wall < 5
