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
- npm: a stack with a package.json has a package-lock.json (lockfileVersion
  2 or 3) in which every installed package has an exact version, the
  registry address it came from and an sha512 integrity hash; package.json
  names exact versions (no ^, ~, *, ranges, tags, git or file URLs); the
  build and the Dockerfile install with `npm ci`, never `npm install`.
- Cargo: a stack with a Cargo.toml has a Cargo.lock in which every package
  from a registry has a checksum; every `cargo build|test|run` in the
  manifest and the Dockerfile passes `--locked`.
- NuGet: every C# project (a stack's and servers/_shared/csharp's) sets
  RestorePackagesWithLockFile and RestoreLockedMode (itself or through a props
  file it imports), so every restore reproduces its packages.lock.json or
  fails; the lock file is there and pins every package to an exact version
  with a SHA-512 content hash; every PackageReference names a version, not a
  floating one (`*`) or a range, and is in the lock file.
- Images: every FROM of a stack's Dockerfile is an exact tag (directly or as
  the default of a build ARG), never `latest` or a bare name.

packages/resolved.py lists what a built stack actually runs
with, for the provenance of a benchmark run: the manifest's own
`[native] dependencies` command, else its family's default (pip freeze of its
venv, `go list -m all`, the libraries of a built Spring Boot jar, the npm,
Cargo or NuGet lock file (with the .NET SDK and the shared frameworks it runs
on), the Debian
packages of its `apt` list; loadtest/core/families.py).
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

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
SHARED_CSHARP = SERVERS_DIR / "_shared" / "csharp"


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
                problems.append(f"{shown(path)}: option {option} is not allowed ({line[:60]})")
            continue
        match = REQUIREMENT.match(line)
        if not match:
            problems.append(f"{shown(path)}: not pinned with == ({line[:60]})")
        elif not HASH.search(line):
            problems.append(
                f"{shown(path)}: {match['name']}=={match['version']} has no sha256 hash"
            )
    return problems


def package_key(name: str) -> str:
    """A package's name as pip compares it: case, '_' and '.' do not count."""
    return re.sub(r"[-_.]+", "-", name).lower()


def framework_pin_problems(manifest: Manifest, files: list[Path]) -> list[str]:
    """The manifest's framework_version against the version its lock files pin, where the
    framework (its first word: 'uvloop' of 'uvloop + httptools') is a package of them."""
    package = package_key(manifest.framework.split()[0])
    for path in files:
        for line in requirement_lines(path.read_text()):
            match = REQUIREMENT.match(line)
            if match and package_key(match["name"]) == package:
                if match["version"] != manifest.framework_version:
                    return [f"{manifest.name}/server.toml: framework_version "
                            f"{manifest.framework_version!r}, but {shown(path)} pins "
                            f"{match['name']}=={match['version']}"]  # fmt: skip
                return []
    return []


def joined_lines(text: str) -> str:
    """Shell or Dockerfile text with backslash-newline continuations joined."""
    return re.sub(r"\\\n", " ", text)


def pip_installs(text: str) -> list[list[str]]:
    """Every `pip install ...` command in a shell script or Dockerfile, as argument lists."""
    joined = joined_lines(text)
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
    problems += framework_pin_problems(manifest, files)
    for args in pip_installs(manifest.native["build"]):
        problems += pip_install_problems(args, f"{manifest.name}/server.toml build")
    dockerfile = folder / manifest.docker["dockerfile"]
    if dockerfile.is_file():
        for args in pip_installs(dockerfile.read_text()):
            problems += pip_install_problems(args, shown(dockerfile))
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
        return [f"{shown(go_mod)} requires {len(remote)} module(s) but there is no go.sum"]
    listed = {tuple(line.split()[:2]) for line in go_sum.read_text().splitlines() if line.strip()}
    problems = []
    for module, version in remote:
        if (module, f"{version}/go.mod") not in listed:
            problems.append(f"{shown(go_sum)}: no checksum for {module} {version}")
    return problems


# -- npm ------------------------------------------------------------------------

