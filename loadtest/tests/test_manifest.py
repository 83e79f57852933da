"""Every committed manifest is valid, and the validator catches broken ones."""

from __future__ import annotations

import copy
import tomllib

import pytest

from loadtest import manifest as manifests

GOOD = {
    "display_name": "Example",
    "language": "Python",
    "framework": "example",
    "framework_version": "1.2.3",
    "runtime": "CPython",
    "runtime_version": "3.11.7",
    "port": 8999,
    "concurrency": {"kind": "processes", "default_workers": "cpus", "workers": "one per core"},
    "native": {"requires": ["python3"], "apt": [], "version": "python3 -V", "build": "true", "run": "exec true"},
    "docker": {"dockerfile": "Dockerfile"},
    "tuning": [{"setting": "workers", "why": "one process per core"}],
}


def test_committed_manifests_are_valid():
    assert manifests.validate_all() == []


def test_every_stack_has_a_unique_port_and_name():
    loaded = manifests.load_all()
    assert len({m.port for m in loaded}) == len(loaded)
    assert len({m.display_name for m in loaded}) == len(loaded)


def test_good_example_passes():
    assert manifests.validate_data(GOOD) == []


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("port",), 80, "'port' must be in 1024..65535"),
        (("port",), "8080", "'port' must be a int"),
        (("framework_version",), "^1.2", "exact version"),
        (("runtime_version",), "latest", "exact version"),
        (("display_name",), "Hi!", "without '!'"),
        (("display_name",), "caf\u00e9", "printable ASCII"),
        (("concurrency", "kind"), "actors", "'concurrency.kind' must be one of"),
        (("concurrency", "default_workers"), "4", "'concurrency.default_workers' must be one of"),
        (("native", "build"), None, "'native.build' must be a str"),
        (("tuning",), [], "at least one [[tuning]]"),
        (("tuning",), [{"setting": "x"}], "needs 'setting' and 'why'"),
    ],
)
def test_validator_names_the_broken_rule(path, value, expected):
    data = copy.deepcopy(GOOD)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    problems = manifests.validate_data(data)
    assert any(expected in p for p in problems), problems


def test_duplicate_ports_are_reported(tmp_path):
    for name in ("one", "two"):
        folder = tmp_path / name
        folder.mkdir()
        data = copy.deepcopy(GOOD)
        data["display_name"] = name
        (folder / "server.toml").write_text(to_toml(data))
        (folder / "Dockerfile").write_text("FROM scratch\n")
        (folder / "README.md").write_text("# x\n")
    problems = manifests.validate_all(tmp_path)
    assert problems == ["two: port 8999 already used by one"]


def test_unknown_stack_lists_the_known_ones(tmp_path):
    with pytest.raises(manifests.ManifestError, match="unknown stack 'nope'"):
        manifests.load("nope", tmp_path)


def to_toml(data: dict) -> str:
    """Just enough TOML writing for these fixtures."""

    def value(v):
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return str(v)

    lines, tables = [], []
    for key, v in data.items():
        if isinstance(v, dict):
            tables.append(f"[{key}]\n" + "".join(f"{k} = {value(x)}\n" for k, x in v.items()))
        elif key == "tuning":
            tables += ["[[tuning]]\n" + "".join(f"{k} = {value(x)}\n" for k, x in e.items()) for e in v]
        else:
            lines.append(f"{key} = {value(v)}")
    text = "\n".join(lines) + "\n\n" + "\n".join(tables)
    assert tomllib.loads(text) == data
    return text
