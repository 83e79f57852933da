"""The local package mirror: where it is, whether a run is offline, and how tools find it.

`make mirror` fills MIRROR (default .cache/mirror/ in the repository) from the
lock files on a connected machine; with OFFLINE=1 every package manager is
pointed at it, and only at it, through its own environment variables
(`registry_env`). Nothing else changes: the stacks' build commands are the
same online and offline. docs/offline.md is the user's guide.

Layout of a mirror (each part in the format its package manager reads):

    pypi/    wheels and source distributions      pip --no-index --find-links
    go/      a Go module cache; go/cache/download  GOPROXY=file://...
    maven/   a Maven local repository              mvn --offline
    npm/     an npm cache                          npm --offline
    cargo/   a CARGO_HOME with the crates.io index and crates   cargo --offline
    poms/    one empty file per mirrored pom.xml, named by its SHA-256

Run as a script it prints the variables as shell `export` lines (nothing when
online), for the shell scripts that run before the harness:

    eval "$(python3 -m loadtest.core.mirror shell-env)"
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
from pathlib import Path

from loadtest.core.manifest import REPO_ROOT

DEFAULT_MIRROR = REPO_ROOT / ".cache" / "mirror"
TRUE_WORDS = ("1", "true", "yes", "on")


def is_offline(env=os.environ) -> bool:
    return env.get("OFFLINE", "").strip().lower() in TRUE_WORDS


def mirror_dir(env=os.environ) -> Path:
    """MIRROR=DIR, else .cache/mirror/ of this repository."""
    return Path(env.get("MIRROR") or DEFAULT_MIRROR).resolve()


def pypi_dir(mirror: Path) -> Path:
    return mirror / "pypi"


def go_modcache(mirror: Path) -> Path:
    return mirror / "go"


def maven_repo(mirror: Path) -> Path:
    return mirror / "maven"


def npm_cache(mirror: Path) -> Path:
    return mirror / "npm"


def cargo_home(mirror: Path) -> Path:
    return mirror / "cargo"


def poms_dir(mirror: Path) -> Path:
    return mirror / "poms"


def registry_env(mirror: Path) -> dict[str, str]:
    """Every package manager's variables for an offline run against `mirror`."""
    return {
        "OFFLINE": "1",
        "MIRROR": str(mirror),
        # pip: only the mirror's files; the lock files' hashes still check each one.
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(pypi_dir(mirror)),
        # Go: the mirror's download cache served as a module proxy; go.sum verifies
        # every module (the checksum database cannot be reached offline).
        "GOPROXY": f"file://{go_modcache(mirror)}/cache/download",
        "GOSUMDB": "off",
        "GOTOOLCHAIN": "local",
        # Maven 3.9 reads MAVEN_ARGS itself; servers/_shared/java/with-jdk passes
        # it on for older Maven (Debian bookworm has 3.8).
        "MAVEN_ARGS": f"--offline -Dmaven.repo.local={maven_repo(mirror)}",
        # npm: the mirror is its cache, and it may not go past it.
        "npm_config_cache": str(npm_cache(mirror)),
        "npm_config_offline": "true",
        # cargo: the mirror is its home (index and crates), and it may not fetch.
        "CARGO_HOME": str(cargo_home(mirror)),
        "CARGO_NET_OFFLINE": "true",
    }


def apply_offline_env(env=os.environ) -> bool:
    """With OFFLINE=1, point every package manager at the mirror (in `env`). True if offline."""
    if not is_offline(env):
        return False
    env.update(registry_env(mirror_dir(env)))
    return True


def pom_digest(pom: Path) -> str:
    return hashlib.sha256(pom.read_bytes()).hexdigest()


def shell_env(env=os.environ) -> str:
    if not is_offline(env):
        return ""
    variables = registry_env(mirror_dir(env))
    return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in variables.items())


if __name__ == "__main__":
    if sys.argv[1:] != ["shell-env"]:
        sys.exit("usage: python3 -m loadtest.core.mirror shell-env")
    sys.stdout.write(shell_env())
