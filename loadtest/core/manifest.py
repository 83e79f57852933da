"""Stack manifests: load `servers/<name>/server.toml` and validate it.

The manifest is the single source of truth for a stack (see servers/README.md);
every runner and report reads it through this module.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
REPO_SERVERS_DIR = REPO_ROOT / "servers"
# For tests and experiments: another folder of stacks (<dir>/<name>/server.toml).
# `servers/_shared` stays the repository's own.
SERVERS_DIR = Path(os.environ.get("SERVERLAB_SERVERS_DIR") or REPO_SERVERS_DIR)
CALENDAR_FILE = REPO_ROOT / "contracts" / "calendar" / "xshg-non-trading-weekdays.txt"

CONCURRENCY_KINDS = ("processes", "threads", "event-loops", "goroutines", "greenlets")
DEFAULT_WORKERS = ("cpus", "2*cpus+1")
# JITs a manifest may declare (`jit`): HotSpot, .NET's RyuJIT, PyPy's tracing JIT, V8.
JIT_KINDS = ("jvm", "dotnet", "pypy", "v8")
# "api": the HTTP contract of contracts/README.md; "static": serves contracts/static/.
CONTRACTS = ("api", "static")
# [docker] keys a family Dockerfile (servers/_shared/<family>/Dockerfile) takes
# as build args, upper-cased; `base_image` replaces the family's BASE_IMAGE for
# a stack that cannot run on the family's interpreter (meinheld).
DOCKER_FAMILY_KEYS = ("start", "build_packages", "runtime_packages")
# [native] commands a stack may give instead of its language family's default
# (loadtest/core/families.py): its own tests, and its resolved dependency list.
OPTIONAL_NATIVE_KEYS = ("test", "dependencies")
# An exact version: digits and dots, optionally a pre-release or build suffix;
# Debian package versions (1.22.1-9+deb12u11, 2.4.71-1~deb12u1) included.
EXACT_VERSION = re.compile(r"^\d+(\.\d+)*([.+~-][0-9A-Za-z.+~-]+)?$")
# A variant's name, and a stack id: "nginx-static" or "nginx-static@stock".
VARIANT_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
VARIANT_SEPARATOR = "@"

REQUIRED_TOP = {
    "display_name": str,
    "language": str,
    "framework": str,
    "framework_version": str,
    "runtime": str,
    "runtime_version": str,
    "port": int,
}
REQUIRED_TABLES = {
    "concurrency": {"kind": str, "default_workers": str, "workers": str},
    "native": {"requires": list, "apt": list, "version": str, "build": str, "run": str},
    "docker": {"dockerfile": str},
}


class ManifestError(Exception):
    """A manifest is missing, unreadable or breaks a rule."""


@dataclass(frozen=True)
class Manifest:
    name: str
    folder: Path
    display_name: str
    language: str
    framework: str
    framework_version: str
    runtime: str
    runtime_version: str
    port: int
    concurrency: dict
    native: dict
    docker: dict
    tuning: list = field(default_factory=list)
    known_failures: list = field(default_factory=list)
    contract: str = "api"
    tls: bool = False
    variants: tuple = ()  # every [[variant]] table of the manifest
    variant: str | None = None  # the variant this object runs, None = the default
    env: dict = field(default_factory=dict)  # the variant's extra environment
    # Seconds of load a fresh instance needs before it can be steady (a JIT's
    # compile queue), measured and explained in the stack's README; 0: none.
    warmup_s: float = 0.0
    # The JIT the stack runs on (JIT_KINDS), whose compiler the warm-up waits on
    # (measure/jit.py); None: no JIT, or none that changes its pace after start.
    jit: str | None = None
    # [self_tls]: the api stack can serve HTTPS itself (FRONT=self), HTTP/2 and
    # HTTP/1.1 by ALPN, with TLS_CERT/TLS_KEY; the value names what terminates
    # TLS in it ("Kestrel"). None: it serves plain HTTP only.
    self_tls_terminator: str | None = None
    # The repository the stack's folder and shared libraries are read from: this one,
    # or a worktree at another commit (an A/B run's side, core/ab.py).
    repo_root: Path = REPO_ROOT
    # The build folder's name when it is not the stack id: an A/B side that changes only
    # the quota runs the stack's own build.
    build_id: str = ""

    @property
    def stack(self) -> str:
        """The folder name, the same for every variant ("nginx-static")."""
        return self.folder.name

    @property
    def label(self) -> str:
        """How results name it: the display name, plus the variant ("nginx static (stock)")."""
        return f"{self.display_name} ({self.variant})" if self.variant else self.display_name

    @property
    def build_dir(self) -> Path:
        # Per stack id: a variant's run-time files (pid, temp) never meet the default's.
        return REPO_ROOT / ".build" / (self.build_id or self.name)

    def provenance(self) -> dict:
        """What a results file records about the stack."""
        return {
            "name": self.name,
            "display_name": self.display_name,
            "label": self.label,
            "language": self.language,
            "framework": self.framework,
            "framework_version": self.framework_version,
            "runtime": self.runtime,
            "runtime_version": self.runtime_version,
            "port": self.port,
            "contract": self.contract,
            "tls": self.tls,
            "variant": self.variant,
            "variant_env": dict(self.env),
            "concurrency": dict(self.concurrency),
            "tuning": list(self.tuning),
            "known_failures": list(self.known_failures),
            "warmup_s": self.warmup_s,
            "jit": self.jit,
            "self_tls_terminator": self.self_tls_terminator,
        }


def stack_list(text: str | None) -> list[str] | None:
    """'gin,sanic' -> ['gin', 'sanic']; empty or None -> every stack."""
    names = [n.strip() for n in (text or "").replace(" ", ",").split(",") if n.strip()]
    return names or None


def stack_names(servers_dir: Path = SERVERS_DIR) -> list[str]:
    """Every folder under servers/ with a manifest, in alphabetical order."""
    return sorted(
        p.parent.name
        for p in servers_dir.glob("*/server.toml")
        if not p.parent.name.startswith("_")
    )


def split_id(stack_id: str) -> tuple[str, str | None]:
    """'nginx-static@stock' -> ('nginx-static', 'stock'); 'gin' -> ('gin', None)."""
    name, separator, variant = stack_id.partition(VARIANT_SEPARATOR)
    return name, (variant if separator else None)


def stack_ids(servers_dir: Path = SERVERS_DIR) -> list[str]:
    """Every stack name followed by its variants' ids ('name@variant')."""
    ids = []
    for name in stack_names(servers_dir):
        ids.append(name)
        try:
            variants = load(name, servers_dir).variants
        except ManifestError:
            continue
        ids.extend(f"{name}{VARIANT_SEPARATOR}{v['name']}" for v in variants)
    return ids


