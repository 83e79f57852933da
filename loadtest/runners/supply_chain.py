"""Supply chain: every dependency of every stack pinned, and the resolved list recorded.

Rules (checked by loadtest/tests/test_supply_chain.py, so `make test` fails
on a violation; docs/reliability.md explains them):
- Python: every `requirements*.txt` of a stack pins each package with `==`
  and at least one `--hash=sha256:` (pip-compile --generate-hashes); every
  `pip install -r` in the manifest's build and in the Dockerfile passes
  `--require-hashes` and either `--only-binary :all:` (the build tools,
  wheels only) or `--no-build-isolation` (so sdists are built with those
  hash-checked tools, not with whatever an isolated build would fetch);
  a local path is installed only with `--no-deps --no-build-isolation`.
- Go: a module that requires anything beyond its local `replace`d modules
  has a go.sum listing every required module.
- Maven: no version ranges, SNAPSHOTs, LATEST or RELEASE in any POM.
- Images: every FROM of a stack's Dockerfile is an exact tag (directly or as
  the default of a build ARG), never `latest` or a bare name.

`resolved_dependencies(manifest)` lists what a built stack actually runs
with (pip freeze of its venv, `go list -m all`, Maven's resolved list), for
the provenance of a benchmark run.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from loadtest.core.errors import StepError
from loadtest.core.manifest import SERVERS_DIR, Manifest, stack_names
from loadtest.core.manifest import load as load_manifest

SHARED_JAVA = SERVERS_DIR / "_shared" / "java"
REQUIREMENT = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==(?P<version>[^\s;\\]+)"
)
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")
# Options that would fetch from somewhere other than the index, or skip pinning.
FORBIDDEN_OPTIONS = ("-e", "--editable", "--index-url", "-i", "--extra-index-url", "--find-links",
                     "-f", "--trusted-host", "--pre")  # fmt: skip
MAVEN_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
TIMEOUT_S = 120


# -- Python ---------------------------------------------------------------------


def requirement_lines(text: str) -> list[str]:
    """Logical lines of a requirements file: continuations joined, comments dropped."""
    lines, current = [], ""
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        if current.strip():
            lines.append(" ".join(current.split()))
        current = ""
    if current.strip():
        lines.append(" ".join(current.split()))
    return lines


def requirements_problems(path: Path) -> list[str]:
    problems = []
    for line in requirement_lines(path.read_text()):
        first = line.split()[0]
        if first.startswith("-"):
            option = first.split("=", 1)[0]
            if option in FORBIDDEN_OPTIONS:
                problems.append(f"{_rel(path)}: option {option} is not allowed ({line[:60]})")
            continue
        match = REQUIREMENT.match(line)
        if not match:
            problems.append(f"{_rel(path)}: not pinned with == ({line[:60]})")
        elif not HASH.search(line):
            problems.append(f"{_rel(path)}: {match['name']}=={match['version']} has no sha256 hash")
    return problems


def pip_installs(text: str) -> list[list[str]]:
    """Every `pip install ...` command in a shell script or Dockerfile, as argument lists."""
    joined = re.sub(r"\\\n", " ", text)
    commands = []
    for line in joined.splitlines():
        for part in re.split(r"&&|;|\|\|", line):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                words = part.split()
            for i, word in enumerate(words):
                is_pip = word == "pip" or word.endswith(("/pip", "pip3"))
                if is_pip and words[i + 1 : i + 2] == ["install"]:
                    commands.append(words[i + 2 :])
                    break
    return commands


def pip_install_problems(args: list[str], where: str) -> list[str]:
    flags = {a.split("=", 1)[0] for a in args if a.startswith("-")}
    uses_file = "-r" in flags or "--requirement" in flags
    positional = [a for i, a in enumerate(args) if not a.startswith("-") and args[i - 1] not in (
        "-r", "--requirement", "-c", "--constraint", "--cache-dir", "--root", "--prefix",
        "--target", "-t", "--only-binary", "--no-binary")]  # fmt: skip
    problems = []
    command = "pip install " + " ".join(args)
    if uses_file:
        if "--require-hashes" not in flags:
            problems.append(f"{where}: `{command[:90]}` lacks --require-hashes")
        # Either nothing is built (wheels only) or it is built with the
        # hash-checked tools already installed.
        if not flags & {"--no-build-isolation", "--only-binary"}:
            problems.append(
                f"{where}: `{command[:90]}` lacks --no-build-isolation (or --only-binary)"
            )
    for target in positional:
        local = target.startswith(("/", ".", "$", '"')) or "/" in target
        if not local:
            problems.append(f"{where}: `{command[:90]}` installs {target} outside a lock file")
        elif not {"--no-deps", "--no-build-isolation"} <= flags:
            problems.append(
                f"{where}: `{command[:90]}` installs a local path without "
                "--no-deps --no-build-isolation"
            )
    return problems


def python_problems(manifest: Manifest) -> list[str]:
    folder = manifest.folder
    files = sorted(folder.glob("*requirements*.txt"))
    if not files:
        return []
    problems = []
    for path in files:
        problems += requirements_problems(path)
    for args in pip_installs(manifest.native["build"]):
        problems += pip_install_problems(args, f"{manifest.name}/server.toml build")
    dockerfile = folder / manifest.docker["dockerfile"]
    if dockerfile.is_file():
        for args in pip_installs(dockerfile.read_text()):
            problems += pip_install_problems(args, _rel(dockerfile))
    return problems


# -- Go -------------------------------------------------------------------------


def go_requirements(go_mod: Path) -> tuple[list[tuple[str, str]], set[str]]:
    """(module, version) pairs required by go.mod, and the modules it replaces locally."""
    text = re.sub(r"//.*", "", go_mod.read_text())
    required, local = [], set()
    for block in re.findall(r"require\s*\((.*?)\)", text, re.S):
        required += re.findall(r"^\s*(\S+)\s+(\S+)", block, re.M)
    required += re.findall(r"^require\s+([^\s(]+)\s+(\S+)", text, re.M)
    for module, target in re.findall(r"^replace\s+(\S+)(?:\s+\S+)?\s+=>\s+(\S+)\s*$", text, re.M):
        if target.startswith((".", "/")):
            local.add(module)
    return required, local


def go_problems(folder: Path) -> list[str]:
    go_mod = folder / "go.mod"
    if not go_mod.is_file():
        return []
    required, local = go_requirements(go_mod)
    remote = [(m, v) for m, v in required if m not in local]
    if not remote:
        return []
    go_sum = folder / "go.sum"
    if not go_sum.is_file():
        return [f"{_rel(go_mod)} requires {len(remote)} module(s) but there is no go.sum"]
    listed = {tuple(line.split()[:2]) for line in go_sum.read_text().splitlines() if line.strip()}
    problems = []
    for module, version in remote:
        if (module, f"{version}/go.mod") not in listed:
            problems.append(f"{_rel(go_sum)}: no checksum for {module} {version}")
    return problems


# -- images ---------------------------------------------------------------------

# name:tag where the tag holds a full version (1.26.8, 3.11.14, 21.0.12_8) or a
# date (20250610): "3-slim", "bookworm" or "latest" move when upstream publishes.
EXACT_TAG = re.compile(
    r"^[a-z0-9][a-z0-9._/-]*:[A-Za-z0-9._-]*(\d+\.\d+|\d{8})[A-Za-z0-9._-]*(@sha256:[0-9a-f]{64})?$"
)


def image_problems(dockerfile: Path) -> list[str]:
    """Every FROM names an exact tag: directly, through an ARG default, or an earlier stage."""
    args, stages, problems = {}, set(), []
    for line in re.sub(r"\\\n", " ", dockerfile.read_text()).splitlines():
        words = line.split()
        if len(words) >= 2 and words[0].upper() == "ARG" and "=" in words[1]:
            name, _, value = words[1].partition("=")
            args[name] = value.strip("\"'")
        elif len(words) >= 2 and words[0].upper() == "FROM":
            image = words[1]
            ref = re.fullmatch(r"\$\{?(\w+)\}?", image)
            resolved = args.get(ref.group(1), "") if ref else image
            if len(words) >= 4 and words[2].upper() == "AS":
                stages.add(words[3])
            if resolved == "scratch" or resolved in stages:
                continue
            if not EXACT_TAG.match(resolved) or resolved.endswith(":latest"):
                problems.append(
                    f"{_rel(dockerfile)}: FROM {image} is not an exact tag ({resolved!r})"
                )
    return problems


# -- Maven ----------------------------------------------------------------------


def unpinned_version(version: str) -> bool:
    v = version.strip()
    return (
        any(c in v for c in "[](),")
        or v.upper().endswith("SNAPSHOT")
        or v.upper() in ("LATEST", "RELEASE")
    )


def pom_problems(pom: Path) -> list[str]:
    root = ET.parse(pom).getroot()
    problems = []
    for element in root.iter():
        if element.tag.endswith("}version") or element.tag == "version":
            text = element.text or ""
            if text and not text.startswith("${") and unpinned_version(text):
                problems.append(f"{_rel(pom)}: version {text!r} is a range or not fixed")
    return problems


def maven_poms() -> list[Path]:
    poms = sorted(SERVERS_DIR.glob("*/pom.xml"))
    poms += sorted(p for p in SHARED_JAVA.rglob("pom.xml") if "target" not in p.parts)
    return poms


# -- every rule -----------------------------------------------------------------


def all_problems() -> list[str]:
    problems = []
    for name in stack_names():
        manifest = load_manifest(name)
        problems += python_problems(manifest)
        problems += go_problems(manifest.folder)
        dockerfile = manifest.folder / manifest.docker["dockerfile"]
        if dockerfile.is_file():
            problems += image_problems(dockerfile)
    problems += go_problems(SERVERS_DIR / "_shared" / "go")
    for pom in maven_poms():
        problems += pom_problems(pom)
    return problems


# -- what a built stack resolved --------------------------------------------------


def kind(manifest: Manifest) -> str:
    folder = manifest.folder
    if (folder / "go.mod").is_file():
        return "go"
    if (folder / "pom.xml").is_file():
        return "maven"
    if list(folder.glob("*requirements*.txt")):
        return "python"
    return "other"


def resolved_dependencies(manifest: Manifest) -> list[str]:
    """What a built stack runs with, one `name==version` (or `module version`) a line.

    Python: `pip freeze --all` of the stack's venv in BUILD_DIR; Go: `go list
    -m all` (the main module first); Maven: the module's resolved runtime
    dependencies (`mvn dependency:list`, offline). Build the stack first. An
    empty list means the stack has no package manager this knows. Raises
    StepError (step "dependencies") when the list cannot be read.
    """
    how = kind(manifest)
    if how == "python":
        python = manifest.build_dir / "venv" / "bin" / "python"
        if not python.exists():
            raise StepError(manifest.name, "dependencies", f"no venv at {python.parent.parent}")
        lines = _run(manifest, [str(python), "-m", "pip", "freeze", "--all",
                                "--disable-pip-version-check"])  # fmt: skip
        return sorted(line for line in lines if line and not line.startswith("#"))
    if how == "go":
        return _run(manifest, ["go", "list", "-mod=readonly", "-m", "all"])
    if how == "maven":
        return maven_dependencies(manifest)
    return []


def maven_dependencies(manifest: Manifest) -> list[str]:
    out = manifest.build_dir / "dependencies.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    _run(
        manifest,
        ["mvn", "-q", "-B", "-o", "-f", str(SHARED_JAVA / "pom.xml"), "-pl", f":{manifest.name}",
         "dependency:list", "-DincludeScope=runtime", "-DoutputAbsoluteArtifactFilename=false",
         f"-DoutputFile={out}", "-DappendOutput=false"],
    )  # fmt: skip
    found = set()
    for line in out.read_text().splitlines():
        # "   org.springframework:spring-core:jar:6.2.11:compile -- module spring.core"
        fields = line.strip().split(" ")[0].split(":")
        if len(fields) >= 5:
            group, artifact, version = fields[0], fields[1], fields[-2]
            found.add(f"{group}:{artifact}:{version}")
    return sorted(found)


def _run(manifest: Manifest, command: list[str]) -> list[str]:
    try:
        result = subprocess.run(
            command, cwd=manifest.folder, capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StepError(manifest.name, "dependencies", f"{command[0]}: {exc}") from None
    if result.returncode != 0:
        raise StepError(
            manifest.name,
            "dependencies",
            f"`{' '.join(command[:4])} ...` exited {result.returncode}",
            (result.stderr or result.stdout)[-2000:],
        )
    return [line.strip() for line in result.stdout.splitlines() if line.strip()]


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(SERVERS_DIR.parent))
    except ValueError:
        return str(path)
