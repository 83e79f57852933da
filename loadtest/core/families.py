"""Language families: where a stack's own tests run and how its dependencies are listed.

A stack's manifest may say both itself in [native]: `test` (a shell command
run in the stack's folder after its build) and `dependencies` (one that
prints what the built stack resolved, one `name==version` a line). A stack
that says neither gets its family's default; the family is found from the
package manager's files in the stack's folder, first match wins. The lock
file rules of each family live in loadtest/packages/supply_chain.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Family:
    name: str
    marker: str  # a glob that identifies the family in a stack's folder
    test: str | None  # default command for the stack's own tests
    tested_by: str | None  # or the `make test` stage that runs them instead
    registry: str | None = None  # the package family it fetches from (packages/mirror.FAMILIES)
    # Its stacks build from one shared project (the Maven reactor, the .NET
    # solution), whose build output two builds at once would both write.
    shared_project: bool = False


FAMILIES = (
    Family("go", "go.mod", "go vet ./... && go test -count=1 ./...", None, "go"),
    Family(
        "maven",
        "pom.xml",
        None,
        "the java-unit stage (servers/_shared/java/pom.xml builds and tests every JVM stack)",
        registry="maven",
        shared_project=True,
    ),
    Family(
        "python",
        "*requirements*.txt",
        None,
        "the python-fast and python-e2e stages (pytest over the stack's tests/ folder, by marker)",
        "pypi",
    ),
    Family("npm", "package.json", "node --test", None, "npm"),
    Family("cargo", "Cargo.toml", "cargo test --locked", None, "cargo"),
    Family(
        "dotnet",
        "*.csproj",
        None,
        "the csharp-unit stage (dotnet test servers/_shared/csharp: the contract library, "
        "each C# stack started in-process and checked, its manifest against its source)",
        registry="nuget",
        shared_project=True,
    ),
)
# A stack without a package manager of its own is made of Debian packages
# (nginx-static, apache-static): its [native] apt list is what it runs.
DEBIAN = Family("debian", "", None, None)


def family_of(folder: Path) -> Family:
    for family in FAMILIES:
        if next(folder.glob(family.marker), None) is not None:
            return family
    return DEBIAN


def build_group(folder: Path) -> str:
    """What two builds at once must not share: the stack's folder (a stack and its
    variants), or its family's one project."""
    family = family_of(folder)
    return family.name if family.shared_project else folder.name


def own_tests(native: dict, folder: Path) -> tuple[str | None, str]:
    """The command that runs a stack's own tests, or None and where they run instead."""
    declared = native.get("test")
    if declared:
        return declared, "server.toml [native] test"
    family = family_of(folder)
    if family.test:
        return family.test, f"the {family.name} default"
    if family.tested_by:
        return None, f"run by {family.tested_by}"
    return None, "no tests: set [native] test in server.toml to give it some"