def stack_env(manifest: Manifest) -> dict:
    """The environment of every command a stack's manifest declares (build, run, test,
    dependencies): this process's, with REPO_ROOT, BUILD_DIR, WORKDAY_CALENDAR and a
    [[variant]]'s settings (servers/README.md, "Build and run")."""
    env = dict(os.environ)
    env.update(
        REPO_ROOT=str(manifest.repo_root),
        BUILD_DIR=str(manifest.build_dir),
        WORKDAY_CALENDAR=str(CALENDAR_FILE),
        PYTHONUNBUFFERED="1",
    )
    env.update(manifest.env)  # a [[variant]]'s settings, e.g. STATIC_CONFIG=stock
    return env


def load(stack_id: str, servers_dir: Path = SERVERS_DIR) -> Manifest:
    """The manifest of a stack id: a folder name, or 'name@variant' for a [[variant]]."""
    name, variant = split_id(stack_id)
    folder = servers_dir / name
    path = folder / "server.toml"
    if not path.is_file():
        known = ", ".join(stack_names(servers_dir)) or "none"
        raise ManifestError(f"unknown stack '{name}' (no {path}); known stacks: {known}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{path}: invalid TOML: {exc}") from exc
    problems = validate_data(data)
    if problems:
        raise ManifestError(f"{path}: " + "; ".join(problems))
    variants = tuple(data.get("variant", []))
    env: dict = {}
    serves_tls = data.get("tls", False)
    if variant is not None:
        chosen = [v for v in variants if v["name"] == variant]
        if not chosen:
            known = ", ".join(v["name"] for v in variants) or "none"
            raise ManifestError(
                f"unknown variant '{variant}' of stack '{name}' ({path}); its variants: {known}"
            )
        env = dict(chosen[0].get("env", {}))
        serves_tls = serves_tls or chosen[0].get("tls", False)  # a tls stack's variants too
    return Manifest(
        name=stack_id,
        folder=folder,
        tuning=data.get("tuning", []),
        known_failures=data.get("known_failure", []),
        contract=data.get("contract", "api"),
        tls=serves_tls,
        variants=variants,
        variant=variant,
        env=env,
        warmup_s=float(data.get("warmup_s", 0)),
        jit=data.get("jit"),
        self_tls_terminator=data.get("self_tls", {}).get("terminator"),
        **{key: data[key] for key in REQUIRED_TOP},
        **{key: data[key] for key in REQUIRED_TABLES},
    )


