"""Every dependency of every stack is pinned (docs/reliability.md, "Supply chain").

The first test is the rule itself, run on the repository: it fails as soon
as a requirements file loses a hash, a build installs without
--require-hashes, a Go module lacks its go.sum or a POM uses a version
range or a SNAPSHOT. The others prove the checker catches each violation.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from loadtest.core.errors import StepError
from loadtest.core.families import family_of, own_tests
from loadtest.core.manifest import load_all
from loadtest.packages import supply_chain as sc
from loadtest.packages.resolved import resolved_dependencies
from loadtest.tests.stand_in_manifest import python_stand_in

HASH = "--hash=sha256:" + "a" * 64


def test_every_stack_is_pinned():
    problems = sc.all_problems()
    assert not problems, "\n".join(problems)


def test_python_stacks_have_hashed_requirements():
    """Not vacuous: the Python stacks are found and their lock files read."""
    python = [m for m in load_all() if family_of(m.folder).name == "python"]
    assert python, "no Python stack found"
    for m in python:
        assert (m.folder / "requirements.txt").is_file(), m.name


def test_a_python_stacks_framework_version_is_the_one_its_lock_file_pins():
    python = [m for m in load_all() if family_of(m.folder).name == "python"]
    checked = [m for m in python if sc.framework_pin_problems(m, [m.folder / "requirements.txt"])
               == [] and package_pinned(m)]  # fmt: skip
    assert len(checked) >= 8, [m.name for m in checked]  # not vacuous: most name their package
    sanic = next(m for m in python if m.name == "sanic")
    wrong = dataclasses.replace(sanic, framework_version="9.9.9")
    (problem,) = sc.framework_pin_problems(wrong, [sanic.folder / "requirements.txt"])
    assert "framework_version '9.9.9', but servers/sanic/requirements.txt pins sanic==" in problem


def package_pinned(manifest) -> bool:
    package = sc.package_key(manifest.framework.split()[0])
    text = (manifest.folder / "requirements.txt").read_text()
    return any(sc.package_key(line.split("==")[0]) == package
               for line in sc.requirement_lines(text) if "==" in line)  # fmt: skip


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_requirement_without_hash_or_pin_is_reported(tmp_path):
    path = write(
        tmp_path / "requirements.txt",
        f"good==1.0 \\\n    {HASH}\n"
        "nohash==2.0\n"
        f"ranged>=3 {HASH}\n"
        "# a comment\n"
        f"--extra-index-url https://example.invalid/simple\n",
    )
    problems = sc.requirements_problems(path)
    text = "\n".join(problems)
    assert "nohash==2.0 has no sha256 hash" in text
    assert "not pinned with ==" in text and "ranged" in text
    assert "--extra-index-url is not allowed" in text
    assert "good" not in text
    assert len(problems) == 3


def test_pip_install_flags_are_required():
    script = (
        "python -m venv v\n"
        "v/bin/pip install --require-hashes --only-binary :all: -r build-requirements.txt\n"
        "v/bin/pip install --require-hashes --no-build-isolation -r requirements.txt\n"
        "v/bin/pip install -r requirements.txt && v/bin/pip install flask==3.0\n"
        'v/bin/pip install --no-deps "$REPO_ROOT/servers/_shared/python"\n'
        "RUN /opt/venv/bin/pip install --no-deps --no-build-isolation /tmp/pkg \\\n"
        "    && /opt/venv/bin/pip install --require-hashes -r /tmp/r.txt\n"
    )
    problems = []
    for args in sc.pip_installs(script):
        problems += sc.pip_install_problems(args, "here")
    text = "\n".join(problems)
    assert text.count("lacks --require-hashes") == 1
    assert text.count("lacks --no-build-isolation") == 2
    assert "installs flask==3.0 outside a lock file" in text
    assert "installs a local path without --no-deps --no-build-isolation" in text
    assert len(problems) == 5


def test_go_module_with_dependencies_needs_go_sum(tmp_path):
    (tmp_path / "go.mod").write_text(
        "module demo\n\ngo 1.24\n\nreplace local/x => ../x\n\n"
        "require (\n\tlocal/x v0.0.0\n\texample.com/dep v1.2.3 // indirect\n)\n"
    )
    assert "no go.sum" in sc.go_problems(tmp_path)[0]
    (tmp_path / "go.sum").write_text("example.com/dep v1.2.3 h1:abc=\n")
    assert "no checksum for example.com/dep v1.2.3" in sc.go_problems(tmp_path)[0]
    (tmp_path / "go.sum").write_text(
        "example.com/dep v1.2.3 h1:abc=\nexample.com/dep v1.2.3/go.mod h1:def=\n"
    )
    assert sc.go_problems(tmp_path) == []


def test_go_module_with_only_local_replacements_needs_no_go_sum(tmp_path):
    (tmp_path / "go.mod").write_text(
        "module demo\n\ngo 1.24\n\nrequire local/x v0.0.0\n\nreplace local/x => ../x\n"
    )
    assert sc.go_problems(tmp_path) == []


@pytest.mark.parametrize(
    "version,bad",
    [("1.2.3", False), ("${project.version}", False), ("[1.0,2.0)", True), ("1.0-SNAPSHOT", True),
     ("LATEST", True), ("RELEASE", True), ("(,1.0]", True)],
)  # fmt: skip
def test_maven_versions_must_be_fixed(tmp_path, version, bad):
    pom = write(
        tmp_path / "pom.xml",
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><dependencies><dependency>'
        f"<groupId>g</groupId><artifactId>a</artifactId><version>{version}</version>"
        "</dependency></dependencies></project>",
    )
    assert bool(sc.pom_problems(pom)) is bad


def test_resolved_dependencies_of_a_go_stack():
    if not shutil.which("go"):
        pytest.skip("go not found")
    gin = next((m for m in load_all() if m.name == "gin"), None)
    if gin is None:
        pytest.skip("no gin stack")
    try:
        deps = resolved_dependencies(gin)
    except StepError as exc:  # module cache empty and no network
        pytest.skip(str(exc))
    assert deps[0] == "serverlab/gin"
    assert any(line.startswith("github.com/gin-gonic/gin v") for line in deps)


def test_resolved_dependencies_of_a_built_python_stack():
    built = [m for m in load_all() if family_of(m.folder).name == "python"
             and (m.build_dir / "venv" / "bin" / "python").exists()]  # fmt: skip
    if not built:
        pytest.skip("no Python stack built yet (make check builds them)")
    deps = resolved_dependencies(built[0])
    assert deps and all("==" in line or " @ " in line for line in deps), deps
    assert any(line.lower().startswith("serverlab-contract") for line in deps)


def test_resolved_dependencies_of_an_unbuilt_python_stack_is_an_error(tmp_path, monkeypatch):
    m = next(m for m in load_all() if family_of(m.folder).name == "python")
    monkeypatch.setattr(type(m), "build_dir", property(lambda self: tmp_path / "nothing"))
    with pytest.raises(StepError, match="no venv"):
        resolved_dependencies(m)


@pytest.mark.parametrize(
    "text,bad",
    [
        ("ARG BASE_IMAGE=python:3.11.14-slim-bookworm\nFROM ${BASE_IMAGE} AS build\nFROM ${BASE_IMAGE}\n", False),
        ("FROM golang:1.26.8-bookworm AS build\nFROM scratch\nCOPY --from=build /a /a\n", False),
        ("ARG IMG=debian:bookworm-20250610-slim\nFROM $IMG\n", False),
        ("FROM python:latest\n", True),
        ("FROM python\n", True),
        ("ARG BASE_IMAGE=python:3-slim\nFROM ${BASE_IMAGE}\n", True),
        ("FROM debian:bookworm-slim\n", True),
    ],
)  # fmt: skip
def test_images_are_exact_tags(tmp_path, text, bad):
    dockerfile = write(tmp_path / "Dockerfile", text)
    assert bool(sc.image_problems(dockerfile)) is bad


# -- npm and Cargo ----------------------------------------------------------------

SHA512 = "sha512-" + "A" * 86 + "=="


def npm_stack(folder: Path, spec: str = "5.6.2", entry: dict | None = None, version=3) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write(folder / "package.json", json.dumps({"dependencies": {"fastify": spec}}))
    locked = {"version": "5.6.2", "resolved": "https://registry.npmjs.org/fastify/-/fastify-5.6.2.tgz",
              "integrity": SHA512}  # fmt: skip
    locked.update(entry or {})
    packages = {"": {"name": "x"}, "node_modules/fastify": locked,
                "node_modules/local": {"link": True, "resolved": "../local"}}  # fmt: skip
    write(folder / "package-lock.json", json.dumps({"lockfileVersion": version, "packages": packages}))
    return folder


def test_a_pinned_npm_stack_passes(tmp_path):
    assert sc.npm_problems(npm_stack(tmp_path)) == []


@pytest.mark.parametrize(
    "spec,entry,version,expected",
    [("^5.6.2", {}, 3, "'^5.6.2' is not an exact version"),
     ("latest", {}, 3, "is not an exact version"),
     ("5.6.2", {"integrity": "sha1-abc"}, 3, "fastify has no sha512 integrity hash"),
     ("5.6.2", {"resolved": None}, 3, "does not say where it came from"),
     ("5.6.2", {"version": "5.x"}, 3, "fastify has no exact version"),
     ("5.6.2", {}, 1, "lockfileVersion 1, not 2 or 3")],
)  # fmt: skip
def test_npm_rules_are_each_enforced(tmp_path, spec, entry, version, expected):
    problems = sc.npm_problems(npm_stack(tmp_path, spec, entry, version))
    assert len(problems) == 1 and expected in problems[0], problems


def test_npm_stack_without_a_lock_file_is_reported(tmp_path):
    folder = npm_stack(tmp_path)
    (folder / "package-lock.json").unlink()
    assert any("has no package-lock.json" in p for p in sc.npm_problems(folder))


def test_npm_install_is_refused_and_npm_ci_accepted():
    assert sc.npm_install_problems("npm ci --omit=dev", "x") == []
    assert sc.npm_install_problems("RUN npm install \\\n  --omit=dev", "Dockerfile")
    assert sc.npm_install_problems("npm i fastify", "x")


def cargo_stack(folder: Path, checksum: str | None = "ab" * 32) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write(folder / "Cargo.toml", '[package]\nname = "x"\nversion = "0.1.0"\n')
    sum_line = f'checksum = "{checksum}"\n' if checksum else ""
    write(folder / "Cargo.lock",
          'version = 4\n\n[[package]]\nname = "x"\nversion = "0.1.0"\n\n'
          '[[package]]\nname = "tokio"\nversion = "1.48.0"\n'
          f'source = "registry+https://github.com/rust-lang/crates.io-index"\n{sum_line}')  # fmt: skip
    return folder


def test_cargo_rules(tmp_path):
    assert sc.cargo_problems(cargo_stack(tmp_path / "good")) == []
    missing = sc.cargo_problems(cargo_stack(tmp_path / "nosum", checksum=None))
    assert missing == ["{}: tokio 1.48.0 has no checksum".format(tmp_path / "nosum" / "Cargo.lock")]
    no_lock = cargo_stack(tmp_path / "nolock")
    (no_lock / "Cargo.lock").unlink()
    assert "has no Cargo.lock" in sc.cargo_problems(no_lock)[0]


def test_cargo_commands_must_keep_to_the_lock_file():
    assert sc.cargo_locked_problems("cargo build --release --locked", "x") == []
    assert sc.cargo_locked_problems("RUN cargo build --release && cp a b", "Dockerfile")
    assert sc.cargo_locked_problems("cargo test", "x")


def stack_in(folder: Path, **native):
    folder.mkdir(parents=True, exist_ok=True)
    manifest = python_stand_in(folder, run="true")
    return dataclasses.replace(manifest, native={**manifest.native, **native})


def test_dependencies_come_from_the_lock_files_of_npm_and_cargo_stacks(tmp_path):
    npm = stack_in(npm_stack(tmp_path / "npmstack"))
    assert resolved_dependencies(npm) == ["fastify==5.6.2"]
    cargo = stack_in(cargo_stack(tmp_path / "cargostack"))
    assert resolved_dependencies(cargo) == ["tokio==1.48.0"]


def test_a_declared_dependencies_command_wins(tmp_path):
    stack = stack_in(npm_stack(tmp_path / "declared"), dependencies="printf 'b==2\\na==1\\n'")
    assert resolved_dependencies(stack) == ["a==1", "b==2"]


def test_a_stack_of_debian_packages_lists_their_versions(tmp_path):
    if not shutil.which("dpkg-query"):
        pytest.skip("dpkg-query not found")
    (listed,) = resolved_dependencies(stack_in(tmp_path / "debs", apt=["bash"]))
    assert listed.startswith("bash==") and len(listed) > len("bash==")
    with pytest.raises(StepError, match="nothing says what it runs with"):
        resolved_dependencies(stack_in(tmp_path / "bare", apt=[]))


def test_every_stack_has_a_family_and_a_test_plan():
    """No stack falls through the cracks: its tests run somewhere, or it says why not."""
    for m in load_all():
        command, where = own_tests(m.native, m.folder)
        assert command or where.startswith(("run by", "no tests")), (m.name, where)
        if family_of(m.folder).name == "debian":
            assert m.native["apt"], f"{m.name}: a stack of Debian packages lists them in apt"


# -- NuGet ----------------------------------------------------------------------

CONTENT_HASH = "A" * 86 + "=="
LOCKED_PROPS = """<Project><PropertyGroup>
  <RestorePackagesWithLockFile>true</RestorePackagesWithLockFile>
  <RestoreLockedMode Condition="'$(RestoreLockedMode)' == ''">true</RestoreLockedMode>
