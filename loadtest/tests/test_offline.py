"""OFFLINE=1 and `make mirror`: builds from a local mirror, with no registry reachable.

The end-to-end test fills a mirror for two stacks with `make mirror`, then,
in a network namespace with only a loopback (`unshare -n`, so that any
registry contact fails instead of quietly succeeding), makes the tooling venv
from the mirror and runs `make check` in a fresh copy of the repository: both

pytestmark = pytest.mark.e2e
stacks are built from the mirror and pass, and a stack the mirror lacks is
skipped with the packages it lacks. The unit tests break each family's lookup
on purpose: a package taken out of the mirror is named, and only it.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from loadtest.core.manifest import REPO_ROOT, load_all
from loadtest.packages import fill, mirror, offline, registries
from loadtest.packages.fill import TOOLING_PIP
from loadtest.packages.supply_chain import SHARED_CSHARP
from loadtest.runners.choose import choose_runner, docker_problem
from loadtest.runners.docker import DockerRunner, offline_problem
from loadtest.runners.native import NativeRunner
from loadtest.tests.test_scaffold import repo_copy

SHA = "a" * 64


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


# -- the choice of each family, and the variables ---------------------------------------


def test_offline_names_all_none_or_some_families_and_anything_else_is_refused():
    assert mirror.parse_offline("") is None  # the probe decides
    assert mirror.parse_offline("1") == mirror.parse_offline("true") == set(mirror.FAMILIES)
    assert mirror.parse_offline("0") == mirror.parse_offline("none") == set()
    assert mirror.parse_offline("pypi, Maven") == {"pypi", "maven"}
    with pytest.raises(mirror.OfflineChoiceError, match="python is not a package family"):
        mirror.parse_offline("python,go")
    assert mirror.canonical(frozenset(mirror.FAMILIES)) == "1"
    assert mirror.canonical(frozenset({"maven", "pypi"})) == "pypi,maven"
    assert mirror.canonical(frozenset()) == "0"
    assert not registries.is_offline("pypi", {"OFFLINE": "0"})
    some = {"OFFLINE": "pypi"}
    assert registries.is_offline("pypi", some) and not registries.is_offline("npm", some)
    assert registries.is_offline(env={"OFFLINE": "true"}) and not registries.is_offline(env=some)


def test_every_package_manager_is_pointed_at_the_mirror_and_only_at_it(tmp_path):
    env = mirror.registry_env(tmp_path)
    assert env["PIP_NO_INDEX"] == "1" and env["PIP_FIND_LINKS"] == str(tmp_path / "pypi")
    assert env["GOPROXY"] == f"file://{tmp_path}/go/cache/download"
    assert env["MAVEN_ARGS"].split()[0] == "--offline"
    assert env["npm_config_offline"] == "true" and env["CARGO_NET_OFFLINE"] == "true"
    assert env["RestoreSources"] == str(tmp_path / "nuget")
    shell = registries.shell_env({"OFFLINE": "yes", "MIRROR": str(tmp_path)})
    exported = dict(line[len("export ") :].split("=", 1) for line in shell.splitlines())
    assert exported["OFFLINE"] == "1" and exported["CARGO_HOME"] == str(tmp_path / "cargo")


def test_a_family_left_online_keeps_its_registry_and_none_offline_exports_no_mirror(tmp_path):
    env = mirror.registry_env(tmp_path, frozenset({"pypi", "cargo"}))
    assert env["OFFLINE"] == "pypi,cargo" and env["PIP_NO_INDEX"] == "1"
    assert "CARGO_HOME" in env
    assert not {"GOPROXY", "MAVEN_ARGS", "npm_config_offline", "RestoreSources"} & set(env)
    assert mirror.registry_env(tmp_path, frozenset()) == {"OFFLINE": "0"}


def test_offline_the_docker_path_is_refused_with_the_reason_and_auto_goes_native(monkeypatch):
    monkeypatch.setenv("OFFLINE", "1")
    assert "OFFLINE=1" in docker_problem()
    runner, why = choose_runner("auto", probe=docker_problem)
    assert runner == "native" and "OFFLINE=1" in why
    monkeypatch.setenv("OFFLINE", "maven,pypi")
    assert "OFFLINE=pypi,maven: the images fetch" in docker_problem()


def test_offline_a_stacks_image_is_refused_only_for_its_own_family(monkeypatch):
    """A machine that reaches every registry but one still builds the other families'
    images: the Docker smoke runs where only NuGet is out of reach."""
    gin, sanic, spring = load_all(["gin", "sanic", "spring-webflux"])
    monkeypatch.setenv("OFFLINE", "nuget")
    assert offline_problem([gin, sanic, spring]) is None
    assert "OFFLINE=nuget" in offline_problem()
    monkeypatch.setenv("OFFLINE", "maven,nuget")
    assert offline_problem([gin, sanic]) is None
    problem = offline_problem([gin, spring])
    assert problem and "maven" in problem and "nuget" not in problem
    assert "maven" in DockerRunner().unavailable_reason(spring)


# -- the probe: a registry that answers, one that never does, one that refuses ---------


@pytest.fixture
def endpoints():
    """Three local endpoints: an HTTP server, a socket that accepts and never answers,
    and a closed port."""
    handler = http.server.SimpleHTTPRequestHandler
    answering = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=answering.serve_forever, daemon=True).start()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    yield {
        "answers": f"http://127.0.0.1:{answering.server_address[1]}/",
        "silent": f"http://127.0.0.1:{silent.getsockname()[1]}/",
        "refused": f"http://127.0.0.1:{closed_port}/",
    }
    answering.shutdown()
    silent.close()


def test_the_probe_tells_a_registry_that_answers_from_one_that_hangs_or_refuses(endpoints):
    answered, why = registries.probe_registry(endpoints["answers"], timeout=2)
    assert answered and "answered in" in why
    started = time.monotonic()
    answered, why = registries.probe_registry(endpoints["silent"], timeout=0.5)
    assert not answered and "did not answer in 0.5 s" in why
    assert time.monotonic() - started < 2  # bounded: it never hangs a run
    answered, why = registries.probe_registry(endpoints["refused"], timeout=2)
    assert not answered and "refused" in why.lower()


def test_without_offline_each_family_follows_its_probe_and_the_choice_is_printed_once(
    endpoints, tmp_path, monkeypatch
):
    monkeypatch.setattr(registries, "PROBE_FILE", tmp_path / "registries.json")
    monkeypatch.setattr(registries, "PROBE_TIMEOUT_S", 0.5)
    env = {"MIRROR": str(tmp_path / "mirror")}
    for family in mirror.FAMILIES:
        env[mirror.PROBE_OVERRIDE.format(family.upper())] = endpoints["refused"]
    env["SERVERLAB_REGISTRY_NPM"] = endpoints["answers"]
    env["SERVERLAB_REGISTRY_NUGET"] = endpoints["answers"]
    env["SERVERLAB_REGISTRY_GO"] = endpoints["silent"]
    lines: list[str] = []
    shell = registries.shell_env(env, report=lines.append)
    exported = dict(line[len("export ") :].split("=", 1) for line in shell.splitlines())
    assert exported["OFFLINE"] == "pypi,go,maven,cargo"
    assert "PIP_NO_INDEX" in exported and "npm_config_offline" not in exported
    assert "RestoreSources" not in exported
    assert len(lines) == len(mirror.FAMILIES)
    assert next(l for l in lines if l.startswith("go:")).startswith("go: mirror (registry ")
    assert "did not answer in 0.5 s" in next(l for l in lines if l.startswith("go:"))
    assert next(l for l in lines if l.startswith("npm:")).startswith("npm: registry (")
    # MIRROR names no folder: a family sent there is told what that means; one that is not, nothing.
    assert "there is no mirror at" in next(l for l in lines if l.startswith("go:"))
    assert "mirror" not in next(l for l in lines if l.startswith("npm:"))
    assert registries.missing_mirror(mirror.Source("go", True, ""), {"MIRROR": str(tmp_path)}) == ""
    # The same make run's next command takes the saved answer, silently.
    again: list[str] = []
    assert registries.shell_env(env, report=again.append) == shell and again == []
    # An explicit choice probes nothing.
    assert registries.offline_families({**env, "OFFLINE": "npm"}) == {"npm"}


def test_an_unknown_family_stops_the_shell_with_the_reason():
    result = subprocess.run([sys.executable, "-m", "loadtest.packages.registries", "shell-env"],
                            cwd=REPO_ROOT, env={**os.environ, "OFFLINE": "pip"},
                            capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 2 and "pip is not a package family" in result.stderr
    assert result.stdout == ""


# -- a mirror handed out read-only, with a packed part ---------------------------------


def test_a_read_only_mirror_with_a_packed_part_is_used_through_a_writable_copy(tmp_path):
    handed = tmp_path / "shared"
    write(handed / "pypi" / "demo-1.0-py3-none-any.whl", b"wheel")
    packed_from = tmp_path / "pack"
    write(packed_from / "maven" / "org" / "demo" / "demo-1.pom", "<project/>")
    write(packed_from / "poms" / SHA, "")
    with tarfile.open(handed / "maven.tar.gz", "w:gz") as archive:
        archive.add(packed_from / "maven", "maven")
        archive.add(packed_from / "poms", "poms")
    handed.chmod(0o555)
    try:
        assert registries.needs_copy(handed)
        copy = registries.usable_mirror(handed, tmp_path / "copy")
        assert (copy / "maven" / "org" / "demo" / "demo-1.pom").is_file()
        assert (copy / "poms" / SHA).is_file()
        assert (copy / "pypi").is_symlink() and (copy / "pypi").resolve() == handed / "pypi"
        (copy / "maven" / "written-by-maven").touch()  # the copy is writable
        assert sorted(p.name for p in handed.iterdir()) == ["maven.tar.gz", "pypi"]
        # Unchanged source: the copy is kept as it is (nothing unpacked again).
        assert registries.usable_mirror(handed, tmp_path / "copy") == copy
        assert (copy / "maven" / "written-by-maven").exists()
    finally:
        handed.chmod(0o755)
    plain = tmp_path / "plain"
    write(plain / "pypi" / "x.whl", b"x")
    assert registries.usable_mirror(plain, tmp_path / "copy2") == plain


# -- a family forced offline that the mirror lacks --------------------------------------


def test_a_family_forced_offline_that_the_mirror_lacks_skips_its_stacks_only(tmp_path, monkeypatch):
    stacks = tmp_path / "servers"
    for name, files in (("py", {"requirements.txt": f"flask==3.1.3 --hash=sha256:{SHA}\n"}),
                        ("js", {"package.json": "{}", "package-lock.json": "{}"})):  # fmt: skip
        for file, text in files.items():
            write(stacks / name / file, text)
    empty = tmp_path / "empty-mirror"
    empty.mkdir()
    monkeypatch.setenv("MIRROR", str(empty))
    monkeypatch.setenv("OFFLINE", "pypi")
    runner = NativeRunner()
    needs_build = lambda manifest: True  # noqa: E731
    monkeypatch.setattr(runner, "needs_build", needs_build)
    py = SimpleNamespace(name="py", folder=stacks / "py", native={"requires": []})
    js = SimpleNamespace(name="js", folder=stacks / "js", native={"requires": []})
    reason = runner.unavailable_reason(py)
    assert f"pypi from the mirror (OFFLINE=pypi) and the mirror {empty} lacks flask==3.1.3" in reason
    assert "make mirror SERVERS=py" in reason
    assert runner.unavailable_reason(js) is None  # npm still asks its registry


# -- a mirror for another interpreter ---------------------------------------------------


def fake_wheel(folder: Path, tag: str) -> Path:
    """A minimal valid wheel of `demo 1.0` for one interpreter tag."""
    path = folder / f"demo-1.0-{tag}-{tag}-manylinux_2_17_x86_64.whl"
    info = "demo-1.0.dist-info"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
                       f"Tag: {tag}-{tag}-manylinux_2_17_x86_64\n")  # fmt: skip
        wheel.writestr(f"{info}/RECORD", "")
    return path


def test_make_mirror_fetches_the_files_of_another_interpreter_from_the_registry(tmp_path):
    index = tmp_path / "index" / "simple" / "demo"
    index.mkdir(parents=True)
    wheels = [fake_wheel(index, tag) for tag in ("cp39", "cp312")]
    links = "".join(f'<a href="{w.name}">{w.name}</a>' for w in wheels)
    (index / "index.html").write_text(f"<html><body>{links}</body></html>")
    hashes = " ".join(f"--hash=sha256:{hashlib.sha256(w.read_bytes()).hexdigest()}" for w in wheels)
    lock = write(tmp_path / "stack" / "requirements.txt", f"demo==1.0 {hashes}\n")
    handler = functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "index")
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    store = tmp_path / "mirror"
    try:
        env = {"PIP_INDEX_URL": f"http://127.0.0.1:{server.server_address[1]}/simple/",
               "PIP_NO_INDEX": "", "PIP_FIND_LINKS": ""}  # fmt: skip
        with pytest.MonkeyPatch.context() as patch:
            for name, value in env.items():
                patch.setenv(name, value)
            fill.pip_download(TOOLING_PIP, lock, store, for_python="3.12")
    finally:
        server.shutdown()
    assert sorted(p.name for p in (store / "pypi").iterdir()) == [wheels[1].name]
    with pytest.raises(ValueError, match="3.x is not a CPython version"):
        fill.python_versions("3.11,3.x")
    assert fill.python_versions(" 3.11, 3.13") == ["3.11", "3.13"]


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
    not (shutil.which("go") and not registries.offline_families()),
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


# -- NuGet: filled by a locked restore, read through RestoreSources ------------------


@pytest.mark.skipif(shutil.which("dotnet") is None, reason="dotnet not found")
@pytest.mark.skipif(not can_unshare_network(), reason="unshare -n not available (needs root)")
def test_the_csharp_tests_restore_from_a_nuget_mirror_with_no_network(tmp_path):
    # Filled the way make mirror does it (a locked restore into the mirror's nuget/),
    # then restored again with an empty packages folder, the mirror as the only
    # source and no route anywhere: every package of the lock file comes from it.
    store = tmp_path / "mirror"
    if registries.is_offline("nuget"):
        pytest.skip("nuget is read from a mirror here: this one cannot be filled")
    assert fill.fill_nuget(SHARED_CSHARP / "Serverlab.Contract.Tests", store) is None
    assert offline.missing_nuget(SHARED_CSHARP / "Serverlab.Contract.Tests", store) == []
    # A copy of the projects, so the restore writes its obj/ folders there and not in
    # the checkout (one obj/ given on the command line would be shared by the
    # referenced project too, and the last restore written wins).
    sources = tmp_path / "csharp"
    shutil.copytree(SHARED_CSHARP, sources, ignore=shutil.ignore_patterns("bin", "obj"))
    project = sources / "Serverlab.Contract.Tests" / "Serverlab.Contract.Tests.csproj"
    env = {**os.environ, **mirror.family_env("nuget", store),
           "NUGET_PACKAGES": str(tmp_path / "empty-packages"), "DOTNET_CLI_HOME": str(tmp_path)}
    restored = subprocess.run(
        ["unshare", "-n", "dotnet", "restore", str(project), "--locked-mode", "--force",
         "--no-cache"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert restored.returncode == 0, restored.stdout[-3000:] + restored.stderr[-2000:]
    assert (tmp_path / "empty-packages" / "xunit" / "2.9.3").is_dir()
    # A package taken out of the mirror is named, and only it.
    shutil.rmtree(mirror.part_dir(store, "nuget") / "xunit.assert")
    assert offline.missing_nuget(SHARED_CSHARP / "Serverlab.Contract.Tests", store) == [
        "xunit.assert@2.9.3"
    ]
