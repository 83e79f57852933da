"""`make new-server`: create `servers/<name>/` from a template.

The new stack is a stub that starts like a finished one and answers 501 on
both routes, so `make check` fails honestly until it is implemented. Nothing
is registered by hand: the port is the first one no manifest uses in the
language's block, the harness finds the stack by its manifest, and the
generated docker-compose.yml is regenerated from the manifests.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from loadtest.core.manifest import REPO_ROOT, SERVERS_DIR, ManifestError, load, validate_all
from loadtest.host.ports import port_in_use
from loadtest.host.templates import (TEMPLATES_DIR, ScaffoldError, java_package, render,
                                     template_values)  # fmt: skip
from loadtest.runners import compose
from loadtest.runners.calibration import DEFAULT_PORT, NAME

# Port blocks by template, one per language; 8151-8159 holds the static
# servers (nginx, Apache), which have no template. A full block spills over
# into SPILL_PORTS rather than failing. docs/adding-a-server.md shows the table.
PORT_BLOCKS = {
    "go": range(8101, 8110),
    "java": range(8111, 8120),
    "python": range(8121, 8150),
    "node": range(8161, 8170),
    "rust": range(8171, 8180),
    "csharp": range(8181, 8190),
    "other": range(8191, 8200),
}
SPILL_PORTS = range(8200, 9000)
LANG_ALIASES = {
    "golang": "go", "py": "python", "c#": "csharp", "cs": "csharp", "dotnet": "csharp",
    "nodejs": "node", "js": "node", "javascript": "node", "rs": "rust",
}  # fmt: skip

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
MAX_NAME_LENGTH = 40
# Names the harness or the compose file already use for something else.
RESERVED_NAMES = {"ceiling", "loadgen", "servers", "all", "none", "shared", "templates"}
# Java keywords and literals cannot be package segments.
JAVA_RESERVED = set(
    "abstract assert boolean break byte case catch char class const continue default do "
    "double else enum extends final finally float for goto if implements import instanceof "
    "int interface long native new package private protected public return short static "
    "strictfp super switch synchronized this throw throws transient try void volatile while "
    "true false null var yield record sealed permits".split()
)
@dataclass(frozen=True)
class Created:
    name: str
    language: str
    port: int
    folder: Path
    files: list[Path]
    compose_regenerated: bool


def normalise_language(text: str) -> str:
    lang = LANG_ALIASES.get(text.strip().lower(), text.strip().lower())
    if lang not in PORT_BLOCKS:
        raise ScaffoldError(
            f"LANG={text!r} is not a template; use one of {', '.join(PORT_BLOCKS)} "
            "(other: a language without a template yet)"
        )
    return lang


def check_name(name: str, language: str, servers_dir: Path = SERVERS_DIR) -> None:
    """Refuse names that break a rule or collide with an existing stack."""
    if not NAME_PATTERN.match(name) or len(name) > MAX_NAME_LENGTH:
        raise ScaffoldError(
            f"NAME={name!r} is not a valid stack name: use lower-case letters, digits and "
            f"single hyphens, starting with a letter, at most {MAX_NAME_LENGTH} characters "
            "(e.g. fastapi-uvicorn)"
        )
    if name in RESERVED_NAMES:
        raise ScaffoldError(f"NAME={name!r} is reserved (the harness or compose use it)")
    folder = servers_dir / name
    if folder.exists():
        what = "a stack" if (folder / "server.toml").is_file() else "a folder"
        raise ScaffoldError(
            f"servers/{name}/ exists already ({what}); choose another NAME "
            "(make list shows the stacks)"
        )
    if language == "java" and java_package(name) in JAVA_RESERVED:
        raise ScaffoldError(f"NAME={name!r} would make the Java package a keyword; choose another")


def existing_manifests(servers_dir: Path = SERVERS_DIR) -> list[dict]:
    """Port and display name of every manifest, read leniently (a broken one still counts)."""
    found = []
    for path in sorted(servers_dir.glob("*/server.toml")):
        if path.parent.name.startswith("_"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            port = re.search(r"^port\s*=\s*(\d+)", text, re.MULTILINE)
            data = {"port": int(port.group(1))} if port else {}
        found.append({"stack": path.parent.name, **data})
    return found


def used_ports(servers_dir: Path = SERVERS_DIR) -> dict[int, str]:
    used = {DEFAULT_PORT: NAME}
    for entry in existing_manifests(servers_dir):
        if isinstance(entry.get("port"), int):
            used[entry["port"]] = entry["stack"]
    return used


def choose_port(language: str, servers_dir: Path = SERVERS_DIR, busy=None) -> int:
    """The first port of the language's block that no manifest uses and nothing listens on."""
    busy = busy or port_in_use
    used = used_ports(servers_dir)
    for port in [*PORT_BLOCKS[language], *SPILL_PORTS]:
        if port not in used and not busy(port):
            return port
    raise ScaffoldError("no free port in 8101..8999; set one with --port")


