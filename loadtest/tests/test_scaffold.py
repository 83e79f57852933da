"""`make new-server`: templates, names, ports, and a new stack end to end.

The end-to-end test works in a temporary copy of the repository (the
tracked files, committed to a scratch git repository there): it creates one
stack per template with `make new-server`, then shows that `make list` and
the bench plan pick them up, that `make check` fails on them for the right
reasons (501 on the routes; 404/405 and start-up fine), and that no other
file changed except docker-compose.yml, which is generated from the
manifests and stays current.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from loadtest.commands import scaffold
from loadtest.core.manifest import (
    REPO_ROOT,
    REQUIRED_TABLES,
    REQUIRED_TOP,
    load,
    load_all,
    validate_all,
)
from loadtest.packages import registries, supply_chain
from loadtest.runners import compose

pytestmark = pytest.mark.e2e

TEMPLATES = REPO_ROOT / "servers" / "_templates"
LANGUAGES = list(scaffold.PORT_BLOCKS)
EXACT_TAG = re.compile(r"^[a-z0-9./-]+:(\d+(\.\d+)+[^:]*|[a-z]+-\d{8}[^:]*)$")
# The Rust stub's dependencies compiled once into a folder kept between runs, and
# without link-time optimisation: the stub's behaviour does not depend on it, and a
# cold optimised build of axum and tokio takes minutes on 2 cores.
RUST_QUICK = {
    "CARGO_TARGET_DIR": str(REPO_ROOT / ".build" / "cargo-scaffold-target"),
    "CARGO_PROFILE_RELEASE_LTO": "false",
    "CARGO_PROFILE_RELEASE_CODEGEN_UNITS": "16",
}
# The stubs' own display-name tests pass while their contract tests fail.
OWN_TESTS_DISPLAY_NAME_PASSED = {
    "node": re.compile(r"^\s*✔ display.name", re.M | re.I),
    "rust": re.compile(r"^test \w*display_name\w* \.\.\. ok$", re.M),
}
# Environment variables that must not leak from an outer make or bench into the copy.
LEAKY_ENV = (
    "MAKEFLAGS",
    "MFLAGS",
    "MAKELEVEL",
    "MAKEOVERRIDES",
    "PROFILE",
    "SERVERS",
    "SERVER",
    "DURATION",
    "WARMUP",
    "REPEAT",
    "CONNECTIONS",
    "SCENARIOS",
    "TOOL",
    "RATE",
)


# --------------------------------------------------------------- helpers


def repo_copy(dest: Path) -> Path:
    """Copy the tracked files to dest, commit them to a scratch repository, share .venv."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO_ROOT / name
        if not source.is_file():  # deleted in the working tree
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    (dest / ".venv").symlink_to(REPO_ROOT / ".venv")
    git = ["git", "-c", "user.name=serverlab", "-c", "user.email=serverlab@localhost"]
    subprocess.run([*git, "init", "-q"], cwd=dest, check=True)
    subprocess.run([*git, "add", "-A"], cwd=dest, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "copy"], cwd=dest, check=True)
    return dest


def copy_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in LEAKY_ENV}
    env.update(LANG="C.UTF-8", **extra)
    return env


def run(command: list[str], cwd: Path, timeout: float = 600, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, cwd=cwd, env=copy_env(**env), capture_output=True, text=True, timeout=timeout
    )


