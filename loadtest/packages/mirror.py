"""The local package mirror: which package families come from it, where it is, how tools find it.

Each package family (pypi, go, maven, npm, cargo, nuget) is fetched either from
its registry or from the mirror, chosen per family by OFFLINE:

    OFFLINE unset         each registry is probed (packages/registries.py); one that
                          does not answer is read from the mirror; the choice is printed once
    OFFLINE=1 (or all)    every family from the mirror, no registry is contacted
    OFFLINE=0 (or none)   every family from its registry, nothing is probed
    OFFLINE=pypi,maven    these families from the mirror, the others from their registries

`make mirror` fills MIRROR (default .cache/mirror/ in the repository) from the
lock files on a connected machine. A family read from the mirror has its
package manager pointed at it, and only at it, through its own environment
variables (`registry_env`); the stacks' build commands are the same either way.
docs/offline.md is the user's guide.

Layout of a mirror (each part in the format its package manager reads):

    pypi/    wheels and source distributions      pip --no-index --find-links
    go/      a Go module cache; go/cache/download  GOPROXY=file://...
    maven/   a Maven local repository              mvn --offline
    npm/     an npm cache                          npm --offline
    cargo/   a CARGO_HOME with the crates.io index and crates   cargo --offline
    nuget/   a NuGet packages folder (id/version/) RestoreSources=... (a local feed)
    poms/    one empty file per mirrored pom.xml, named by its SHA-256

A mirror that is handed out read-only (no write permission on its folder) or
with parts packed as `<part>.tar.gz` is used through a writable copy under
.cache/ (WRITABLE_COPY).

Probing the registries and making a read-only mirror writable is this
machine's business: loadtest/packages/registries.py.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from loadtest.core.manifest import REPO_ROOT

DEFAULT_MIRROR = REPO_ROOT / ".cache" / "mirror"
# Where a read-only or packed mirror is made usable (see the module's doc).
WRITABLE_COPY = REPO_ROOT / ".cache" / "mirror-copy"
# The parts a package manager writes into while it builds offline: copied, not linked.
WRITTEN_PARTS = ("maven", "cargo", "npm")
PACKED_SUFFIX = ".tar.gz"

# Every package family, and the registry each is fetched from online: the URL its
# tool is configured with (the variable), else the public registry.
FAMILIES = ("pypi", "go", "maven", "npm", "cargo", "nuget")
REGISTRIES = {
    "pypi": ("PIP_INDEX_URL", "https://pypi.org/simple/"),
    "go": ("GOPROXY", "https://proxy.golang.org/"),
    "maven": (None, "https://repo.maven.apache.org/maven2/"),
    "npm": ("npm_config_registry", "https://registry.npmjs.org/"),
    "cargo": (None, "https://index.crates.io/config.json"),
    "nuget": (None, "https://api.nuget.org/v3/index.json"),
}
# SERVERLAB_REGISTRY_<FAMILY>=URL probes that URL instead (tests, private registries).
PROBE_OVERRIDE = "SERVERLAB_REGISTRY_{}"

ALL_WORDS = ("1", "true", "yes", "on", "all")
NONE_WORDS = ("0", "false", "no", "off", "none")


class OfflineChoiceError(ValueError):
    """OFFLINE names something that is not a package family."""


@dataclass(frozen=True)
class Source:
    """Where one family's packages come from, and why."""

    family: str
    from_mirror: bool
    why: str

    def line(self) -> str:
        return f"{self.family}: {'mirror' if self.from_mirror else 'registry'} ({self.why})"


# -- the choice ------------------------------------------------------------------------


def parse_offline(value: str) -> frozenset[str] | None:
    """The families OFFLINE names, or None when it leaves the choice to the probe."""
    words = [w.strip().lower() for w in value.split(",") if w.strip()]
    if not words:
        return None
    if len(words) == 1 and words[0] in ALL_WORDS:
        return frozenset(FAMILIES)
    if len(words) == 1 and words[0] in NONE_WORDS:
        return frozenset()
    unknown = [w for w in words if w not in FAMILIES]
    if unknown:
        raise OfflineChoiceError(
            f"OFFLINE={value!r}: {', '.join(unknown)} is not a package family; "
            f"give 1 (all), 0 (none) or some of {','.join(FAMILIES)}"
        )
    return frozenset(words)