def check_display_name(display_name: str, servers_dir: Path) -> None:
    if (
        not display_name.strip()
        or not display_name.isascii()
        or not display_name.isprintable()
        or "!" in display_name
        or '"' in display_name
        or "\\" in display_name
    ):
        raise ScaffoldError(
            f"DISPLAY_NAME={display_name!r}: printable ASCII without '!', quotes or backslashes"
        )
    for entry in existing_manifests(servers_dir):
        if entry.get("display_name") == display_name:
            raise ScaffoldError(
                f"display name {display_name!r} is taken by servers/{entry['stack']}/; "
                "set another with DISPLAY_NAME='...'"
            )


def create_stack(
    name: str,
    language: str,
    display_name: str | None = None,
    port: int | None = None,
    servers_dir: Path = SERVERS_DIR,
    templates_dir: Path = TEMPLATES_DIR,
    busy=None,
) -> Created:
    language = normalise_language(language)
    check_name(name, language, servers_dir)
    display_name = display_name or name
    check_display_name(display_name, servers_dir)
    if port is None:
        port = choose_port(language, servers_dir, busy)
    else:
        owner = used_ports(servers_dir).get(port)
        if owner or not 1024 <= port <= 65535:
            raise ScaffoldError(f"port {port} is " + (f"used by {owner}" if owner else "invalid"))
    template = templates_dir / language
    if not template.is_dir():
        raise ScaffoldError(f"template folder {template} is missing")

    # Render next to the destination, check, then move into place: a failure
    # leaves nothing behind.
    staging = Path(tempfile.mkdtemp(prefix=f".new-{name}-", dir=servers_dir))
    folder = servers_dir / name
    try:
        render(template, staging, template_values(name, display_name, port))
        staging.chmod(template.stat().st_mode & 0o777)  # mkdtemp's 0700, as a stack's folder
        staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    try:
        load(name, servers_dir)
        problems = [p for p in validate_all(servers_dir) if p.startswith(f"{name}:")]
        if problems:
            raise ManifestError("; ".join(problems))
    except ManifestError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise ScaffoldError(f"the rendered manifest is invalid (template bug): {exc}") from None
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    regenerated = servers_dir == SERVERS_DIR and regenerate_compose()
    return Created(name, language, port, folder, files, regenerated)


def regenerate_compose() -> bool:
    """docker-compose.yml lists one service per manifest; rewrite it from the manifests."""
    text = compose.render()
    if compose.COMPOSE_FILE.is_file() and compose.COMPOSE_FILE.read_text() == text:
        return False
    compose.COMPOSE_FILE.write_text(text, encoding="utf-8")
    return True


def register(sub: argparse._SubParsersAction) -> None:
    new = sub.add_parser(
        "new-server",
        help="create servers/<name>/ from a template (a stub that answers 501)",
        description="Create servers/<name>/ from servers/_templates/<lang>/ with a free port.",
    )
    new.add_argument("name", help="folder name: lower-case letters, digits, hyphens")
    new.add_argument("--lang", required=True, help=f"one of: {', '.join(PORT_BLOCKS)}")
    new.add_argument("--display-name", help="name in the hello body (default: the name)")
    new.add_argument("--port", type=int, help="default: the first free port of the language")
    new.set_defaults(func=cmd_new_server)


def cmd_new_server(args: argparse.Namespace) -> int:
    try:
        created = create_stack(args.name, args.lang, args.display_name, args.port)
    except ScaffoldError as exc:
        print(f"new-server: {exc}", file=sys.stderr)
        return 2
    rel = created.folder.relative_to(REPO_ROOT)
    print(f"Created {rel}/ from the {created.language} template, port {created.port}:")
    for path in created.files:
        print(f"  {path.relative_to(REPO_ROOT)}")
    if created.compose_regenerated:
        print(f"Regenerated docker-compose.yml (a service for {created.name}); commit it too.")
    print(
        "\nNext:\n"
        f"  make check SERVERS={created.name}   # fails with 501s until the routes are written\n"
        f"  make serve SERVER={created.name}    # run it by hand on 127.0.0.1:{created.port}\n"
        "  docs/adding-a-server.md  # the whole path, step by step"
    )
    return 0