def fake_servers(tmp_path: Path, ports: dict[str, int]) -> Path:
    """A servers/ folder with the real templates and minimal stacks on the given ports."""
    servers = tmp_path / "servers"
    shutil.copytree(TEMPLATES, servers / "_templates")
    # The family Dockerfiles a template may name (../_shared/<family>/Dockerfile).
    for family in (REPO_ROOT / "servers" / "_shared").glob("*/Dockerfile"):
        (servers / "_shared" / family.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(family, servers / "_shared" / family.parent.name / "Dockerfile")
    gin = (REPO_ROOT / "servers" / "gin" / "server.toml").read_text()
    for name, port in ports.items():
        folder = servers / name
        folder.mkdir(parents=True)
        text = re.sub(r"(?m)^port = \d+", f"port = {port}", gin)
        text = re.sub(r'(?m)^display_name = ".*"', f'display_name = "{name}"', text)
        (folder / "server.toml").write_text(text)
        (folder / "Dockerfile").write_text("FROM scratch\n")
        (folder / "README.md").write_text(f"# {name}\n")
    return servers


def never_busy(port: int) -> bool:
    return False


def create(servers: Path, name: str, language: str, **kwargs) -> scaffold.Created:
    """create_stack on a fake servers/ folder, with no port counted as busy."""
    return scaffold.create_stack(
        name,
        language,
        servers_dir=servers,
        templates_dir=servers / "_templates",
        busy=never_busy,
        **kwargs,
    )


# ------------------------------------------------------------- templates


@pytest.mark.parametrize("language", LANGUAGES)
def test_template_renders_a_valid_commented_stack(tmp_path, language):
    servers = fake_servers(tmp_path, {"gin": 8101})
    created = create(servers, f"demo-{language}", language)
    assert created.port in scaffold.PORT_BLOCKS[language]
    manifest = load(created.name, servers)
    assert validate_all(servers) == []
    assert manifest.port == created.port and manifest.display_name == created.name
    for path in created.files:
        text = path.read_text()
        assert "{{" not in text and "}}" not in str(path), f"placeholder left in {path}"
        assert not path.name.endswith(".tmpl")

    # Every manifest field carries a comment on the line(s) right above it.
    lines = (created.folder / "server.toml").read_text().splitlines()
    keys = list(REQUIRED_TOP) + [k for table in REQUIRED_TABLES.values() for k in table]
    keys += [f"[{t}]" for t in REQUIRED_TABLES]
    for key in keys:
        pattern = re.compile(rf"^{re.escape(key)}(\s*=|$)")
        index = next(i for i, line in enumerate(lines) if pattern.match(line))
        assert lines[index - 1].startswith("#"), f"{language}: no comment above {key}"
    assert tomllib.loads("\n".join(lines))["tuning"], "at least one [[tuning]] entry"

    # Dockerfile (its own or its family's): base images are ARGs pinned to exact
    # official tags; non-root; the stack's port exposed.
    dockerfile = compose.dockerfile_path(manifest)
    images = compose.official_base_images(dockerfile)
    assert images, f"{language}: no base-image ARG"
    for arg, ref in images.items():
        assert EXACT_TAG.match(ref), f"{language}: {arg}={ref} is not an exact tag"
    text = dockerfile.read_text()
    assert "USER " in text and "extra_ca" in text
    port = compose.stack_args(manifest, dockerfile).get("PORT", str(created.port))
    assert port == str(created.port)
    assert f"EXPOSE {created.port}" in text or "EXPOSE ${PORT}" in text
    froms = [ln.split()[1] for ln in text.splitlines() if ln.startswith("FROM")]
    assert all(image.startswith("${") or image == "scratch" for image in froms), froms

    readme = (created.folder / "README.md").read_text()
    assert "## Tuning choices" in readme and str(created.port) in readme
    if "docker build" in readme:  # it names the Dockerfile the stack builds with
        assert f"docker build -f servers/{dockerfile.relative_to(servers)} " in readme, language
    # Readable by a server's own user, as every stack's folder (mkdtemp makes 0700).
    assert created.folder.stat().st_mode & 0o755 == 0o755

    # The supply-chain rules (docs/reliability.md) hold from the first commit.
    assert supply_chain.python_problems(manifest) == []
    assert supply_chain.go_problems(created.folder) == []
    assert supply_chain.npm_problems(created.folder) == []
    assert supply_chain.cargo_problems(created.folder) == []
    assert supply_chain.build_command_problems(manifest) == []
    if (created.folder / "pom.xml").is_file():
        assert supply_chain.pom_problems(created.folder / "pom.xml") == []


def test_go_stub_is_gofmt_clean(tmp_path):
    if shutil.which("gofmt") is None:
        pytest.skip("gofmt not installed")
    servers = fake_servers(tmp_path, {})
    created = create(servers, "demo", "go")
    result = subprocess.run(["gofmt", "-l", str(created.folder)], capture_output=True, text=True)
    assert result.stdout == "" and result.returncode == 0


@pytest.mark.parametrize("language", ["python", "other"])
def test_python_stubs_compile(tmp_path, language):
    servers = fake_servers(tmp_path, {})
    created = create(servers, "demo", language)
    for path in created.folder.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")


def test_the_python_stubs_tests_wait_for_the_end_to_end_stage(tmp_path):
    """They build and start the stack: the fast group of `make test` (pytest.ini, "not e2e
    and not timing") must not collect them, the end-to-end group must."""
    servers = fake_servers(tmp_path, {})
    tests = create(servers, "demo", "python").folder / "tests"

    def collected(expression: str) -> list[str]:
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
             "-c", str(REPO_ROOT / "pytest.ini"), "--rootdir", str(REPO_ROOT), "-m", expression,
             str(tests)],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert result.returncode in (0, 5), result.stdout + result.stderr  # 5: none collected
        return re.findall(r"::(test_\w+)", result.stdout)

    assert collected("not e2e and not timing") == []
    assert collected("e2e") == ["test_display_name_matches_manifest", "test_conformance"]