def explicit(env=os.environ) -> list[Source] | None:
    """Each family's source as OFFLINE names it, or None when it leaves it to a probe."""
    named = parse_offline(env.get("OFFLINE", ""))
    if named is None:
        return None
    why = f"OFFLINE={env.get('OFFLINE', '').strip()}"
    return [Source(f, f in named, why) for f in FAMILIES]


def registry_url(family: str, env=os.environ) -> str:
    """The URL a family's tool fetches from: as configured, else the public registry."""
    override = env.get(PROBE_OVERRIDE.format(family.upper()))
    if override:
        return override
    variable, default = REGISTRIES[family]
    configured = env.get(variable, "") if variable else ""
    # GOPROXY is a list ("https://proxy.golang.org,direct"); its first URL is asked first.
    first = configured.replace("|", ",").split(",")[0].strip()
    return first if first.startswith(("http://", "https://")) else default


def canonical(families: frozenset[str]) -> str:
    """OFFLINE spelled so that a child process takes the same choice without probing."""
    if families == frozenset(FAMILIES):
        return "1"
    return ",".join(f for f in FAMILIES if f in families) or "0"


def described(families: frozenset[str]) -> str:
    """How a reason names the families read from the mirror: 'OFFLINE=pypi,maven'."""
    return f"OFFLINE={canonical(families)}"


# -- where the mirror is ---------------------------------------------------------------


def mirror_dir(env=os.environ) -> Path:
    """MIRROR=DIR, else .cache/mirror/ of this repository."""
    return Path(env.get("MIRROR") or DEFAULT_MIRROR).resolve()


# Each part's folder in the mirror: a package family's, and "poms", the Maven builds filled.
PARTS = ("pypi", "go", "maven", "npm", "cargo", "nuget", "poms")


def part_dir(mirror: Path, part: str) -> Path:
    """The folder of `part` (one of PARTS) in the mirror at `mirror`."""
    if part not in PARTS:
        raise ValueError(f"no part {part!r} in the mirror: {', '.join(PARTS)}")
    return mirror / part


def pom_digest(pom: Path) -> str:
    return hashlib.sha256(pom.read_bytes()).hexdigest()


# -- pointing the package managers at it -----------------------------------------------


def family_env(family: str, mirror: Path) -> dict[str, str]:
    """The variables that make one family's package manager read `mirror`, and only it."""
    if family == "pypi":
        # pip: only the mirror's files; the lock files' hashes still check each one.
        return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(part_dir(mirror, "pypi"))}
    if family == "go":
        # The mirror's download cache served as a module proxy; go.sum verifies
        # every module (the checksum database cannot be reached offline).
        return {"GOPROXY": f"file://{part_dir(mirror, 'go')}/cache/download", "GOSUMDB": "off",
                "GOTOOLCHAIN": "local"}  # fmt: skip
    if family == "maven":
        # Maven 3.9 reads MAVEN_ARGS itself; servers/_shared/java/with-jdk passes
        # it on for older Maven (Debian bookworm has 3.8).
        return {"MAVEN_ARGS": f"--offline -Dmaven.repo.local={part_dir(mirror, 'maven')}"}
    if family == "npm":
        # The mirror is npm's cache, and it may not go past it.
        return {"npm_config_cache": str(part_dir(mirror, "npm")), "npm_config_offline": "true"}
    if family == "cargo":
        # The mirror is cargo's home (index and crates), and it may not fetch.
        return {"CARGO_HOME": str(part_dir(mirror, "cargo")), "CARGO_NET_OFFLINE": "true"}
    if family == "nuget":
        # MSBuild reads the environment as properties: restore's only source is the
        # mirror's folder feed; packages.lock.json's content hashes check each package.
        return {"RestoreSources": str(part_dir(mirror, "nuget"))}
    raise ValueError(f"no such package family: {family}")


def registry_env(mirror: Path, families: frozenset[str] = frozenset(FAMILIES)) -> dict[str, str]:
    """OFFLINE and MIRROR as resolved, and the variables of every family read from `mirror`."""
    env = {"OFFLINE": canonical(families)}
    if families:
        env["MIRROR"] = str(mirror)
    for family in FAMILIES:
        if family in families:
            env.update(family_env(family, mirror))
    return env


