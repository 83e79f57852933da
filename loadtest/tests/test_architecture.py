"""The harness keeps its shape: layers that import downwards only, small modules and classes.

docs/architecture.md draws the layers; this test holds the code to them, read
from the source with `ast` (nothing is imported or run):

- a module of a layer imports only from its own layer or the layers below;
- every import sits at the top of its file (a `TYPE_CHECKING` block counts
  as the top; `LAZY_IMPORTS` would list one made later on purpose, with why);
- no module is longer than MAX_MODULE_LINES, no class than MAX_CLASS_LINES;
- a command module (commands/) imports no other command module: what two
  commands share lives on the floor where it belongs;
- no class reads the fields of the object that made it: a class built with
  `self` as an argument (`CaseRunner(self)`) that then reads
  `self.bench.knobs` is a cycle the import graph cannot show. What a part
  needs is handed to it (bench/context.RunContext), not fetched from its maker.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]
# Lowest first. `cli.py`, `__main__.py` and `testing.py` (helpers for the stacks'
# own tests) sit on top with the commands.
LAYERS = ("core", "host", "packages", "measure", "runners", "bench", "report", "commands")
TOP_MODULES = ("cli", "__main__", "testing")
MAX_MODULE_LINES = 550
MAX_CLASS_LINES = 250
# (module, imported module): imports made inside a function on purpose.
LAZY_IMPORTS: set[tuple[str, str]] = set()


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        if "tests" in relative.parts:
            continue
        parts = list(relative.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def layer_of(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in TOP_MODULES:
        return len(LAYERS)
    return LAYERS.index(parts[1])


def imports(path: Path, module: str) -> list[tuple[str, int, bool]]:
    """(imported module, line, at the top?) for every import of the file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    top_level = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            top_level.add(id(node))
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            top_level.update(id(child) for child in node.body)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from loadtest.runners import docker` imports the module loadtest.runners.docker
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        found.extend((name, node.lineno, id(node) in top_level) for name in names)
    return found


def known(name: str, all_modules: dict[str, Path]) -> str | None:
    """The harness module `name` refers to, or None for the standard library and others."""
    while name:
        if name in all_modules:
            return name
        name = name.rpartition(".")[0]
    return None


ALL = modules()


@pytest.mark.parametrize("module", sorted(ALL))
def test_a_module_imports_only_from_its_layer_or_below(module):
    upward = []
    for name, line, _ in imports(ALL[module], module):
        target = known(name, ALL)
        if target and target != "loadtest" and layer_of(target) > layer_of(module):
            upward.append(f"line {line}: {target} ({LAYERS[layer_of(target)]})")
    assert not upward, f"{module} imports from a higher layer: {sorted(set(upward))}"


@pytest.mark.parametrize("module", sorted(ALL))
def test_every_import_is_at_the_top_of_its_file(module):
    inside = [
        f"line {line}: {name}"
        for name, line, at_top in imports(ALL[module], module)
        if not at_top and (module, name) not in LAZY_IMPORTS
    ]
    assert not inside, f"{module} imports inside a function: {sorted(set(inside))}"


@pytest.mark.parametrize("module", sorted(ALL))
def test_modules_and_classes_stay_small(module):
    path = ALL[module]
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.name}: {lines} lines"
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef):
            size = node.end_lineno - node.lineno + 1
            assert size <= MAX_CLASS_LINES, f"{module}.{node.name}: {size} lines"


def command_module(module: str) -> bool:
    return module.startswith("loadtest.commands.")


@pytest.mark.parametrize("module", sorted(m for m in ALL if command_module(m)))
def test_a_command_imports_no_other_command(module):
    sideways = {
        f"line {line}: {target}"
        for name, line, _ in imports(ALL[module], module)
        if (target := known(name, ALL)) and command_module(target) and target != module
    }
    assert not sideways, f"{module} imports another command: {sorted(sideways)}"


def test_the_command_rule_sees_a_sideways_import(tmp_path):
    """The rule above on a made-up command that imports another: it must not pass it."""
    fake = tmp_path / "fake.py"
    fake.write_text("from loadtest.commands.bench import cmd_bench\nfrom loadtest.core import knobs\n")
    found = [known(name, ALL) for name, _, _ in imports(fake, "loadtest.commands.fake")]
    assert "loadtest.commands.bench" in found and "loadtest.core.knobs" in found


def classes_by_name(trees: dict[str, ast.Module]) -> dict[str, list[ast.ClassDef]]:
    found: dict[str, list[ast.ClassDef]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(node)
    return found


def callee(call: ast.Call) -> str | None:
    """`Name(...)` or `module.Name(...)`: the name called."""
    if isinstance(call.func, ast.Name):
        return call.func.id
    return call.func.attr if isinstance(call.func, ast.Attribute) else None


def is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def constructor_params(cls: ast.ClassDef) -> list[str]:
    """The parameters a class is built with: its __init__'s, or a dataclass's fields."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            return [a.arg for a in [*node.args.posonlyargs, *node.args.args][1:]] + [
                a.arg for a in node.args.kwonlyargs
            ]
    return [n.target.id for n in cls.body
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]  # fmt: skip


def params_given_self(call: ast.Call, cls: ast.ClassDef) -> set[str]:
    """Which of the class's parameters receive the caller's `self` in this call."""
    params = constructor_params(cls)
    given = {params[i] for i, arg in enumerate(call.args) if is_self(arg) and i < len(params)}
    return given | {kw.arg for kw in call.keywords if kw.arg and is_self(kw.value)}


def self_attribute(node: ast.AST) -> str | None:
    """`self.name` -> "name"."""
    if isinstance(node, ast.Attribute) and is_self(node.value):
        return node.attr
    return None


def fields_read_through(cls: ast.ClassDef, param: str) -> set[str]:
    """The fields the class reads of what it was given as `param`: `param.x`, and
    `self.kept.x` where `self.kept = param` (a dataclass keeps it as `self.param`)."""
    has_init = any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in cls.body)
    kept = set() if has_init else {param}
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign) and getattr(node.value, "id", None) == param:
            kept |= {name for t in node.targets if (name := self_attribute(t))}
    reads = set()
    for node in ast.walk(cls):
        if not isinstance(node, ast.Attribute):
            continue
        inner = node.value
        if getattr(inner, "id", None) == param or self_attribute(inner) in kept:
            reads.add(node.attr)
    return reads


def reads_of_maker(trees: dict[str, ast.Module]) -> list[str]:
    """Every class built with `self` as an argument that reads a field of that `self`."""
    classes = classes_by_name(trees)
    found = []
    for module, tree in sorted(trees.items()):
        for maker in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for call in (n for n in ast.walk(maker) if isinstance(n, ast.Call)):
                for made in classes.get(callee(call) or "", []):
                    for param in params_given_self(call, made):
                        fields = sorted(fields_read_through(made, param))
                        if fields:
                            found.append(f"{module}: {maker.name} makes {made.name}(self), "
                                         f"which reads its {', '.join(fields)}")  # fmt: skip
    return found


def test_no_class_reads_the_fields_of_the_object_that_made_it():
    trees = {module: ast.parse(path.read_text()) for module, path in ALL.items()}
    assert not reads_of_maker(trees)


MADE_WITH_SELF = """
class Bench:
    def __init__(self, knobs):
        self.knobs = knobs
        self.cases = CaseRunner(self)

class CaseRunner:
    def __init__(self, bench):
        self.bench = bench

    def spec(self):
        return self.bench.knobs.duration
"""

# The same classes, the runner handed what it needs instead of its maker.
GIVEN_WHAT_IT_NEEDS = MADE_WITH_SELF.replace("CaseRunner(self)", "CaseRunner(Context(knobs))")
GIVEN_WHAT_IT_NEEDS = GIVEN_WHAT_IT_NEEDS.replace("bench", "context")

READ_AT_ONCE = """
class Engine:
    label = "local"

    def facts(self):
        with Api(owner=self) as api:
            return api.get()

class Api:
    def __init__(self, owner):
        self.name = owner.label
"""

READ_AS_DATACLASS_FIELD = """
class Run:
    def start(self):
        return Step(3, self)

class Step:
    number: int
    run: object

    def go(self):
        return self.run.folder
"""


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (MADE_WITH_SELF, ["fake: Bench makes CaseRunner(self), which reads its knobs"]),
        (GIVEN_WHAT_IT_NEEDS, []),
        (READ_AT_ONCE, ["fake: Engine makes Api(self), which reads its label"]),
        (READ_AS_DATACLASS_FIELD, ["fake: Run makes Step(self), which reads its folder"]),
    ],
    ids=["reads-back", "given-a-context", "keyword-read-in-init", "dataclass-field"],
)
def test_the_maker_rule_sees_a_read_back(source, expected):
    """The rule above on made-up classes: each way of reading the maker is caught,
    and a class handed a context of its own passes."""
    assert reads_of_maker({"fake": ast.parse(source)}) == expected


def test_every_layer_has_its_folder():
    assert all((PACKAGE / layer).is_dir() for layer in LAYERS)
