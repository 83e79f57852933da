"""FRONT=self: stacks that terminate TLS themselves ([self_tls] in server.toml).

A throw-away stack (the contract's reference server, serving HTTPS when the
runner passes TLS_CERT and TLS_KEY) goes through the native runner, `check`'s
steps and a short bench; the ASP.NET Core stacks (Kestrel) go through `make
check`'s command where `dotnet` is installed. Everything listens on 127.0.0.1.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import replace
from types import SimpleNamespace

import pytest

from loadtest import cli
from loadtest.core import manifest as manifests
from loadtest.core.knobs import resolve
from loadtest.core.manifest import REPO_ROOT
from loadtest.bench.results import read_records
from loadtest.core.runner import Limits
from loadtest.host.ports import PORTS_VARIABLE, free_port
from loadtest.host.process import group_pids
from loadtest.runners import front
from loadtest.runners.conformance import check_stack
from loadtest.runners.native import NativeRunner
from loadtest.tests.stand_in_manifest import bench_over, server_py_stand_in
from loadtest.tests.test_front import alpn
from loadtest.tests.test_manifest import GOOD

pytestmark = pytest.mark.e2e

DISPLAY_NAME = "Reference"
TERMINATOR = "Python ssl"

# The reference server as a stack that serves HTTPS itself when given a certificate.
SELF_TLS_STACK = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, os.environ["REPO_ROOT"])
    from contracts.tests.reference_server import ReferenceServer, serve_in_foreground
    tls = (os.environ["TLS_CERT"], os.environ["TLS_KEY"]) if os.environ.get("TLS_CERT") else None
    server = ReferenceServer(sys.argv[1], tls=tls, port=int(os.environ["PORT"]))
    sys.exit(serve_in_foreground(server, "reference server"))
    """
)


@pytest.fixture
def self_tls_stack(tmp_path):
    """A manifest with [self_tls] whose `run` starts the reference server."""
    manifest = server_py_stand_in(
        tmp_path,
        "test-self-tls",
        SELF_TLS_STACK,
        f'exec {sys.executable} server.py "{DISPLAY_NAME}"',
        display_name=DISPLAY_NAME,
    )
    manifest = replace(manifest, self_tls_terminator=TERMINATOR)
    yield manifest
    shutil.rmtree(manifest.build_dir, ignore_errors=True)


def test_refusal_names_the_stacks_without_self_tls_and_those_with_it():
    kestrel = SimpleNamespace(name="aspnetcore", self_tls_terminator="Kestrel")
    plain = SimpleNamespace(name="go-nethttp", self_tls_terminator=None)
    assert front.refusal("self", [kestrel]) is None
    reason = front.refusal("self", [kestrel, plain])
    assert reason.startswith("FRONT=self: go-nethttp cannot serve TLS itself (no [self_tls]")
    assert "only aspnetcore can" in reason
    assert "none of these can" in front.refusal("self", [plain])


def test_make_check_refuses_self_for_a_stack_without_self_tls(capsys):
    assert cli.main(["check", "--servers", "gin", "--front", "self"]) == 2
    assert "FRONT=self: gin cannot serve TLS itself" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ({"terminator": ""}, "'self_tls.terminator' must name what terminates TLS"),
        ({"terminator": 3}, "'self_tls.terminator' must name what terminates TLS"),
        ({}, "'self_tls.terminator' must name what terminates TLS"),
        ({"terminator": "Kestrel", "alpn": "h2"}, "unknown key(s): alpn"),
        ("Kestrel", "'self_tls' must be a table"),
    ],
)
def test_a_bad_self_tls_table_is_rejected(section, expected):
    data = copy.deepcopy(GOOD)
    data["self_tls"] = section
    problems = manifests.validate_data(data)
    assert any(expected in p for p in problems), problems


def test_self_tls_is_for_plain_api_stacks_only():
    data = {**copy.deepcopy(GOOD), "contract": "static", "tls": True,
            "self_tls": {"terminator": "nginx"}}  # fmt: skip
    assert any("[self_tls] is for api stacks" in p for p in manifests.validate_data(data))
    assert manifests.validate_data({**GOOD, "self_tls": {"terminator": "Kestrel"}}) == []


def test_the_kestrel_stacks_declare_self_tls_and_check_chooses_them():
    for name in ("aspnetcore", "aspnetcore-mvc"):
        manifest = manifests.load(name)
        assert manifest.self_tls_terminator == "Kestrel" and not manifest.tls
        assert manifest.provenance()["self_tls_terminator"] == "Kestrel"
    assert manifests.load("gin").self_tls_terminator is None
    assert resolve("smoke", env={"FRONT": "self"}).front == "self"


