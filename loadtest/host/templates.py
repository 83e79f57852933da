"""A stack's folder written from a template of servers/_templates/: every `{{key}}`
placeholder, in file names and contents, replaced (`make new-server`, and `make
mirror`, which fills the templates' packages from a stack made from each)."""

from __future__ import annotations

import re
from pathlib import Path

from loadtest.core.manifest import SERVERS_DIR

TEMPLATES_DIR = SERVERS_DIR / "_templates"
TEMPLATE_SUFFIX = ".tmpl"
PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")


class ScaffoldError(Exception):
    """The stack cannot be created as asked; the message says why and what to do."""


def python_name(name: str) -> str:
    return name.replace("-", "_")


def java_package(name: str) -> str:
    return name.replace("-", "")


def template_values(name: str, display_name: str, port: int) -> dict[str, str]:
    return {
        "name": name,
        "display_name": display_name,
        "port": str(port),
        "py_name": python_name(name),
        "java_package": java_package(name),
    }


def substitute(text: str, values: dict[str, str], source: str) -> str:
    def replace(match: re.Match) -> str:
        key = match.group(1)
        if key not in values:
            raise ScaffoldError(f"{source}: unknown placeholder {match.group(0)}")
        return values[key]

    return PLACEHOLDER.sub(replace, text)


def render(template: Path, dest: Path, values: dict[str, str]) -> list[Path]:
    """Copy a template folder to dest with placeholders replaced; returns the files written."""
    written = []
    for source in sorted(template.rglob("*")):
        if not source.is_file():
            continue
        relative = source.relative_to(template).as_posix()
        if relative.endswith(TEMPLATE_SUFFIX):
            relative = relative[: -len(TEMPLATE_SUFFIX)]
        target = dest / substitute(relative, values, relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            substitute(source.read_text(encoding="utf-8"), values, str(source)), encoding="utf-8"
        )
        target.chmod(source.stat().st_mode & 0o777)
        written.append(target)
    return written
