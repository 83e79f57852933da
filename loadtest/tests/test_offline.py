"""OFFLINE=1 and `make mirror`: builds from a local mirror, with no registry reachable.

The end-to-end test fills a mirror for two stacks with `make mirror`, then,
in a network namespace with only a loopback (`unshare -n`, so that any
registry contact fails instead of quietly succeeding), makes the tooling venv
from the mirror and runs `make check` in a fresh copy of the repository: both
stacks are built from the mirror and pass, and a stack the mirror lacks is
skipped with the packages it lacks. The unit tests break each family's lookup
on purpose: a package taken out of the mirror is named, and only it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loadtest.core import mirror
from loadtest.core.manifest import REPO_ROOT
from loadtest.runners import offline
from loadtest.runners.choose import choose_runner
from loadtest.runners.docker import daemon_problem
from loadtest.tests.test_scaffold import repo_copy

SHA = "a" * 64


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


# -- the switch and the variables -----------------------------------------------------


def test_offline_is_off_unless_asked_and_the_shell_gets_nothing_then():
    assert not mirror.is_offline({})
    assert not mirror.is_offline({"OFFLINE": "0"})
    assert mirror.is_offline({"OFFLINE": "true"}) and mirror.is_offline({"OFFLINE": "1"})
    assert mirror.shell_env({}) == ""


def test_every_package_manager_is_pointed_at_the_mirror_and_only_at_it(tmp_path):
    env = mirror.registry_env(tmp_path)
    assert env["PIP_NO_INDEX"] == "1" and env["PIP_FIND_LINKS"] == str(tmp_path / "pypi")
    assert env["GOPROXY"] == f"file://{tmp_path}/go/cache/download"
    assert env["MAVEN_ARGS"].split()[0] == "--offline"
    assert env["npm_config_offline"] == "true" and env["CARGO_NET_OFFLINE"] == "true"
    shell = mirror.shell_env({"OFFLINE": "yes", "MIRROR": str(tmp_path)})
    exported = dict(line[len("export ") :].split("=", 1) for line in shell.splitlines())
    assert exported["OFFLINE"] == "1" and exported["CARGO_HOME"] == str(tmp_path / "cargo")


def test_offline_the_docker_path_is_refused_with_the_reason_and_auto_goes_native(monkeypatch):
    monkeypatch.setenv("OFFLINE", "1")
    assert "OFFLINE=1" in daemon_problem()
    runner, why = choose_runner("auto", probe=daemon_problem)
    assert runner == "native" and "OFFLINE=1" in why


# -- each family's lookup, broken on purpose --------------------------------------------


def test_python_a_requirement_whose_files_are_all_absent_is_named(tmp_path):
    wheel = b"wheel bytes"
    digest = hashlib.sha256(wheel).hexdigest()
    folder = tmp_path / "stack"
    write(folder / "requirements.txt",
          f"here==1.0 \\\n    --hash=sha256:{SHA} \\\n    --hash=sha256:{digest}\n"
          f"gone==2.0 --hash=sha256:{'b' * 64}\n"
          f"other==3.0 --hash=sha256:{'c' * 64} ; python_version < '3.8'\n")  # fmt: skip
    write(tmp_path / "mirror" / "pypi" / "here-1.0-py3-none-any.whl", wheel)
    assert offline.missing_python(folder, tmp_path / "mirror") == ["gone==2.0"]


def test_go_a_module_or_its_go_mod_absent_from_the_cache_is_named(tmp_path):
    folder = tmp_path / "stack"
    write(folder / "go.sum",
          "github.com/Upper/mod v1.0.0 h1:x=\ngithub.com/Upper/mod v1.0.0/go.mod h1:y=\n"
          "example.com/dep v0.2.0/go.mod h1:z=\n")  # fmt: skip
    downloads = tmp_path / "mirror" / "go" / "cache" / "download"
    write(downloads / "github.com" / "!upper" / "mod" / "@v" / "v1.0.0.zip", "zip")
    write(downloads / "github.com" / "!upper" / "mod" / "@v" / "v1.0.0.mod", "mod")
    assert offline.missing_go(folder, tmp_path / "mirror") == ["example.com/dep@v0.2.0/go.mod"]


def test_npm_a_package_absent_from_the_cache_is_named_and_another_platform_is_not_needed(
    tmp_path,
):
    def integrity(data: bytes) -> str:
        return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()

    packages = {
        "": {"name": "stack"},
        "node_modules/kept": {"version": "1.0.0", "integrity": integrity(b"kept")},
        "node_modules/lost": {"version": "2.0.0", "integrity": integrity(b"lost")},
        "node_modules/mac-only": {
            "version": "3.0.0",
            "integrity": integrity(b"mac"),
            "optional": True,
            "os": ["darwin"],
        },  # fmt: skip
    }
    folder = tmp_path / "stack"
    write(folder / "package-lock.json", json.dumps({"lockfileVersion": 3, "packages": packages}))
    hexdigest = hashlib.sha512(b"kept").hexdigest()
    content = tmp_path / "mirror" / "npm" / "_cacache" / "content-v2" / "sha512"
    write(content / hexdigest[:2] / hexdigest[2:4] / hexdigest[4:], b"kept")
    assert offline.missing_npm(folder, tmp_path / "mirror") == ["lost@2.0.0"]


def test_cargo_a_crate_absent_from_the_cache_is_named(tmp_path):
    source = 'source = "registry+https://github.com/rust-lang/crates.io-index"'
    folder = tmp_path / "stack"
    write(folder / "Cargo.lock",
          f'version = 4\n\n[[package]]\nname = "stack"\nversion = "0.1.0"\n\n'
          f'[[package]]\nname = "kept"\nversion = "1.0.0"\n{source}\nchecksum = "{SHA}"\n\n'
          f'[[package]]\nname = "lost"\nversion = "2.0.0"\n{source}\nchecksum = "{SHA}"\n')  # fmt: skip
    write(tmp_path / "mirror" / "cargo" / "registry" / "cache" / "index.crates.io-1" /
          "kept-1.0.0.crate", "crate")  # fmt: skip
    assert offline.missing_cargo(folder, tmp_path / "mirror") == ["lost@2.0.0"]


def test_maven_a_pom_changed_since_the_mirror_was_filled_is_named(tmp_path):
    folder = tmp_path / "stack"
    pom = write(folder / "pom.xml", "<project/>")
    recorded = tmp_path / "mirror" / "poms"
    for path in offline.maven_poms(folder):
        write(recorded / mirror.pom_digest(path), "")
    assert offline.missing_maven(folder, tmp_path / "mirror") == []
    pom.write_text("<project><version>2</version></project>")
    assert offline.missing_maven(folder, tmp_path / "mirror") == [
        "the dependencies of stack/pom.xml as it is now"
    ]


# -- end to end, with no network --------------------------------------------------------


def can_unshare_network() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(
    not can_unshare_network(),
    reason="!!! unshare -n NOT AVAILABLE (needs root): offline builds not exercised !!!",
)
@pytest.mark.skipif(
    not (shutil.which("go") and mirror.is_offline() is False),
    reason="go missing, or the suite itself runs offline (the mirror cannot be filled)",
)
def test_two_stacks_build_and_pass_from_the_mirror_with_no_network_and_a_third_is_skipped(
    tmp_path,
):
    store = tmp_path / "mirror"
    env = {k: v for k, v in os.environ.items() if k not in ("OFFLINE", "MIRROR", "MAKEFLAGS")}
    filled = subprocess.run(
        [sys.executable, "-m", "loadtest", "mirror", "--servers", "sanic,gin"],
        cwd=REPO_ROOT, env={**env, "MIRROR": str(store)},
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert filled.returncode == 0, filled.stdout + filled.stderr
    assert "3 parts mirrored, 0 skipped, 0 failed" in filled.stdout, filled.stdout

    repo = repo_copy(tmp_path / "repo")
    (repo / ".venv").unlink()  # made again below, from the mirror
    # A fresh Go module cache: modules must come from the mirror, not from this host's cache.
    script = """
        set -e
        ip link set lo up
        # Nothing but the loopback: no route leads to any registry.
        if [ -n "$(ip route show)" ]; then echo "A ROUTE OUT"; exit 3; fi
        make bootstrap
        make check SERVERS=sanic,gin,bjoern
    """
    offline_env = {**env, "OFFLINE": "1", "MIRROR": str(store), "LANG": "C.UTF-8",
                   "GOMODCACHE": str(tmp_path / "gomodcache"), "GOFLAGS": "-modcacherw"}  # fmt: skip
    checked = subprocess.run(
        ["unshare", "-n", "bash", "-c", script], cwd=repo, env=offline_env,
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    output = checked.stdout + checked.stderr
    assert "A ROUTE OUT" not in output
    assert (repo / ".venv" / "bin" / "python").exists(), output[-3000:]
    assert checked.returncode == 0, output[-3000:]
    for stack in ("sanic", "gin"):
        assert re.search(rf"\[{stack}\] built in", output), output[-3000:]
        assert re.search(rf"^{stack} +PASSED", output, re.M), output[-3000:]
    row = next(line for line in output.splitlines() if line.startswith("bjoern "))
    assert "SKIPPED" in row and "bjoern==" in row and "make mirror SERVERS=bjoern" in row, row
    assert "check: 2 passed, 0 failed, 1 skipped" in output