</PropertyGroup></Project>"""


def csharp_stack(folder: Path, version: str = "2.9.3", props: str = LOCKED_PROPS,
                 lock_entry: dict | None = None) -> Path:  # fmt: skip
    """A C# stack whose project imports a props file and references xunit."""
    folder.mkdir(parents=True, exist_ok=True)
    write(folder / "shared.props", props)
    write(folder / "demo.csproj", f"""<Project Sdk="Microsoft.NET.Sdk.Web">
  <Import Project="shared.props" />
  <ItemGroup><PackageReference Include="xunit" Version="{version}" /></ItemGroup>
</Project>""")
    entry = {"type": "Direct", "requested": "[2.9.3, )", "resolved": "2.9.3",
             "contentHash": CONTENT_HASH}  # fmt: skip
    packages = {"xunit": lock_entry if lock_entry is not None else entry,
                "serverlab.contract": {"type": "Project"}}  # fmt: skip
    write(folder / "packages.lock.json",
          json.dumps({"version": 1, "dependencies": {"net10.0": packages}}))  # fmt: skip
    return folder


def test_a_locked_csharp_stack_passes_and_the_repositorys_projects_are_found(tmp_path):
    assert sc.nuget_problems(csharp_stack(tmp_path / "ok") / "demo.csproj") == []
    assert sc.csharp_projects(sc.SHARED_CSHARP), "the shared C# projects are not found"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"version": "2.*"}, "xunit '2.*' is not an exact version"),
        ({"version": "[2.0,3.0)"}, "is not an exact version"),
        ({"props": "<Project />"}, "RestorePackagesWithLockFile is not true"),
        ({"props": LOCKED_PROPS.replace(">true</RestoreLockedMode", ">false</RestoreLockedMode")},
         "RestoreLockedMode is not true"),
        ({"lock_entry": {"type": "Direct", "resolved": "2.9.3"}}, "has no SHA-512 content hash"),
        ({"lock_entry": {"type": "Direct", "resolved": "2.*", "contentHash": CONTENT_HASH}},
         "has no exact resolved version"),
    ],
)  # fmt: skip
def test_nuget_rules_are_each_enforced(tmp_path, change, expected):
    problems = sc.nuget_problems(csharp_stack(tmp_path / "stack", **change) / "demo.csproj")
    assert any(expected in p for p in problems), problems