def load_all(names: list[str] | None = None, servers_dir: Path = SERVERS_DIR) -> list[Manifest]:
    """The given stack ids (variants included), or every stack's default configuration."""
    return [load(n, servers_dir) for n in (names or stack_names(servers_dir))]


def validate_data(data: dict) -> list[str]:
    """Rules for one manifest on its own (see servers/README.md)."""
    problems = []
    for key, kind in REQUIRED_TOP.items():
        if not isinstance(data.get(key), kind):
            problems.append(f"'{key}' must be a {kind.__name__}")
    for table, keys in REQUIRED_TABLES.items():
        section = data.get(table)
        if not isinstance(section, dict):
            problems.append(f"missing table [{table}]")
            continue
        for key, kind in keys.items():
            if not isinstance(section.get(key), kind):
                problems.append(f"'{table}.{key}' must be a {kind.__name__}")
    if problems:
        return problems

    name = data["display_name"]
    if not name.isascii() or not name.isprintable() or "!" in name or not name.strip():
        problems.append("'display_name' must be printable ASCII without '!'")
    for key in ("framework_version", "runtime_version"):
        if not EXACT_VERSION.match(data[key]):
            problems.append(f"'{key}' must be an exact version, got {data[key]!r}")
    if not 1024 <= data["port"] <= 65535:
        problems.append("'port' must be in 1024..65535")
    if data["concurrency"]["kind"] not in CONCURRENCY_KINDS:
        problems.append(f"'concurrency.kind' must be one of {', '.join(CONCURRENCY_KINDS)}")
    if data["concurrency"]["default_workers"] not in DEFAULT_WORKERS:
        problems.append(
            f"'concurrency.default_workers' must be one of {', '.join(DEFAULT_WORKERS)}"
        )
    tuning = data.get("tuning")
    if not isinstance(tuning, list) or not tuning:
        problems.append("at least one [[tuning]] entry is required")
    else:
        for i, entry in enumerate(tuning):
            if not (isinstance(entry, dict) and entry.get("setting") and entry.get("why")):
                problems.append(f"[[tuning]] entry {i + 1} needs 'setting' and 'why'")
    for i, entry in enumerate(data.get("known_failure", [])):
        if not (isinstance(entry, dict) and entry.get("check") and entry.get("why")):
            problems.append(f"[[known_failure]] entry {i + 1} needs 'check' and 'why'")
        elif not isinstance(entry.get("intermittent", False), bool):
            problems.append(f"[[known_failure]] entry {i + 1}: 'intermittent' must be true or false")
    if data.get("contract", "api") not in CONTRACTS:
        problems.append(f"'contract' must be one of {', '.join(CONTRACTS)}")
    if not isinstance(data.get("tls", False), bool):
        problems.append("'tls' must be true or false")
    for key in OPTIONAL_NATIVE_KEYS:
        if not isinstance(data["native"].get(key, ""), str):
            problems.append(f"'native.{key}' must be a shell command (a string)")
    for key in (*DOCKER_FAMILY_KEYS, "base_image"):
        if not isinstance(data["docker"].get(key, ""), str):
            problems.append(f"'docker.{key}' must be a string")
    warmup = data.get("warmup_s", 0)
    if isinstance(warmup, bool) or not isinstance(warmup, (int, float)) or not 0 <= warmup <= 300:
        problems.append("'warmup_s' must be a number of seconds in 0..300")
    if data.get("jit") is not None and data["jit"] not in JIT_KINDS:
        problems.append(f"'jit' must be one of {', '.join(JIT_KINDS)} (or left out)")
    problems += validate_self_tls(data)
    problems += validate_variants(data.get("variant", []), "self_tls" in data)
    return problems