def test_csharp_stub_requires_dotnet(tmp_path):
    servers = fake_servers(tmp_path, {})
    created = create(servers, "demo", "csharp")
    assert load("demo", servers).native["requires"] == ["dotnet"]
    assert (created.folder / "demo.csproj").is_file()


# ----------------------------------------------------------- ports, names


def test_port_is_the_first_free_one_of_the_language_block(tmp_path):
    servers = fake_servers(tmp_path, {"a": 8101, "b": 8102, "c": 8121, "d": 8111})
    assert scaffold.choose_port("go", servers, never_busy) == 8103
    assert scaffold.choose_port("python", servers, never_busy) == 8122
    assert scaffold.choose_port("java", servers, never_busy) == 8112
    assert scaffold.choose_port("csharp", servers, never_busy) == 8181
    # A port something listens on is skipped too.
    assert scaffold.choose_port("go", servers, lambda p: p == 8103) == 8104


def test_a_full_block_spills_over(tmp_path):
    servers = fake_servers(tmp_path, {f"go{i}": port for i, port in enumerate(range(8101, 8110))})
    assert scaffold.choose_port("go", servers, never_busy) == 8200


def test_a_broken_manifest_still_holds_its_port(tmp_path):
    servers = fake_servers(tmp_path, {})
    (servers / "broken").mkdir()
    (servers / "broken" / "server.toml").write_text("port = 8103\nthis is not toml [\n")
    assert scaffold.choose_port("go", servers, never_busy) == 8101
    (servers / "broken" / "server.toml").write_text("port = 8101\nthis is not toml [\n")
    assert scaffold.choose_port("go", servers, never_busy) == 8102


@pytest.mark.parametrize(
    "name, message",
    [
        ("Fast", "not a valid stack name"),
        ("fast_api", "not a valid stack name"),
        ("-fast", "not a valid stack name"),
        ("fast--api", "not a valid stack name"),
        ("9fast", "not a valid stack name"),
        ("_templates", "not a valid stack name"),
        ("x" * 41, "not a valid stack name"),
        ("loadgen", "reserved"),
        ("ceiling", "reserved"),
        ("gin", "exists already (a stack)"),
        ("leftover", "exists already (a folder)"),
    ],
)
def test_bad_and_existing_names_are_refused(tmp_path, name, message):
    servers = fake_servers(tmp_path, {"gin": 8101})
    (servers / "leftover").mkdir()
    before = sorted(p.name for p in servers.iterdir())
    with pytest.raises(scaffold.ScaffoldError, match=re.escape(message)):
        create(servers, name, "go")
    assert sorted(p.name for p in servers.iterdir()) == before, "nothing left behind"


def test_other_refusals(tmp_path):
    servers = fake_servers(tmp_path, {"gin": 8101})
    with pytest.raises(scaffold.ScaffoldError, match="not a template"):
        create(servers, "fast", "cobol")
    with pytest.raises(scaffold.ScaffoldError, match="taken by servers/gin/"):
        create(servers, "fast", "go", display_name="gin")
    with pytest.raises(scaffold.ScaffoldError, match="printable ASCII"):
        create(servers, "fast", "go", display_name="Fast!")
    with pytest.raises(scaffold.ScaffoldError, match="used by gin"):
        create(servers, "fast", "go", port=8101)
    with pytest.raises(scaffold.ScaffoldError, match="Java package a keyword"):
        create(servers, "new", "java")
    assert scaffold.normalise_language("Golang") == "go"
    assert scaffold.normalise_language("C#") == "csharp"
    assert scaffold.normalise_language("JavaScript") == "node"
    assert scaffold.normalise_language("rs") == "rust"


