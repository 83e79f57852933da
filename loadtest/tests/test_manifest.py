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
        elif key in ("tuning", "known_failure"):
            tables += [f"[[{key}]]\n" + "".join(f"{k} = {value(x)}\n" for k, x in e.items()) for e in v]
        else:
            lines.append(f"{key} = {value(v)}")
    text = "\n".join(lines) + "\n\n" + "\n".join(tables)
    assert tomllib.loads(text) == data
    return text


def test_known_failure_needs_a_reason():
    data = copy.deepcopy(GOOD)
    data["known_failure"] = [{"check": "keep-alive"}]
    assert "[[known_failure]] entry 1 needs 'check' and 'why'" in manifests.validate_data(data)


def test_known_failure_must_be_explained_in_the_readme(tmp_path):
    folder = tmp_path / "sync"
    folder.mkdir()
    data = copy.deepcopy(GOOD)
    data["known_failure"] = [{"check": "keep-alive", "why": "closes every connection"}]
    (folder / "server.toml").write_text(to_toml(data))
    (folder / "Dockerfile").write_text("FROM scratch\n")
    (folder / "README.md").write_text("# sync\nNo keep-alive here.\n")
    assert manifests.validate_all(tmp_path) == [
        "sync: known failure `keep-alive` must be explained in its README.md"
    ]
    (folder / "README.md").write_text("# sync\n`keep-alive` fails: one request per connection.\n")
    assert manifests.validate_all(tmp_path) == []


def test_only_listed_checks_are_excused():
    from loadtest.check import apply_known_failures

    stack = manifests.Manifest(
        **{k: v for k, v in GOOD.items() if k != "tuning"},
        name="sync",
        folder=manifests.SERVERS_DIR,
        tuning=GOOD["tuning"],
        known_failures=[{"check": "keep-alive", "why": "closes every connection"}],
    )
    report = {
        "passed": 1,
        "failed": 2,
        "checks": [
            {"id": "hello-body", "ok": True},
            {"id": "keep-alive", "ok": False},
            {"id": "head[/]", "ok": False},
        ],
    }
    result = apply_known_failures(report, stack)
    assert result["failed"] == 1, "head[/] is not listed, so it still fails"
    assert result["known_failures"] == ["keep-alive"]
    assert result["checks"][1]["known"] == "closes every connection"
