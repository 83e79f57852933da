"""Stack manifests: load `servers/<name>/server.toml` and validate it.

The manifest is the single source of truth for a stack (see servers/README.md);
every runner and report reads it through this module.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SERVERS_DIR = REPO_ROOT / "servers"
CALENDAR_FILE = REPO_ROOT / "contracts" / "calendar" / "xshg-non-trading-weekdays.txt"

CONCURRENCY_KINDS = ("processes", "threads", "event-loops", "goroutines", "greenlets")
DEFAULT_WORKERS = ("cpus", "2*cpus+1")
# An exact version: digits and dots, optionally a pre-release or build suffix.
EXACT_VERSION = re.compile(r"^\d+(\.\d+)*([.-][0-9A-Za-z.]+)?$")

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

    @property
    def build_dir(self) -> Path:
        return REPO_ROOT / ".build" / self.name

    def provenance(self) -> dict:
        """What a results file records about the stack."""
        return {
            "name": self.name,
            "display_name": self.display_name,
            "language": self.language,
            "framework": self.framework,
            "framework_version": self.framework_version,
            "runtime": self.runtime,
            "runtime_version": self.runtime_version,
            "port": self.port,
            "concurrency": dict(self.concurrency),
            "tuning": list(self.tuning),
            "known_failures": list(self.known_failures),
        }


def stack_names(servers_dir: Path = SERVERS_DIR) -> list[str]:
    """Every folder under servers/ with a manifest, in alphabetical order."""
    return sorted(
        p.parent.name
        for p in servers_dir.glob("*/server.toml")
        if not p.parent.name.startswith("_")
    )


def load(name: str, servers_dir: Path = SERVERS_DIR) -> Manifest:
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
    return Manifest(
        name=name,
        folder=folder,
        tuning=data.get("tuning", []),
        known_failures=data.get("known_failure", []),
        **{key: data[key] for key in REQUIRED_TOP},
        **{key: data[key] for key in REQUIRED_TABLES},
    )


def load_all(names: list[str] | None = None, servers_dir: Path = SERVERS_DIR) -> list[Manifest]:
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
        problems.append(f"'concurrency.default_workers' must be one of {', '.join(DEFAULT_WORKERS)}")
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
    return problems


def validate_all(servers_dir: Path = SERVERS_DIR) -> list[str]:
    """Cross-stack rules plus each manifest's own; returns every problem found."""
    problems = []
    ports: dict[int, str] = {}
    names: dict[str, str] = {}
    for stack in stack_names(servers_dir):
        try:
            manifest = load(stack, servers_dir)
        except ManifestError as exc:
            problems.append(str(exc))
            continue
        for required in (manifest.docker["dockerfile"], "README.md"):
            if not (manifest.folder / required).is_file():
                problems.append(f"{stack}: missing {required}")
        readme = (manifest.folder / "README.md").read_text(encoding="utf-8", errors="replace") if (
            manifest.folder / "README.md"
        ).is_file() else ""
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