# An exact npm version: 5.6.2, 1.0.0-rc.1 (no ^, ~, ranges, tags or URLs).
NPM_EXACT = re.compile(r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
NPM_SECTIONS = ("dependencies", "devDependencies", "optionalDependencies")


def npm_lock_packages(locked: dict) -> dict[str, dict]:
    """package-lock.json's installed packages by name: the stack itself and links left out."""
    return {
        path.rsplit("node_modules/", 1)[-1]: entry
        for path, entry in (locked.get("packages") or {}).items()
        if path and not entry.get("link")
    }


def npm_problems(folder: Path) -> list[str]:
    package_json = folder / "package.json"
    if not package_json.is_file():
        return []
    problems = []
    declared = json.loads(package_json.read_text())
    for section in NPM_SECTIONS:
        for name, spec in (declared.get(section) or {}).items():
            if not NPM_EXACT.match(str(spec)):
                problems.append(f"{shown(package_json)}: {name} {spec!r} is not an exact version")
    lock = folder / "package-lock.json"
    if not lock.is_file():
        return problems + [f"{shown(package_json)} has no package-lock.json next to it"]
    locked = json.loads(lock.read_text())
    if locked.get("lockfileVersion") not in (2, 3):
        problems.append(
            f"{shown(lock)}: lockfileVersion {locked.get('lockfileVersion')!r}, not 2 or 3"
        )
    for name, entry in npm_lock_packages(locked).items():
        if not NPM_EXACT.match(str(entry.get("version", ""))):
            problems.append(f"{shown(lock)}: {name} has no exact version")
        if not str(entry.get("resolved", "")).startswith("https://"):
            problems.append(f"{shown(lock)}: {name} does not say where it came from (resolved)")
        if not str(entry.get("integrity", "")).startswith("sha512-"):
            problems.append(f"{shown(lock)}: {name} has no sha512 integrity hash")
    return problems


def npm_install_problems(text: str, where: str) -> list[str]:
    """`npm install` resolves anew and may rewrite the lock; `npm ci` installs it exactly."""
    if re.search(r"\bnpm\s+(install|i|add)\b", joined_lines(text)):
        return [f"{where}: uses `npm install`; install the lock file with `npm ci`"]
    return []


# -- Cargo ----------------------------------------------------------------------


def cargo_registry_packages(lock: Path) -> list[dict]:
    """Cargo.lock's packages from a registry (the stack's own crates have no `source`)."""
    return [p for p in tomllib.loads(lock.read_text()).get("package", []) if "source" in p]


def cargo_problems(folder: Path) -> list[str]:
    cargo_toml = folder / "Cargo.toml"
    if not cargo_toml.is_file():
        return []
    lock = folder / "Cargo.lock"
    if not lock.is_file():
        return [f"{shown(cargo_toml)} has no Cargo.lock next to it"]
    problems = []
    for package in cargo_registry_packages(lock):
        if not package.get("checksum"):
            problems.append(
                f"{shown(lock)}: {package['name']} {package['version']} has no checksum"
            )
    return problems


def cargo_locked_problems(text: str, where: str) -> list[str]:
    """Every cargo build, test or run keeps to Cargo.lock (`--locked`)."""
    problems = []
    pattern = r"\bcargo\s+(?:build|test|run|install)\b[^\n;&|]*"
    for command in re.findall(pattern, joined_lines(text)):
        if "--locked" not in command and "--frozen" not in command:
            problems.append(f"{where}: `{command.strip()[:80]}` lacks --locked")
    return problems


def build_command_problems(manifest: Manifest) -> list[str]:
    """npm and Cargo rules over the manifest's build and test commands and the Dockerfile."""
    texts = [(manifest.native["build"], f"{manifest.name}/server.toml build")]
    if manifest.native.get("test"):
        texts.append((manifest.native["test"], f"{manifest.name}/server.toml test"))
    dockerfile = manifest.folder / manifest.docker["dockerfile"]
    if dockerfile.is_file():
        texts.append((dockerfile.read_text(), shown(dockerfile)))
    problems = []
    for text, where in texts:
        if (manifest.folder / "package.json").is_file():
            problems += npm_install_problems(text, where)
        if (manifest.folder / "Cargo.toml").is_file():
            problems += cargo_locked_problems(text, where)
    return problems


# -- NuGet ----------------------------------------------------------------------

# An exact NuGet version (1.2.3, 1.2.3.4, 10.0.0-rc.1), or one pinned as [1.2.3].
NUGET_EXACT = re.compile(r"^\[?\d+(\.\d+){1,3}(-[0-9A-Za-z.-]+)?\]?$")
# A lock file's contentHash: base64 of a SHA-512 (64 bytes).
NUGET_HASH = re.compile(r"^[A-Za-z0-9+/]{86}==$")
LOCK_PROPERTIES = ("RestorePackagesWithLockFile", "RestoreLockedMode")


def csharp_projects(folder: Path) -> list[Path]:
    """The C# projects in `folder` and below, build outputs left out."""
    return sorted(p for p in folder.rglob("*.csproj") if not {"bin", "obj"} & set(p.parts))


def msbuild_properties(project: Path, seen: frozenset[Path] = frozenset()) -> dict[str, str]:
    """The properties a project file and the files it imports set, the last one winning.

    Enough MSBuild for the lock rules: SDK imports are not followed, and a
    property set only when it is still empty (`Condition="'$(X)' == ''"`) is
    taken as set."""
    properties: dict[str, str] = {}
    root = ET.parse(project).getroot()
    for element in root:
        if element.tag == "Import" and not element.get("Sdk"):
            imported = (project.parent / element.get("Project", "")).resolve()
            if imported.is_file() and imported not in seen:
                properties.update(msbuild_properties(imported, seen | {project.resolve()}))
        elif element.tag == "PropertyGroup":
            for prop in element:
                if isinstance(prop.tag, str):
                    properties[prop.tag] = (prop.text or "").strip()
    return properties


def package_references(project: Path) -> dict[str, str]:
    root = ET.parse(project).getroot()
    return {ref.get("Include", ""): ref.get("Version", "")
            for ref in root.iter("PackageReference")}  # fmt: skip


def nuget_lock_packages(lock: Path) -> dict[str, dict]:
    """packages.lock.json's packages (the projects it references left out), by name."""
    frameworks = json.loads(lock.read_text()).get("dependencies") or {}
    return {name: entry for packages in frameworks.values() for name, entry in packages.items()
            if entry.get("type") != "Project"}  # fmt: skip


def nuget_problems(project: Path) -> list[str]:
    properties = msbuild_properties(project)
    problems = [f"{shown(project)}: {name} is not true (directly or in a props file it imports)"
                for name in LOCK_PROPERTIES if properties.get(name, "").lower() != "true"]  # fmt: skip
    references = package_references(project)
    for name, version in references.items():
        if not NUGET_EXACT.match(version):
            problems.append(f"{shown(project)}: {name} {version!r} is not an exact version")
    lock = project.parent / "packages.lock.json"
    if not lock.is_file():
        return problems + [f"{shown(project)} has no packages.lock.json next to it"]
    locked = nuget_lock_packages(lock)
    lowered = {name.lower() for name in locked}
    for name in references:
        if name.lower() not in lowered:
            problems.append(f"{shown(lock)}: {name} is not in it (restore, then commit it)")
    for name, entry in locked.items():
        if not NUGET_EXACT.match(str(entry.get("resolved", ""))):
            problems.append(f"{shown(lock)}: {name} has no exact resolved version")
        if not NUGET_HASH.match(str(entry.get("contentHash", ""))):
            problems.append(f"{shown(lock)}: {name} has no SHA-512 content hash")
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
    for line in joined_lines(dockerfile.read_text()).splitlines():
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
                    f"{shown(dockerfile)}: FROM {image} is not an exact tag ({resolved!r})"
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
                problems.append(f"{shown(pom)}: version {text!r} is a range or not fixed")
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
        problems += npm_problems(manifest.folder)
        problems += cargo_problems(manifest.folder)
        for project in csharp_projects(manifest.folder):
            problems += nuget_problems(project)
        problems += build_command_problems(manifest)
        dockerfile = manifest.folder / manifest.docker["dockerfile"]
        if dockerfile.is_file():
            problems += image_problems(dockerfile)
    problems += go_problems(SERVERS_DIR / "_shared" / "go")
    for pom in maven_poms():
        problems += pom_problems(pom)
    for project in csharp_projects(SHARED_CSHARP) if SHARED_CSHARP.is_dir() else []:
        problems += nuget_problems(project)
    return problems


def shown(path: Path) -> str:
    """A path as problems name it: from the repository's root when it lies inside."""
    try:
        return str(path.relative_to(SERVERS_DIR.parent))
    except ValueError:
        return str(path)
