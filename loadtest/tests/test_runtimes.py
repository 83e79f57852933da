"""Each stack runs on the newest runtime it supports here, and says which one ran.

`servers/_shared/java/with-jdk` picks the JDK for the JVM stacks; the JDK
folders here are small stand-ins (a `release` file and a `java` that prints
its folder), since a machine has only the JDKs it has.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from loadtest.commands.stacks import native_runtime
from loadtest.core.manifest import REPO_ROOT, load
from loadtest.runners.native import NativeRunner

pytestmark = pytest.mark.e2e

WITH_JDK = REPO_ROOT / "servers" / "_shared" / "java" / "with-jdk"


def fake_jdk(folder: Path, version: str, javac: bool = True) -> Path:
    (folder / "bin").mkdir(parents=True)
    (folder / "release").write_text(f'IMPLEMENTOR="test"\nJAVA_VERSION="{version}"\n')
    tools = ["java", "javac"] if javac else ["java"]
    for tool in tools:
        script = folder / "bin" / tool
        script.write_text(f'#!/bin/sh\necho "{tool} from {folder.name}"\n')
        script.chmod(0o755)
    return folder


def with_jdk(
    jvm_dir: Path, java_home: str | None = None, command: str = "java"
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["SERVERLAB_JVM_DIR"] = str(jvm_dir)
    if java_home:
        env["JAVA_HOME"] = java_home
    return subprocess.run(
        [str(WITH_JDK), command], env=env, capture_output=True, text=True, timeout=30
    )


def test_with_jdk_picks_the_newest_jdk_21_or_later(tmp_path):
    fake_jdk(tmp_path / "jdk-17", "17.0.15")
    fake_jdk(tmp_path / "jdk-21", "21.0.12")
    fake_jdk(tmp_path / "jdk-25", "25.0.3")
    fake_jdk(tmp_path / "jre-26", "26.0.1", javac=False)  # a JRE cannot build: skipped
    (tmp_path / "jdk-latest").symlink_to(tmp_path / "jdk-21")  # Debian's aliases: skipped
    result = with_jdk(tmp_path)
    assert result.stdout.strip() == "java from jdk-25"
    assert result.stderr == ""


def test_a_java_home_of_21_or_later_wins_over_a_newer_jdk(tmp_path):
    chosen = fake_jdk(tmp_path / "jdk-21", "21.0.12")
    fake_jdk(tmp_path / "jdk-25", "25.0.3")
    assert with_jdk(tmp_path, java_home=str(chosen)).stdout.strip() == "java from jdk-21"


def test_an_older_java_home_is_passed_over(tmp_path):
    old = fake_jdk(tmp_path / "old" / "jdk-17", "17.0.15")
    fake_jdk(tmp_path / "jvm" / "jdk-21", "21.0.12")
    result = with_jdk(tmp_path / "jvm", java_home=str(old))
    assert result.stdout.strip() == "java from jdk-21"


def test_without_a_jdk_21_it_warns_and_runs_java_from_path(tmp_path):
    fake_jdk(tmp_path / "jdk-17", "17.0.15")
    result = with_jdk(tmp_path, command="true")
    assert "no JDK 21 or later found" in result.stderr
    assert result.returncode == 0  # the command still runs


@pytest.mark.parametrize("stack", ["spring-mvc", "spring-webflux"])
def test_the_jvm_stacks_report_the_jdk_they_run_on(stack):
    manifest = load(stack)
    runner = NativeRunner()
    if runner.unavailable_reason(manifest):
        pytest.skip(runner.unavailable_reason(manifest))
    reported = native_runtime(runner, manifest)
    picked = subprocess.run(
        [str(WITH_JDK), "java", "-version"], capture_output=True, text=True, timeout=60
    ).stderr.splitlines()
    assert reported == picked[0]
    major = int(re.search(r'version "(\d+)', reported).group(1))
    if any(Path("/usr/lib/jvm").glob("*25*")):
        assert major >= 21, reported  # this machine kind has a Temurin 25 JDK
