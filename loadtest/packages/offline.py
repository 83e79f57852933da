"""Offline builds: what a stack's lock files need from the mirror that the mirror lacks.

A stack whose package family is read from the mirror (OFFLINE, or a registry
that did not answer: packages/registries.py) and whose build would need a package
the mirror does not hold is skipped, and the skip names the packages; it is never started on a
half-filled mirror and never failed for it. Each check reads the stack's
lock files as its package manager would and looks the packages up where that
package manager will look (loadtest/packages/mirror.py has the layout):

- Python: every pinned requirement has a file in pypi/ with one of its hashes;
- Go: every module of go.sum is in the module cache (.zip, or .mod for a
  `/go.mod` line);
- npm: every package of package-lock.json is in the cache, by its integrity;
- Cargo: every registry crate of Cargo.lock is in the cargo home's cache;
- NuGet: every package of each project's packages.lock.json is in the folder
  feed (id/version/id.version.nupkg, all lower case), with the lock file's
  content hash;
- Maven (no lock file): the stack's pom.xml and the shared parent were
  mirrored by `make mirror` as they are now (their SHA-256 in poms/);
- Debian packages come from the host, not from a mirror: nothing to check.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path

from loadtest.core.families import family_of
from loadtest.core.manifest import Manifest
from loadtest.packages import mirror, registries
from loadtest.packages.supply_chain import (
    HASH,
    REQUIREMENT,
    SHARED_JAVA,
    cargo_registry_packages,
    csharp_projects,
    npm_lock_packages,
    nuget_lock_packages,
    requirement_lines,
)

# The platform npm installs for here; an optional package for another one is not needed.
NPM_PLATFORM = ("linux", "x64")


def offline_problem(manifest: Manifest, mirror_root: Path) -> str | None:
    """Why `manifest` cannot be built from `mirror_root`, or None when it can."""
    missing = missing_from_mirror(manifest.folder, mirror_root)
    if not missing:
        return None
    shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
    registry = family_of(manifest.folder).registry
    return (
        f"{registry} from the mirror ({mirror.described(registries.offline_families())}) and "
        f"the mirror {mirror_root} lacks {shown} "
        f"(make mirror SERVERS={manifest.name} on a connected machine)"
    )


def missing_from_mirror(folder: Path, mirror_root: Path) -> list[str]:
    check = MISSING_BY_FAMILY.get(family_of(folder).name)
    return check(folder, mirror_root) if check else []


# -- Python -----------------------------------------------------------------------


def missing_python(folder: Path, mirror_root: Path) -> list[str]:
    present = mirrored_hashes(mirror.part_dir(mirror_root, "pypi"))
    missing = []
    for lock in sorted(folder.glob("*requirements*.txt")):
        for line in requirement_lines(lock.read_text()):
            match = REQUIREMENT.match(line)
            if not match or ";" in line:  # an option, or a package for other interpreters
                continue
            hashes = {h.split(":", 1)[1] for h in HASH.findall(line)}
            if not hashes & present:
                missing.append(f"{match['name']}=={match['version']}")
    return missing


def mirrored_hashes(folder: Path) -> frozenset[str]:
    files = sorted(folder.glob("*")) if folder.is_dir() else []
    return _hashes(tuple((str(f), f.stat().st_size, f.stat().st_mtime) for f in files))


@functools.lru_cache(maxsize=8)
def _hashes(files: tuple) -> frozenset[str]:
    return frozenset(hashlib.sha256(Path(name).read_bytes()).hexdigest() for name, *_ in files)


# -- Go ---------------------------------------------------------------------------


def missing_go(folder: Path, mirror_root: Path) -> list[str]:
    go_sum = folder / "go.sum"
    if not go_sum.is_file():
        return []
    downloads = mirror.part_dir(mirror_root, "go") / "cache" / "download"
    missing = []
    for line in go_sum.read_text().splitlines():
        fields = line.split()
        if len(fields) != 3:
            continue
        module, version, _ = fields
        wanted = (
            f"{version.removesuffix('/go.mod')}.{'mod' if version.endswith('/go.mod') else 'zip'}"
        )
        if not (downloads / go_escape(module) / "@v" / wanted).is_file():
            missing.append(f"{module}@{version}")
    return missing


def go_escape(path: str) -> str:
    """The module cache spells an upper-case letter as '!' and its lower case."""
    return re.sub(r"[A-Z]", lambda m: "!" + m.group().lower(), path)


# -- npm --------------------------------------------------------------------------


def missing_npm(folder: Path, mirror_root: Path) -> list[str]:
    lock = folder / "package-lock.json"
    if not lock.is_file():
        return []
    content = mirror.part_dir(mirror_root, "npm") / "_cacache" / "content-v2"
    missing = []
    for name, entry in npm_lock_packages(json.loads(lock.read_text())).items():
        integrity = entry.get("integrity", "")
        if "-" not in integrity or not npm_needed_here(entry):
            continue
        algorithm, digest = integrity.split()[0].split("-", 1)
        hexdigest = base64.b64decode(digest).hex()
        if not (content / algorithm / hexdigest[:2] / hexdigest[2:4] / hexdigest[4:]).is_file():
            missing.append(f"{name}@{entry.get('version')}")
    return missing


def npm_needed_here(entry: dict) -> bool:
    if not entry.get("optional"):
        return True
    system, cpu = NPM_PLATFORM
    return system in entry.get("os", [system]) and cpu in entry.get("cpu", [cpu])


# -- Cargo ------------------------------------------------------------------------


def missing_cargo(folder: Path, mirror_root: Path) -> list[str]:
    lock = folder / "Cargo.lock"
    if not lock.is_file():
        return []
    caches = list((mirror.part_dir(mirror_root, "cargo") / "registry" / "cache").glob("*"))
    missing = []
    for package in cargo_registry_packages(lock):
        crate = f"{package['name']}-{package['version']}.crate"
        if not any((cache / crate).is_file() for cache in caches):
            missing.append(f"{package['name']}@{package['version']}")
    return missing


# -- NuGet ------------------------------------------------------------------------


def missing_nuget(folder: Path, mirror_root: Path) -> list[str]:
    """A project's lock file lists the packages of the projects it references too."""
    feed = mirror.part_dir(mirror_root, "nuget")
    missing = set()
    locks = (p.parent / "packages.lock.json" for p in csharp_projects(folder))
    for lock in (lock for lock in locks if lock.is_file()):
        for name, entry in nuget_lock_packages(lock).items():
            package, version = name.lower(), str(entry.get("resolved", "")).lower()
            metadata = feed / package / version / ".nupkg.metadata"
            found = (feed / package / version / f"{package}.{version}.nupkg").is_file()
            if not found or entry.get("contentHash") not in metadata_hash(metadata):
                missing.add(f"{name}@{entry.get('resolved')}")
    return sorted(missing)


def metadata_hash(metadata: Path) -> str:
    """The content hash NuGet recorded when it put the package in the folder."""
    try:
        return json.loads(metadata.read_text()).get("contentHash", "")
    except (OSError, ValueError):
        return ""


# -- Maven ------------------------------------------------------------------------


def maven_poms(folder: Path) -> list[Path]:
    """The POMs a Maven stack's build reads: its own and the shared parent."""
    return [folder / "pom.xml", SHARED_JAVA / "pom.xml"]


def missing_maven(folder: Path, mirror_root: Path) -> list[str]:
    recorded = mirror.part_dir(mirror_root, "poms")
    return [
        f"the dependencies of {pom.parent.name}/pom.xml as it is now"
        for pom in maven_poms(folder)
        if pom.is_file() and not (recorded / mirror.pom_digest(pom)).is_file()
    ]


MISSING_BY_FAMILY: dict[str, Callable[[Path, Path], list[str]]] = {
    "python": missing_python,
    "go": missing_go,
    "npm": missing_npm,
    "cargo": missing_cargo,
    "maven": missing_maven,
    "dotnet": missing_nuget,
}
