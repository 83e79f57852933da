"""Every dependency of every stack is pinned (docs/reliability.md, "Supply chain").

The first test is the rule itself, run on the repository: it fails as soon
as a requirements file loses a hash, a build installs without
--require-hashes, a Go module lacks its go.sum or a POM uses a version
range or a SNAPSHOT. The others prove the checker catches each violation.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from loadtest.core.manifest import load_all
from loadtest.runners import supply_chain as sc

HASH = "--hash=sha256:" + "a" * 64


def test_every_stack_is_pinned():
    problems = sc.all_problems()
    assert not problems, "\n".join(problems)


def test_python_stacks_have_hashed_requirements():
    """Not vacuous: the Python stacks are found and their lock files read."""
    python = [m for m in load_all() if sc.kind(m) == "python"]
    assert python, "no Python stack found"
    for m in python:
        assert (m.folder / "requirements.txt").is_file(), m.name


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
        deps = sc.resolved_dependencies(gin)
    except sc.StepError as exc:  # module cache empty and no network
        pytest.skip(str(exc))
    assert deps[0] == "serverlab/gin"
    assert any(line.startswith("github.com/gin-gonic/gin v") for line in deps)


def test_resolved_dependencies_of_a_built_python_stack():
    built = [m for m in load_all() if sc.kind(m) == "python"
             and (m.build_dir / "venv" / "bin" / "python").exists()]  # fmt: skip
    if not built:
        pytest.skip("no Python stack built yet (make check builds them)")
    deps = sc.resolved_dependencies(built[0])
    assert deps and all("==" in line or " @ " in line for line in deps), deps
    assert any(line.lower().startswith("serverlab-contract") for line in deps)


def test_resolved_dependencies_of_an_unbuilt_python_stack_is_an_error(tmp_path, monkeypatch):
    m = next(m for m in load_all() if sc.kind(m) == "python")
    monkeypatch.setattr(type(m), "build_dir", property(lambda self: tmp_path / "nothing"))
    with pytest.raises(sc.StepError, match="no venv"):
        sc.resolved_dependencies(m)


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