def test_cli_refuses_an_existing_stack(capsys):
    from loadtest.cli import main

    assert main(["new-server", "gin", "--lang", "go"]) == 2
    assert "servers/gin/ exists already" in capsys.readouterr().err


# ------------------------------------------------------------ end to end


def test_new_stacks_end_to_end_in_a_repository_copy(tmp_path):
    """make new-server per template, side by side in one copy: each gets its own
    port, nothing else is edited, and `make list` and the bench plan pick them up.
    Each stub's build, check and own tests: the test below, one language each."""
    repo = repo_copy(tmp_path / "repo")
    names = {lang: f"demo-{lang}" for lang in LANGUAGES}
    py = str(repo / ".venv" / "bin" / "python")
    # The baseline: a compose file current for the copied manifests (the working tree's
    # may list stacks whose folders are not tracked yet).
    assert run([py, "-m", "loadtest", "docker", "compose"], repo).returncode == 0
    run(
        [
            "git",
            "-c",
            "user.name=serverlab",
            "-c",
            "user.email=serverlab@localhost",
            "commit",
            "-q",
            "-am",
            "current compose file",
        ],
        repo,
    )

    usage = run(["make", "new-server", "NAME=demo-x"], repo)
    assert usage.returncode == 2 and "usage: make new-server" in usage.stdout

    ports = {}
    for lang, name in names.items():
        made = run(["make", "new-server", f"NAME={name}", f"LANG={lang}"], repo)
        assert made.returncode == 0, made.stdout + made.stderr
        ports[lang] = int(re.search(r"port (\d+)", made.stdout).group(1))
        assert f"make check SERVERS={name}" in made.stdout
        assert ports[lang] in scaffold.PORT_BLOCKS[lang]
    assert len(set(ports.values())) == len(ports)

    again = run(["make", "new-server", "NAME=demo-go", "LANG=go"], repo)
    assert again.returncode != 0 and "servers/demo-go/ exists already" in again.stderr
    bad = run(["make", "new-server", "NAME=Demo_Bad", "LANG=go"], repo)
    assert bad.returncode != 0 and "not a valid stack name" in bad.stderr
    lang = run(["make", "new-server", "NAME=demo-cobol", "LANG=cobol"], repo)
    assert lang.returncode != 0 and "not a template" in lang.stderr

    # Nothing edited but the new folders and the generated compose file, which is current.
    status = run(["git", "status", "--porcelain", "--untracked-files=all"], repo).stdout
    lines = status.splitlines()
    modified = [line[3:] for line in lines if not line.startswith("?? ")]
    untracked = [line[3:] for line in lines if line.startswith("?? ")]
    assert modified == ["docker-compose.yml"], status
    assert all(path.startswith("servers/") for path in untracked), status
    assert {path.split("/")[1] for path in untracked} == set(names.values()), status
    diff = run(["git", "diff", "--unified=0", "docker-compose.yml"], repo).stdout
    assert not [ln for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    assert run([py, "-m", "loadtest", "docker", "compose", "--check"], repo).returncode == 0
    assert run([py, "-m", "loadtest", "validate"], repo).returncode == 0

    listed = run(["make", "list"], repo)
    assert listed.returncode == 0, listed.stderr
    for lang, name in names.items():
        row = next(ln for ln in listed.stdout.splitlines() if ln.startswith(name + " "))
        assert str(ports[lang]) in row
    csharp_row = next(ln for ln in listed.stdout.splitlines() if ln.startswith("demo-csharp "))
    if shutil.which("dotnet") is None:
        assert "toolchain not found: dotnet" in csharp_row

    planned = run(
        [
            py,
            "-m",
            "loadtest",
            "bench",
            "--profile",
            "smoke",
            "--dry-run",
            "--servers",
            ",".join(names.values()),
        ],
        repo,
    )
    assert planned.returncode == 0, planned.stdout + planned.stderr
    for name in names.values():
        assert name in planned.stdout


# What each language's stub needs to build here; a stub whose toolchain is
# missing is a named skip in `make check`, and in the test below.
TOOLCHAINS = {"go": ("go",), "java": ("mvn", "java"), "node": ("npm",), "rust": ("cargo",),
              "csharp": ("dotnet",)}  # fmt: skip


@pytest.mark.long
@pytest.mark.parametrize("language", LANGUAGES)
def test_a_new_stub_builds_and_fails_check_for_the_right_reasons(tmp_path, language):
    """One stub per test, in its own copy, so that the languages' builds share
    the end-to-end workers: it builds, starts, passes the routing rules and
    fails the routes with 501; its own tests are wired (display name passes,
    contract fails)."""
    repo = repo_copy(tmp_path / "repo")
    name = f"demo-{language}"
    py = str(repo / ".venv" / "bin" / "python")
    made = run(["make", "new-server", f"NAME={name}", f"LANG={language}"], repo)
    assert made.returncode == 0, made.stdout + made.stderr
    runnable = all(shutil.which(tool) for tool in TOOLCHAINS.get(language, ()))
    checked = run(["make", "check", f"SERVERS={name}"], repo, timeout=900, **RUST_QUICK)
    output = checked.stdout + checked.stderr
    print(output[-6000:])
    row = next(ln for ln in output.splitlines() if ln.startswith(name + " "))
    if not runnable:
        assert checked.returncode == 0, output[-3000:]  # a skip is not a failure
        assert "SKIPPED" in row and TOOLCHAINS[language][0] in row, row
        pytest.skip(f"{name}: {row.split('SKIPPED', 1)[1].lstrip(' -')}")
    if registries.offline_families() and re.search(rf"^{name} +SKIPPED .*mirror", output, re.M):
        pytest.skip(f"{name}: the mirror cannot build it ({row})")
    assert checked.returncode == 2, output[-3000:]  # make's status when check fails
    assert re.search(rf"\[{name}\] ready in", output), f"{name} did not start:\n{output[-3000:]}"
    assert re.search(rf"\[{name}\] FAIL hello-status\b.*501", output), name
    assert re.search(rf"\[{name}\] FAIL workday-now\b.*", output), name
    for rule in ("not-found", "method-not-allowed"):
        assert not re.search(rf"\[{name}\] FAIL {rule}\[", output), f"{name}: {rule} failed"
    assert "FAILED" in row and "conformance check(s) failed" in row, row
    own_tests_are_wired(repo, py, language, name)


def own_tests_are_wired(repo: Path, py: str, language: str, name: str) -> None:
    """The stub's own tests, as make test runs them: the display-name test
    passes and the contract tests fail until the routes are written."""
    if language == "go":
        go_test = run(["go", "test", "-count=1", "./..."], repo / "servers" / name)
        assert "--- FAIL: TestContract" in go_test.stdout
        assert "--- FAIL: TestDisplayNameMatchesManifest" not in go_test.stdout
    elif language == "python":
        py_test = run([py, "-m", "pytest", "-q", "-k", "display_name", f"servers/{name}/tests"],
                      repo)  # fmt: skip
        assert py_test.returncode == 0, py_test.stdout
    elif language == "csharp":  # the csharp-unit stage: the manifest check passes,
        # the in-process HTTP tests fail until the stub is wired into them
        cs_test = run(["dotnet", "test", "servers/_shared/csharp/Serverlab.slnx", "--nologo",
                       "--logger", "console;verbosity=normal"], repo, timeout=600)  # fmt: skip
        assert re.search(rf'Passed .*DisplayNameMatchesManifest\(stack: "{name}"\)',
                         cs_test.stdout), cs_test.stdout[-3000:]  # fmt: skip
        assert f"C# stacks not started by these tests: {name}" in cs_test.stdout
    elif language in OWN_TESTS_DISPLAY_NAME_PASSED:  # make test's stack-tests stage
        tested = run([py, "-m", "loadtest", "stack-tests", "--servers", name], repo,
                     timeout=900, **RUST_QUICK)  # fmt: skip
        assert tested.returncode == 1, tested.stdout + tested.stderr
        assert f"FAILED {name}: " in tested.stdout, tested.stdout
        log = (repo / ".build" / name / "stack-tests.log").read_text()
        assert OWN_TESTS_DISPLAY_NAME_PASSED[language].search(log), log[-3000:]


def test_port_blocks_do_not_overlap_and_leave_the_static_servers_theirs():
    owner: dict[int, str] = {}
    for language, block in scaffold.PORT_BLOCKS.items():
        for port in block:
            assert port not in owner, f"{port}: {language} and {owner.get(port)}"
            owner[port] = language
    for manifest in load_all():
        if manifest.contract == "static":
            assert manifest.port not in owner, (
                f"{manifest.name} sits in the {owner[manifest.port]} block"
            )
