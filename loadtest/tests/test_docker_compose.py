"""The generated docker-compose.yml, the Dockerfiles' base images and the
stand-in recipes. No Docker daemon needed (the Compose v2 CLI is used for
`config` when it is installed)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys

import pytest

from loadtest.core.manifest import REPO_ROOT, load_all
from loadtest.core.runner import Limits
from loadtest.runners import compose
from loadtest.runners.container import compose_args, limits_env
from loadtest.runners.docker import compose_problem

STANDINS = REPO_ROOT / "docker" / "standins" / "standins.py"
# An official image pinned to an exact tag: name:1.2.3..., name:bookworm-YYYYMMDD-slim.
EXACT_TAG = re.compile(r"^[a-z0-9./-]+:(\d+(\.\d+)+[^:]*|[a-z]+-\d{8}[^:]*)$")


def standins_module():
    spec = importlib.util.spec_from_file_location("serverlab_standins", STANDINS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_compose_file_is_current():
    committed = compose.COMPOSE_FILE.read_text(encoding="utf-8")
    assert committed == compose.render(), "docker-compose.yml is stale: run `make compose`"


def test_every_stack_has_a_service_on_its_port():
    services = compose.model()["services"]
    for manifest in load_all():
        service = services[manifest.name]
        assert (
            service["environment"]["PORT"]
            == f"${{{compose.env_name(manifest.name, 'PORT')}:-{manifest.port}}}"
        )
        assert service["image"] == f"serverlab/{manifest.name}"
        dockerfile = compose.dockerfile_path(manifest).relative_to(compose.REPO_ROOT).as_posix()
        assert service["build"]["dockerfile"] == dockerfile
        own, family = f"servers/{manifest.name}/Dockerfile", "servers/_shared/"
        assert dockerfile == own or dockerfile.startswith(family), dockerfile
    assert "loadgen" in services


def test_tls_stacks_mount_the_run_certificate_and_take_variant_env():
    services = compose.model()["services"]
    for manifest in load_all():
        service = services[manifest.name]
        if manifest.tls or manifest.self_tls_terminator:
            assert service["volumes"] == ["${TLS_DIR:-./.build/tls}:/run/tls:ro"], manifest.name
        else:
            assert "volumes" not in service, manifest.name
        # FRONT=self: the runner points TLS_CERT/TLS_KEY at the mount; unset, plain HTTP.
        passed_through = {"TLS_CERT", "TLS_KEY"} <= set(service["environment"])
        assert passed_through == bool(manifest.self_tls_terminator), manifest.name
        for variant in manifest.variants:
            for key in variant.get("env", {}):
                assert key in service["environment"] and service["environment"][key] is None
    assert services["nginx-static"]["environment"]["STATIC_CONFIG"] is None


def test_plain_up_starts_nothing():
    for name, service in compose.model()["services"].items():
        assert service.get("profiles"), (
            f"{name} has no profile: plain `docker compose up` would start it"
        )


def test_hardening_and_host_network_apply_to_every_service():
    model = compose.model()
    hardening = model["x-hardening"]
    assert hardening["network_mode"] == "host"
    assert hardening["read_only"] is True
    assert hardening["cap_drop"] == ["ALL"]
    assert "no-new-privileges:true" in hardening["security_opt"]
    assert hardening["init"] is True
    assert hardening["ulimits"]["nofile"]["soft"] >= 10_000
    assert hardening["ulimits"]["nofile"]["hard"] >= 10_000
    for name, service in model["services"].items():
        assert service["<<"] == "*hardening", name
        # Every image is built on the host network (the ceiling runs the loadgen's image).
        assert service.get("build", {"network": "host"})["network"] == "host", name
    text = compose.COMPOSE_FILE.read_text()
    assert text.count("<<: *hardening") == len(model["services"])


def test_limits_come_from_the_shared_knobs():
    services = compose.model()["services"]
    for manifest in load_all():
        service = services[manifest.name]
        assert service["cpuset"] == "${SERVER_CPUS:-}"
        assert service["cpus"] == "${SERVER_CPU_QUOTA:-0}"
        assert service["mem_limit"] == "${SERVER_MEMORY:-0}"
        assert service["memswap_limit"] == "${SERVER_MEMORY:-0}"
    assert services["loadgen"]["cpuset"] == "${CLIENT_CPUS:-}"


def test_limits_env_maps_the_runner_limits():
    env = limits_env(Limits(cpus=(0, 1), cpu_quota=0.5, memory=256 * 1024**2), client_cpus=(2, 3))
    assert env["SERVER_CPUS"] == "0,1"
    assert env["SERVER_CPU_QUOTA"] == "0.5"
    assert env["SERVER_MEMORY"] == str(256 * 1024**2)
    assert env["WORKERS"] == "2"
    assert env["CLIENT_CPUS"] == "2,3"
    bare = limits_env(Limits())
    for key in ("SERVER_CPUS", "SERVER_CPU_QUOTA", "SERVER_MEMORY", "WORKERS", "CLIENT_CPUS"):
        assert key not in bare


def test_base_images_are_build_args_with_exact_official_tags():
    for dockerfile in [compose.dockerfile_path(m) for m in load_all()] + [
        compose.LOADGEN_DOCKERFILE
    ]:
        if not dockerfile.is_file():
            continue  # the manifest tests report a missing Dockerfile
        args = compose.official_base_images(dockerfile)
        froms = [ln for ln in dockerfile.read_text().splitlines() if compose.FROM_LINE.match(ln)]
        for line in froms:
            image = line.split()[1]
            assert (
                image.startswith("${")
                or image == "scratch"
                or not re.match(r"^[a-z]", image)
                or (image in {ln.split()[-1] for ln in froms if " AS " in ln.upper()})
            ), f"{dockerfile}: FROM {image} is not a base-image ARG"
        for name, ref in args.items():
            assert EXACT_TAG.match(ref), f"{dockerfile}: {name}={ref} is not an exact tag"
            assert not ref.endswith(":latest")
        text = dockerfile.read_text()
        assert not re.search(r"^#\s*syntax=", text, re.MULTILINE), (
            f"{dockerfile}: a `# syntax=` line makes BuildKit pull its frontend (no registry here)"
        )


def test_base_image_args_reads_global_args_used_by_from(tmp_path):
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(
        "# comment\nARG BUILD_IMAGE=golang:1.26.8-bookworm\nARG UNUSED=x:1\n"
        "ARG RUNTIME=debian:bookworm-20250610-slim\nARG TOOL_IMAGE=tool-build\n"
        "FROM ${BUILD_IMAGE} AS tool-build\nFROM ${TOOL_IMAGE} AS tool\n"
        "ARG LATER=ignored:1\nFROM $RUNTIME\n"
    )
    assert compose.base_image_args(dockerfile) == {
        "BUILD_IMAGE": "golang:1.26.8-bookworm",
        "RUNTIME": "debian:bookworm-20250610-slim",
        "TOOL_IMAGE": "tool-build",
    }
    assert "TOOL_IMAGE" not in compose.official_base_images(dockerfile)
    assert compose.arg_default(dockerfile, "LATER") == "ignored:1"
    assert compose.env_name("spring-webflux", "BUILD_IMAGE") == "SPRING_WEBFLUX_BUILD_IMAGE"


def test_standin_recipes_map_official_images():
    standins = standins_module()
    assert standins.recipe_for("scratch") is None
    go = standins.recipe_for("golang:1.26.8-bookworm")
    assert go.standin == "serverlab/standin-golang:1.26.8-bookworm"
    assert go.build_args == {"GO_VERSION": "1.26.8"}
    assert standins.recipe_for("debian:bookworm-20250610-slim").standin == standins.BASE
    assert standins.recipe_for("debian:trixie-slim").standin == "serverlab/standin-debian:trixie"
    jre = standins.recipe_for("eclipse-temurin:17.0.15_6-jre-jammy")
    assert jre.dockerfile == "temurin-jre.Dockerfile"
    assert standins.recipe_for("maven:3.9.9-eclipse-temurin-17").build_args == {"JDK_MAJOR": "17"}
    jdk21 = standins.recipe_for("maven:3.9.16-eclipse-temurin-21")
    assert (jdk21.suite, jdk21.build_args) == ("trixie", {"JDK_MAJOR": "21"})
    with pytest.raises(standins.StandinError, match="Java 11"):
        standins.recipe_for("eclipse-temurin:11.0.25_9-jre")
    pypy = standins.recipe_for("pypy:3.9-7.3.16-slim-bookworm")
    assert pypy.dockerfile == "pypy.Dockerfile"
    with pytest.raises(standins.StandinError, match="Python 3.10"):
        standins.recipe_for("pypy:3.10-7.3.17-slim-bookworm")
    with pytest.raises(standins.StandinError, match="syntax"):
        standins.recipe_for("docker/dockerfile:1")
    with pytest.raises(standins.StandinError, match="no stand-in recipe"):
        standins.recipe_for("node:22.1.0")


def test_standin_digest_changes_with_the_recipe():
    standins = standins_module()
    a = standins.recipe_for("golang:1.26.8-bookworm")
    b = standins.recipe_for("golang:1.26.7-bookworm")
    assert a.digest() != b.digest()
    assert a.digest() == standins.recipe_for("golang:1.26.8-bookworm").digest()


@pytest.mark.skipif(shutil.which("docker") is None, reason="docker CLI not installed")
def test_compose_config_validates_with_compose_v2():
    problem = compose_problem()
    if problem:
        pytest.skip(problem)
    result = subprocess.run(
        ["docker", *compose_args("--profile", "*", "config", "--quiet")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    # Knobs reach the container settings as Compose resolves them.
    env = {
        **limits_env(Limits(cpus=(1,), cpu_quota=0.5, memory=256 * 1024**2)),
        "PATH": "/usr/bin:/bin",
    }
    name = load_all()[0].name
    result = subprocess.run(
        ["docker", *compose_args("config", name)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "cpus: 0.5" in result.stdout
    assert 'cpuset: "1"' in result.stdout
    assert 'mem_limit: "268435456"' in result.stdout
    assert 'WORKERS: "1"' in result.stdout


def test_loadgen_runs_the_harness_copy_of_repository_files():
    from loadtest.runners.loadgen import LOADGEN_HARNESS, LoadgenClient

    client = LoadgenClient.__new__(LoadgenClient)  # no container needed to map paths
    lua = REPO_ROOT / "loadtest" / "tools" / "wrk_report.lua"
    assert client.translate(str(lua)) == f"{LOADGEN_HARNESS}/loadtest/tools/wrk_report.lua"
    assert client.translate("http://127.0.0.1:8101/") == "http://127.0.0.1:8101/"
    assert client.translate(str(REPO_ROOT) + "x/y") == str(REPO_ROOT) + "x/y"
    dockerfile = compose.LOADGEN_DOCKERFILE.read_text()
    assert "COPY loadtest/measure/tools /opt/serverlab/loadtest/measure/tools" in dockerfile
    assert LOADGEN_HARNESS == "/opt/serverlab"


def test_standin_recipe_for_node_uses_the_npm_registry_binary(tmp_path):
    import base64
    import hashlib

    standins = standins_module()
    node = standins.recipe_for("node:24.21.0-bookworm-slim")
    assert node.standin == "serverlab/standin-node:24.21.0-bookworm-slim"
    assert node.dockerfile == "node.Dockerfile"
    assert node.build_args == {"NODE_VERSION": "24.21.0"}
    assert (standins.HERE / node.dockerfile).is_file()
    assert node.digest() != standins.recipe_for("node:24.20.0-bookworm-slim").digest()
    for ref in ("node:24-bookworm-slim", "node:24.21.0-alpine", "node:24.21.0-bookworm"):
        with pytest.raises(standins.StandinError, match="no stand-in recipe"):
            standins.recipe_for(ref)
    # The npm a Node.js release bundles: the newest upgrade at or below its entry.
    changelog = (
        '<a id="24.21.0"></a>\n## Version 24.21.0\n* deps: update undici\n'
        '<a id="24.20.0"></a>\n## Version 24.20.0\n* **deps**: upgrade npm to 11.19.0\n'
        "* **deps**: upgrade npm to 11.18.0\n"
    )
    assert standins.bundled_npm_version(changelog, "24.21.0") == "11.19.0"
    with pytest.raises(standins.StandinError, match="no entry"):
        standins.bundled_npm_version(changelog, "24.22.0")
    # Tarballs are checked against the registry's sha512 integrity.
    tarball = tmp_path / "package.tgz"
    tarball.write_bytes(b"node")
    good = "sha512-" + base64.b64encode(hashlib.sha512(b"node").digest()).decode()
    standins.check_integrity(tarball, good)
    with pytest.raises(standins.StandinError, match="does not match"):
        standins.check_integrity(tarball, good[:-4] + "AAA=")
    with pytest.raises(standins.StandinError, match="does not match"):
        standins.check_integrity(tarball, "sha1-" + good[7:])