def test_check_passes_over_the_stacks_own_tls(self_tls_stack, tmp_path, monkeypatch):
    monkeypatch.delenv(PORTS_VARIABLE, raising=False)  # the server listens on the manifest's port
    runner = front.wrap(NativeRunner(), "self", tmp_path / "unused", tmp_path / "tls")
    outcome = check_stack(runner, self_tls_stack, log=lambda line: None)
    assert outcome.status == "passed", (outcome.reason, outcome.failures)
    assert outcome.failed == 0 and outcome.passed > 90
    versions = runner.versions(self_tls_stack)
    assert versions["tls_terminator"] == TERMINATOR
    assert versions["front"] == f"none (the stack terminates TLS: {TERMINATOR})"

    server = runner.start(self_tls_stack, Limits(cpus=(0,)))
    try:
        server.wait_ready(30)
        assert server.base_url == f"https://127.0.0.1:{self_tls_stack.port}"
        assert server.tls_cert == tmp_path / "tls" / "cert.pem"
        # The stack's own process group: nothing stands between the client and it.
        assert not hasattr(server, "front") and server.pids()
        assert alpn(server.port, server.tls_cert, ["http/1.1"]) in ("http/1.1", None)
        assert server.stop() == 0
        assert group_pids(server.process.pid) == []
    finally:
        server.kill()


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk not installed")
def test_bench_records_the_stack_as_its_tls_terminator(self_tls_stack, tmp_path):
    # The stand-in alone with FRONT=self (the ceiling still runs).
    results = tmp_path / "results"
    result = bench_over([self_tls_stack], results, "--front", "self", "--scenarios", "workday",
                        "--connections", "4", "--duration", "1")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (run,) = [p for p in results.iterdir() if p.is_dir()]
    info = json.loads((run / "run.json").read_text())
    name = self_tls_stack.name
    assert info["knobs"]["front"] == "self"
    assert info["front"] == {
        "kind": "self", "version": front.SELF_VERSION, "terminators": {name: TERMINATOR}
    }
    assert info["runtime_versions"][name]["tls_terminator"] == TERMINATOR
    records = read_records(run / "results.jsonl")
    measured = [r for r in records if r["kind"] == "measurement" and not r["ceiling"]]
    assert measured, records
    for record in measured:
        assert record["status"] == "ok" and record["result"]["errors_total"] == 0, record
        assert record["front"] == "self", record
        assert any(str(a).startswith("https://127.0.0.1:") for a in record["result"]["command"])
    summary = (run / "summary.md").read_text()
    assert f"TLS terminated by {TERMINATOR} ({name})" in summary


@pytest.mark.skipif(
    shutil.which("wrk") is None or shutil.which("h2load") is None, reason="wrk or h2load missing"
)
def test_an_https_variant_runs_among_plain_stacks_with_tls_tool(self_tls_stack, tmp_path):
    # The 2019 run's shape: the same stack in plain HTTP (TOOL) and as its own
    # HTTPS server (TLS_TOOL), in the same rounds of one run.
    https = replace(self_tls_stack, name=f"{self_tls_stack.name}@https", variant="https",
                    tls=True)  # fmt: skip
    results = tmp_path / "results"
    try:
        result = bench_over([self_tls_stack, https], results, "--tool", "wrk", "--tls-tool",
                            "h2load", "--scenarios", "workday", "--connections", "4",
                            "--duration", "1")  # fmt: skip
    finally:
        shutil.rmtree(https.build_dir, ignore_errors=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (run,) = [p for p in results.iterdir() if p.is_dir()]
    info = json.loads((run / "run.json").read_text())
    assert info["knobs"]["front"] == "none" and info["knobs"]["tls_tool"] == "h2load"
    assert info["front"] == {"kind": "none", "terminators": {https.name: TERMINATOR}}
    records = read_records(run / "results.jsonl")
    measured = {r["stack"]: r for r in records if r["kind"] == "measurement" and not r["ceiling"]}
    plain, own = measured[self_tls_stack.name], measured[https.name]
    for record in (plain, own):
        assert record["status"] == "ok" and record["result"]["errors_total"] == 0, record
    assert (plain["tool"], plain["front"]) == ("wrk", "none")
    assert (own["tool"], own["front"]) == ("h2load", "self")
    assert any(str(a).startswith("https://127.0.0.1:") for a in own["result"]["command"])
    assert not any(str(a).startswith("https:") for a in plain["result"]["command"])
    summary = (run / "summary.md").read_text()
    assert f"served over HTTPS by the stack itself: {https.name} (TLS terminated by" in summary


def need_dotnet() -> None:
    if shutil.which("dotnet") is None:
        pytest.skip("dotnet not on PATH (the .NET SDK builds the Kestrel stacks)")


def test_kestrel_serves_tls_and_http2_itself(tmp_path, capsys):
    need_dotnet()
    assert cli.main(["check", "--servers", "aspnetcore", "--front", "self"]) == 0
    out = capsys.readouterr().out
    assert "every stack serves TLS + HTTP/2 itself: Kestrel (aspnetcore)" in out

    manifest = manifests.load("aspnetcore")
    runner = front.wrap(NativeRunner(), "self", tmp_path / "unused", tmp_path / "tls")
    assert runner.versions(manifest)["tls_terminator"] == "Kestrel"
    server = runner.start(manifest, Limits(cpus=(0,)), port=free_port())
    try:
        server.wait_ready(60)
        assert server.base_url.startswith("https://127.0.0.1:")
        assert alpn(server.port, server.tls_cert, ["h2", "http/1.1"]) == "h2"
        assert alpn(server.port, server.tls_cert, ["http/1.1"]) == "http/1.1"
        if shutil.which("h2load"):
            result = subprocess.run(
                ["h2load", "-n", "40", "-c", "2", server.base_url + "/workday"],
                capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            assert "Application protocol: h2" in result.stdout, result.stdout + result.stderr
            assert "40 succeeded, 0 failed, 0 errored" in result.stdout
        assert server.stop() == 0
        assert group_pids(server.process.pid) == []
    finally:
        server.kill()