def test_a_csharp_project_without_its_lock_file_or_with_a_stale_one_is_reported(tmp_path):
    folder = csharp_stack(tmp_path / "stale")
    write(folder / "demo.csproj", (folder / "demo.csproj").read_text().replace(
        "</ItemGroup>", '<PackageReference Include="Tomlyn" Version="2.10.2" /></ItemGroup>'))
    assert any("Tomlyn is not in it" in p for p in sc.nuget_problems(folder / "demo.csproj"))
    (folder / "packages.lock.json").unlink()
    assert any("has no packages.lock.json" in p for p in sc.nuget_problems(folder / "demo.csproj"))


@pytest.mark.skipif(not shutil.which("dotnet"), reason="dotnet not found")
def test_dependencies_of_a_csharp_stack_name_its_packages_the_sdk_and_the_framework(tmp_path):
    stack = stack_in(csharp_stack(tmp_path / "cs"))
    out = stack.build_dir / "out"
    out.mkdir(parents=True, exist_ok=True)
    config = write(out / "demo.runtimeconfig.json", json.dumps({"runtimeOptions": {"frameworks": [
        {"name": "Microsoft.AspNetCore.App", "version": "10.0.0"}]}}))  # fmt: skip
    try:
        listed = resolved_dependencies(stack)
    finally:
        config.unlink()
    assert "xunit==2.9.3" in listed
    assert any(line.startswith("dotnet-sdk==10.") for line in listed), listed
    framework = [line for line in listed if line.startswith("Microsoft.AspNetCore.App==")]
    assert framework and framework[0] != "Microsoft.AspNetCore.App==10.0.0", listed


def test_a_declared_dependencies_command_runs_in_the_stacks_environment(tmp_path):
    """As its build and run commands do: BUILD_DIR, REPO_ROOT, the calendar."""
    stack = stack_in(tmp_path / "env", apt=[],
                     dependencies='test -n "$BUILD_DIR" && test -f "$WORKDAY_CALENDAR" && '
                                  'echo "dir==$(basename "$BUILD_DIR")"')  # fmt: skip
    assert resolved_dependencies(stack) == [f"dir=={stack.build_dir.name}"]


def test_a_failed_dependency_list_keeps_the_commands_own_words(tmp_path):
    stack = stack_in(tmp_path / "fails", dependencies="echo 'crate index unreachable' >&2; exit 3")
    with pytest.raises(StepError) as failed:
        resolved_dependencies(stack)
    assert "exited 3" in failed.value.message
    assert "crate index unreachable" in failed.value.output
