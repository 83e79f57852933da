"""What a built stack resolved: its dependency list, one `name==version` (or `module
version`) a line, as run.json records it beside the stack's manifest."""

from __future__ import annotations

import io
import json
import re
import subprocess
import zipfile

from loadtest.core.errors import StepError
from loadtest.core.families import family_of
from loadtest.core.manifest import Manifest, stack_env
from loadtest.packages.supply_chain import (
    cargo_registry_packages,
    csharp_projects,
    npm_lock_packages,
    nuget_lock_packages,
    shown,
)

TIMEOUT_S = 120


def resolved_dependencies(manifest: Manifest) -> list[str]:
    """What a built stack runs with, one `name==version` (or `module version`) a line.

    The manifest's `[native] dependencies` command when it has one; else its
    family's default (loadtest/core/families.py): Python `pip freeze --all` of
    the venv in BUILD_DIR; Go `go list -m all` (the main module first); Maven
    the libraries of its built Spring Boot jar; npm, Cargo and NuGet
    their lock files (NuGet's with the SDK and the shared frameworks the app
    runs on); a stack of Debian packages the installed versions of its `apt`
    list. Build the stack first. Raises StepError (step "dependencies") when
    the list cannot be read.
    """
    declared = manifest.native.get("dependencies")
    if declared:
        return sorted(_run(manifest, ["bash", "-euo", "pipefail", "-c", declared]))
    family = family_of(manifest.folder).name
    if family == "python":
        python = manifest.build_dir / "venv" / "bin" / "python"
        if not python.exists():
            raise StepError(manifest.name, "dependencies", f"no venv at {python.parent.parent}")
        lines = _run(manifest, [str(python), "-m", "pip", "freeze", "--all",
                                "--disable-pip-version-check"])  # fmt: skip
        return sorted(line for line in lines if line and not line.startswith("#"))
    if family == "go":
        return _run(manifest, ["go", "list", "-mod=readonly", "-m", "all"])
    if family == "maven":
        return maven_dependencies(manifest)
    if family == "npm":
        return npm_locked(manifest)
    if family == "cargo":
        return cargo_locked(manifest)
    if family == "dotnet":
        return dotnet_dependencies(manifest)
    return debian_packages(manifest)


def npm_locked(manifest: Manifest) -> list[str]:
    """Every package package-lock.json installs for production (dev ones left out)."""
    lock = manifest.folder / "package-lock.json"
    if not lock.is_file():
        raise StepError(manifest.name, "dependencies", f"no lock file at {shown(lock)}")
    packages = npm_lock_packages(json.loads(lock.read_text()))
    return sorted(f"{name}=={e.get('version')}" for name, e in packages.items() if not e.get("dev"))


def cargo_locked(manifest: Manifest) -> list[str]:
    """Every registry package Cargo.lock pins (the stack's own crate left out)."""
    lock = manifest.folder / "Cargo.lock"
    if not lock.is_file():
        raise StepError(manifest.name, "dependencies", f"no lock file at {shown(lock)}")
    return sorted(f"{p['name']}=={p['version']}" for p in cargo_registry_packages(lock))


def dotnet_dependencies(manifest: Manifest) -> list[str]:
    """The packages of the stack's lock file, the SDK that built it and the shared
    frameworks its published runtimeconfig rolls forward to (the newest patch installed
    of each framework's major.minor: .NET's default roll-forward)."""
    found = set()
    for project in csharp_projects(manifest.folder):
        lock = project.parent / "packages.lock.json"
        if not lock.is_file():
            raise StepError(manifest.name, "dependencies", f"no lock file at {shown(lock)}")
        found |= {f"{name}=={e.get('resolved')}" for name, e in nuget_lock_packages(lock).items()}
    found |= {f"dotnet-sdk=={line}" for line in _run(manifest, ["dotnet", "--version"])}
    installed = [line.split()[:2] for line in _run(manifest, ["dotnet", "--list-runtimes"])]
    for config in manifest.build_dir.rglob("*.runtimeconfig.json"):
        options = json.loads(config.read_text()).get("runtimeOptions", {})
        for framework in options.get("frameworks") or [options.get("framework") or {}]:
            name, wanted = framework.get("name"), framework.get("version", "")
            line = ".".join(wanted.split(".")[:2]) + "."
            versions = [v for n, v in installed if n == name and v.startswith(line)]
            if name and versions:
                found.add(f"{name}=={max(versions, key=version_key)}")
    return sorted(found)


def version_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.-]", version))


def debian_packages(manifest: Manifest) -> list[str]:
    """The installed versions of the Debian packages the manifest's `apt` list names."""
    names = manifest.native["apt"]
    if not names:
        raise StepError(
            manifest.name,
            "dependencies",
            "no package manager files, no [native] apt list and no [native] dependencies "
            "command in server.toml: nothing says what it runs with",
        )
    return sorted(_run(manifest, ["dpkg-query", "-W", "-f", "${Package}==${Version}\n", *names]))


def maven_dependencies(manifest: Manifest) -> list[str]:
    """`group:artifact:version` of every library the built Spring Boot jar carries
    (BOOT-INF/lib/, each named by its own META-INF/maven pom.properties): exactly what
    runs, read without Maven (whose offline `dependency:list` cannot resolve the shared
    contract module, which is never installed)."""
    jars = sorted(manifest.build_dir.glob("*.jar"))
    if not jars:
        raise StepError(manifest.name, "dependencies", f"no built jar in {manifest.build_dir}")
    found = set()
    with zipfile.ZipFile(jars[0]) as app:
        for entry in app.namelist():
            if entry.startswith("BOOT-INF/lib/") and entry.endswith(".jar"):
                found.add(jar_coordinates(app.read(entry), entry.rsplit("/", 1)[1]))
    if not found:
        raise StepError(manifest.name, "dependencies", f"{jars[0].name} has no BOOT-INF/lib/")
    return sorted(found)


def jar_coordinates(jar: bytes, name: str) -> str:
    """A library jar's `group:artifact:version` from its pom.properties, else its file name."""
    with zipfile.ZipFile(io.BytesIO(jar)) as library:
        for entry in library.namelist():
            if entry.startswith("META-INF/maven/") and entry.endswith("/pom.properties"):
                fields = dict(line.split("=", 1) for line in
                              library.read(entry).decode("utf-8", "replace").splitlines()
                              if "=" in line and not line.startswith("#"))  # fmt: skip
                if {"groupId", "artifactId", "version"} <= fields.keys():
                    return f"{fields['groupId']}:{fields['artifactId']}:{fields['version']}"
    return name.removesuffix(".jar")


def _run(manifest: Manifest, command: list[str]) -> list[str]:
    """A command in the stack's folder and environment (BUILD_DIR and the rest, as its
    build and run commands get them); its lines, or a StepError with its output."""
    try:
        result = subprocess.run(
            command, cwd=manifest.folder, env=stack_env(manifest), capture_output=True,
            text=True, timeout=TIMEOUT_S,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StepError(manifest.name, "dependencies", f"{command[0]}: {exc}") from None
    if result.returncode != 0:
        errors = [line for line in (result.stdout + result.stderr).splitlines()
                  if "ERROR" in line or "error" in line]  # fmt: skip
        raise StepError(
            manifest.name,
            "dependencies",
            f"`{' '.join(command[:4])} ...` exited {result.returncode}",
            "\n".join(errors[:8]) or (result.stderr or result.stdout)[-2000:],
        )
    return [line.strip() for line in result.stdout.splitlines() if line.strip()]
