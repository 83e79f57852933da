import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from python_contract_data import CALENDAR_FILE

from serverlab_contract import (
    ConfigError,
    cgroup_cpu_limit,
    config_from_env,
    config_or_exit,
    cpus_available,
    workers_from_env,
)
from serverlab_contract.config import allowed_cpus_from_status


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def fake(tmp_path):
    """A fake /sys/fs/cgroup root and /proc/self/cgroup file."""
    root = tmp_path / "cgroup"
    root.mkdir()
    proc = tmp_path / "proc-self-cgroup"

    def limit(proc_text):
        write(proc, proc_text)
        return cgroup_cpu_limit(str(root), str(proc))

    limit.root = root
    return limit


def test_v2_quota(fake):
    write(fake.root / "cpu.max", "150000 100000\n")
    assert fake("0::/\n") == 1.5


def test_v2_unlimited(fake):
    write(fake.root / "cpu.max", "max 100000\n")
    assert fake("0::/\n") is None


def test_v2_nested_takes_the_smallest_ancestor(fake):
    write(fake.root / "kubepods" / "cpu.max", "200000 100000")
    write(fake.root / "kubepods" / "pod1" / "cpu.max", "max 100000")
    write(fake.root / "kubepods" / "pod1" / "app" / "cpu.max", "350000 100000")
    assert fake("0::/kubepods/pod1/app\n") == 2.0


def test_v2_path_not_mounted_falls_back_to_the_root(fake):
    write(fake.root / "cpu.max", "50000 100000")
    assert fake("0::/system.slice/docker-abc.scope\n") == 0.5


def test_v1_quota(fake):
    write(fake.root / "cpu" / "cpu.cfs_quota_us", "50000\n")
    write(fake.root / "cpu" / "cpu.cfs_period_us", "100000\n")
    proc = "4:memory:/\n3:cpuset:/\n2:cpuacct:/\n1:cpu:/docker/0123abcd\n0::/\n"
    assert fake(proc) == 0.5


def test_v1_combined_controller_mount(fake):
    write(fake.root / "cpu,cpuacct" / "app" / "cpu.cfs_quota_us", "250000")
    write(fake.root / "cpu,cpuacct" / "app" / "cpu.cfs_period_us", "100000")
    write(fake.root / "cpu,cpuacct" / "cpu.cfs_quota_us", "-1")
    write(fake.root / "cpu,cpuacct" / "cpu.cfs_period_us", "100000")
    assert fake("3:cpu,cpuacct:/app\n") == 2.5


def test_v1_unlimited(fake):
    write(fake.root / "cpu" / "cpu.cfs_quota_us", "-1")
    write(fake.root / "cpu" / "cpu.cfs_period_us", "100000")
    assert fake("1:cpu:/\n0::/\n") is None


@pytest.mark.parametrize("text", ["", "garbage", "100000", "x 100000", "0 100000", "5 0"])
def test_v2_garbage_is_ignored(fake, text):
    write(fake.root / "cpu.max", text)
    assert fake("0::/\n") is None


def test_no_cgroup_files(fake, tmp_path):
    assert fake("0::/\n") is None
    assert cgroup_cpu_limit(str(fake.root), str(tmp_path / "absent")) is None


def test_cpus_available_caps_the_affinity_by_the_quota(fake, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    proc = fake.root.parent / "proc-self-cgroup"
    write(proc, "0::/\n")
    args = (str(fake.root), str(proc))
    assert cpus_available(*args) == 4
    write(fake.root / "cpu.max", "150000 100000")
    assert cpus_available(*args) == 2  # 1.5 CPUs round up
    write(fake.root / "cpu.max", "10000 100000")
    assert cpus_available(*args) == 1  # never 0
    write(fake.root / "cpu.max", "800000 100000")
    assert cpus_available(*args) == 4  # the cpuset is smaller than the quota


def test_cpus_available_on_this_machine():
    assert cpus_available() >= 1


def test_allowed_cpus_from_the_status_file(tmp_path):
    status = tmp_path / "status"
    for allowed, count in (("0", 1), ("0-1", 2), ("0-1,3", 3), ("2,4-7", 5)):
        write(status, f"Name:\tpython\nCpus_allowed:\tff\nCpus_allowed_list:\t{allowed}\n")
        assert allowed_cpus_from_status(str(status)) == count
    assert allowed_cpus_from_status(str(tmp_path / "absent")) is None


@pytest.mark.skipif(not shutil.which("taskset"), reason="taskset (util-linux) not found")
def test_a_runtime_without_sched_getaffinity_still_counts_the_taskset_cores():
    # PyPy 3.9 has no os.sched_getaffinity: started on one core, it must count one.
    code = (
        "import os; del os.sched_getaffinity; "
        "from serverlab_contract.config import cpus_available; print(cpus_available())"
    )
    out = subprocess.run(
        ["taskset", "-c", "0", sys.executable, "-c", code],
        capture_output=True, text=True, timeout=60, check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    ).stdout
    assert out.strip() == "1"


def env(**extra):
    base = {"PORT": "8080", "WORKDAY_CALENDAR": str(CALENDAR_FILE)}
    base.update(extra)
    return {k: v for k, v in base.items() if v is not None}


def test_workers_from_env():
    assert workers_from_env({"WORKERS": "3"}) == 3
    assert workers_from_env({}) == cpus_available()
    assert workers_from_env({"WORKERS": ""}) == cpus_available()
    for bad in ("0", "-1", "two", "1.5", "+2", "\u0663"):
        with pytest.raises(ConfigError, match="WORKERS must be a positive integer"):
            workers_from_env({"WORKERS": bad})


def test_config_from_env():
    config = config_from_env(env(WORKERS="2"))
    assert (config.host, config.port, config.workers) == ("0.0.0.0", 8080, 2)
    assert config.calendar_path == str(CALENDAR_FILE)
    assert config.calendar.trading_day_now()
    assert config_from_env(env(HOST="127.0.0.1")).host == "127.0.0.1"
    assert config_from_env(env(PORT=None), default_port=8121).port == 8121
    assert config_from_env(env(PORT="9000"), default_port=8121).port == 9000


@pytest.mark.parametrize(
    "variables, message",
    [
        (env(PORT=None), "PORT is not set"),
        (env(PORT="http"), "PORT must be a positive integer, got 'http'"),
        (env(PORT="0"), "PORT must be a positive integer"),
        (env(PORT="70000"), "PORT must be at most 65535"),
        (env(WORKDAY_CALENDAR=None), "WORKDAY_CALENDAR is not set"),
        (env(WORKDAY_CALENDAR="/nonexistent/cal.txt"), "WORKDAY_CALENDAR=/nonexistent/cal.txt: "),
        (env(WORKERS="lots"), "WORKERS must be a positive integer, got 'lots'"),
    ],
)
def test_config_errors(variables, message):
    with pytest.raises(ConfigError) as info:
        config_from_env(variables)
    assert message in str(info.value)


def test_config_names_the_calendar_problem(tmp_path):
    path = tmp_path / "cal.txt"
    path.write_text("2020-01-01\n")
    with pytest.raises(ConfigError) as info:
        config_from_env(env(WORKDAY_CALENDAR=str(path)))
    assert (
        str(info.value) == f"WORKDAY_CALENDAR={path}: {path}: no '# range: FIRST LAST' comment line"
    )


def test_config_or_exit(capsys):
    with pytest.raises(SystemExit) as info:
        config_or_exit(env(WORKDAY_CALENDAR=None))
    assert info.value.code == 2
    assert "configuration error: WORKDAY_CALENDAR is not set" in capsys.readouterr().err