def validate_self_tls(data: dict) -> list[str]:
    """[self_tls]: an api stack that can serve HTTPS itself names its TLS terminator."""
    if "self_tls" not in data:
        return []
    section = data["self_tls"]
    if not isinstance(section, dict):
        return ["'self_tls' must be a table ([self_tls] with terminator = \"...\")"]
    problems = []
    terminator = section.get("terminator")
    if not (isinstance(terminator, str) and terminator.strip()):
        problems.append("'self_tls.terminator' must name what terminates TLS (e.g. \"Kestrel\")")
    unknown = sorted(set(section) - {"terminator"})
    if unknown:
        problems.append(f"[self_tls] has unknown key(s): {', '.join(unknown)}")
    if data.get("contract", "api") != "api" or data.get("tls", False):
        problems.append("[self_tls] is for api stacks that serve plain HTTP by default "
                        "(not with contract = \"static\" or tls = true)")  # fmt: skip
    return problems


def validate_variants(variants, self_tls: bool = False) -> list[str]:
    """[[variant]] tables: a unique lower-case name, a why, and what differs: an env
    table of strings, or `tls = true` (the stack serving HTTPS itself, which needs
    its [self_tls]), or both."""
    if not isinstance(variants, list):
        return ["'variant' must be an array of tables ([[variant]])"]
    problems, seen = [], set()
    for i, entry in enumerate(variants):
        where = f"[[variant]] entry {i + 1}"
        if not isinstance(entry, dict):
            problems.append(f"{where} must be a table")
            continue
        name = entry.get("name")
        if not (isinstance(name, str) and VARIANT_NAME.match(name)):
            problems.append(f"{where} needs a 'name' of lower-case letters, digits and '-'")
        elif name in seen:
            problems.append(f"{where}: variant name {name!r} is used twice")
        seen.add(name)
        env = entry.get("env", {})
        serves_tls = entry.get("tls", False)
        if not isinstance(serves_tls, bool):
            problems.append(f"{where}: 'tls' must be true or false")
        elif serves_tls and not self_tls:
            problems.append(f"{where}: tls = true needs [self_tls] in the manifest (what "
                            "terminates TLS in the stack)")  # fmt: skip
        if not isinstance(env, dict) or not (env or serves_tls is True):
            problems.append(f"{where} needs a non-empty 'env' table, or tls = true")
        else:
            for key, value in env.items():
                if not ENV_NAME.match(key) or not isinstance(value, str):
                    problems.append(f"{where}: env {key!r} must be an UPPER_CASE name = a string")
        if not (isinstance(entry.get("why"), str) and entry["why"].strip()):
            problems.append(f"{where} needs a 'why'")
    return problems


def validate_all(servers_dir: Path = SERVERS_DIR) -> list[str]:
    """Cross-stack rules plus each manifest's own; returns every problem found."""
    problems = []
    ports: dict[int, str] = {}
    names: dict[str, str] = {}
    for stack in stack_names(servers_dir):
        if VARIANT_SEPARATOR in stack:
            problems.append(f"{stack}: a stack folder name must not contain '{VARIANT_SEPARATOR}'")
            continue
        try:
            manifest = load(stack, servers_dir)
        except ManifestError as exc:
            problems.append(str(exc))
            continue
        for required in (manifest.docker["dockerfile"], "README.md"):
            if not (manifest.folder / required).is_file():
                problems.append(f"{stack}: missing {required}")
        readme = (
            (manifest.folder / "README.md").read_text(encoding="utf-8", errors="replace")
            if (manifest.folder / "README.md").is_file()
            else ""
        )
        for entry in manifest.known_failures:
            if f"`{entry['check']}`" not in readme:
                problems.append(
                    f"{stack}: known failure `{entry['check']}` must be explained in its README.md"
                )
        if manifest.port in ports:
            problems.append(f"{stack}: port {manifest.port} already used by {ports[manifest.port]}")
        ports[manifest.port] = stack
        if manifest.display_name in names:
            problems.append(
                f"{stack}: display_name {manifest.display_name!r} already used by "
                f"{names[manifest.display_name]}"
            )
        names[manifest.display_name] = stack
    return problems
