"""Every committed manifest is valid, and the validator catches broken ones."""

from __future__ import annotations

import copy
import tomllib

import pytest

from loadtest.core import manifest as manifests

GOOD = {
    "display_name": "Example",
    "language": "Python",
    "framework": "example",
    "framework_version": "1.2.3",
    "runtime": "CPython",
    "runtime_version": "3.11.7",
    "port": 8999,
    "concurrency": {"kind": "processes", "default_workers": "cpus", "workers": "one per core"},
    "native": {
        "requires": ["python3"],
        "apt": [],
        "version": "python3 -V",
        "build": "true",
        "run": "exec true",
    },
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
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        return str(v)

    lines, tables = [], []
    for key, v in data.items():
        if isinstance(v, dict):
            tables.append(f"[{key}]\n" + "".join(f"{k} = {value(x)}\n" for k, x in v.items()))
        elif key in ("tuning", "known_failure", "variant"):
            tables += [
                f"[[{key}]]\n" + "".join(f"{k} = {value(x)}\n" for k, x in e.items()) for e in v
            ]
        else:
            lines.append(f"{key} = {value(v)}")
    text = "\n".join(lines) + "\n\n" + "\n".join(tables)
    assert tomllib.loads(text) == data
    return text


def test_known_failure_needs_a_reason():
    data = copy.deepcopy(GOOD)
    data["known_failure"] = [{"check": "keep-alive"}]
    assert "[[known_failure]] entry 1 needs 'check' and 'why'" in manifests.validate_data(data)


def test_known_failure_intermittent_is_true_or_false():
    data = copy.deepcopy(GOOD)
    data["known_failure"] = [{"check": "keep-alive", "why": "timing", "intermittent": "often"}]
    assert "[[known_failure]] entry 1: 'intermittent' must be true or false" in (
        manifests.validate_data(data)
    )
    data["known_failure"][0]["intermittent"] = True
    assert manifests.validate_data(data) == []


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
    from loadtest.runners.conformance import apply_known_failures

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


STATIC = {
    **copy.deepcopy(GOOD),
    "contract": "static",
    "tls": True,
    "variant": [{"name": "stock", "env": {"STATIC_CONFIG": "stock"}, "why": "package defaults"}],
}


def write_stack(root, name: str, data: dict) -> None:
    folder = root / name
    folder.mkdir()
    (folder / "server.toml").write_text(to_toml(data))
    (folder / "Dockerfile").write_text("FROM scratch\n")
    (folder / "README.md").write_text("# x\n")


def test_contract_and_tls_default_to_a_plain_api_stack(tmp_path):
    write_stack(tmp_path, "plain", GOOD)
    plain = manifests.load("plain", tmp_path)
    assert (plain.contract, plain.tls, plain.variant, plain.env) == ("api", False, None, {})
    assert plain.provenance()["contract"] == "api"


def test_variant_id_adds_its_env_and_keeps_its_own_build_folder(tmp_path):
    write_stack(tmp_path, "site", STATIC)
    default = manifests.load("site", tmp_path)
    stock = manifests.load("site@stock", tmp_path)
    assert (default.contract, default.tls, default.env) == ("static", True, {})
    assert stock.name == "site@stock" and stock.stack == "site" and stock.variant == "stock"
    assert stock.env == {"STATIC_CONFIG": "stock"} and stock.tls  # a tls stack's variant too
    assert stock.folder == default.folder and stock.build_dir != default.build_dir
    assert stock.provenance()["variant_env"] == {"STATIC_CONFIG": "stock"}
    assert (default.label, stock.label) == ("Example", "Example (stock)")
    assert manifests.stack_ids(tmp_path) == ["site", "site@stock"]
    assert manifests.stack_names(tmp_path) == ["site"]
    assert [m.name for m in manifests.load_all(["site@stock"], tmp_path)] == ["site@stock"]
    assert manifests.validate_all(tmp_path) == []


def test_unknown_variant_lists_the_known_ones(tmp_path):
    write_stack(tmp_path, "site", STATIC)
    with pytest.raises(manifests.ManifestError, match="unknown variant 'fast'.*variants: stock"):
        manifests.load("site@fast", tmp_path)
    write_stack(tmp_path, "plain", GOOD)
    with pytest.raises(manifests.ManifestError, match="variants: none"):
        manifests.load("plain@stock", tmp_path)


def test_a_tls_variant_serves_https_itself_with_the_default_settings(tmp_path):
    data = {**copy.deepcopy(GOOD), "self_tls": {"terminator": "Kestrel"},
            "variant": [{"name": "https", "tls": True, "why": "its own TLS"}]}  # fmt: skip
    write_stack(tmp_path, "app", data)
    default, https = manifests.load("app", tmp_path), manifests.load("app@https", tmp_path)
    assert (default.tls, https.tls) == (False, True)
    assert https.env == {} and https.self_tls_terminator == "Kestrel"
    assert https.build_dir != default.build_dir and https.label == "Example (https)"
    assert manifests.validate_all(tmp_path) == []
    # Neither an environment nor TLS: the variant would be the default under another name.
    data["variant"] = [{"name": "same", "why": "x"}]
    assert any("non-empty 'env' table, or tls = true" in p for p in manifests.validate_data(data))


def test_debian_package_versions_are_exact():
    for version in ("1.22.1-9+deb12u11", "2.4.71-1~deb12u1", "1.2.3"):
        assert manifests.EXACT_VERSION.match(version), version
    for version in ("~1.2", ">=2.4", "1.2.*", "latest"):
        assert not manifests.EXACT_VERSION.match(version), version


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("contract", "grpc", "'contract' must be one of api, static"),
        ("tls", "yes", "'tls' must be true or false"),
        ("variant", [{"name": "Stock", "env": {"A": "b"}, "why": "x"}], "needs a 'name'"),
        ("variant", [{"name": "stock", "env": {}, "why": "x"}], "non-empty 'env'"),
        ("variant", [{"name": "stock", "env": {"a": "b"}, "why": "x"}], "UPPER_CASE"),
        ("variant", [{"name": "stock", "env": {"A": 1}, "why": "x"}], "UPPER_CASE"),
        ("variant", [{"name": "stock", "env": {"A": "b"}}], "needs a 'why'"),
        ("variant", [{"name": "s", "env": {"A": "b"}, "why": "x"}] * 2, "used twice"),
        ("variant", {"name": "s"}, "array of tables"),
        ("variant", [{"name": "https", "tls": True, "why": "x"}], "tls = true needs [self_tls]"),
        ("variant", [{"name": "https", "tls": "yes", "why": "x"}], "'tls' must be true or false"),
    ],
)
def test_static_keys_and_variants_are_validated(key, value, expected):
    data = copy.deepcopy(STATIC)
    data[key] = value
    problems = manifests.validate_data(data)
    assert any(expected in p for p in problems), problems
