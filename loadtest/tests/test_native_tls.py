"""HTTPS stacks in the native runner: certificate, TLS env, https base_url, readiness over TLS.

Runs servers/nginx-static (default and @stock) for real on free ports, then
checks each through loadtest.runners.conformance's choice of checker. Skipped where nginx
or its brotli modules are missing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from loadtest.core import manifest as manifests
from loadtest.core.runner import Limits
from loadtest.host import tls
from loadtest.host.ports import free_port
from loadtest.runners.conformance import conformance_command, run_conformance
from loadtest.runners.native import NativeRunner
from loadtest.testing import STATIC_STACK_SERVER_HEADERS

pytestmark = pytest.mark.e2e

NGINX_BROTLI = Path("/usr/lib/nginx/modules/ngx_http_brotli_static_module.so")
HTTPD_BROTLI = Path("/usr/lib/apache2/modules/mod_brotli.so")


@pytest.mark.parametrize(("stack", "server_header"), STATIC_STACK_SERVER_HEADERS)
def test_static_tls_stack_runs_natively_and_passes(stack, server_header, tmp_path):
    runner = NativeRunner(tls_folder=tmp_path / "tls")
    manifest = manifests.load(stack)
    reason = runner.unavailable_reason(manifest)
    if reason or not (NGINX_BROTLI if "nginx" in stack else HTTPD_BROTLI).exists():
        pytest.skip(reason or "brotli module not installed")
    runner.build(manifest)
    port = free_port()
    server = runner.start(manifest, Limits(cpus=(0,)), port)
    try:
        server.wait_ready(30)
        assert server.base_url == f"https://127.0.0.1:{port}"
        assert server.tls_cert == tmp_path / "tls" / "cert.pem"
        report = run_conformance(manifest, server.base_url, tls_cert=server.tls_cert)
        assert report["failed"] == 0, [c for c in report["checks"] if not c["ok"]]
        assert report["passed"] == 23
        # The stock variant really runs the stock config (its Server header names the version).
        assert report["observed"]["server_header"] == server_header
        assert server.stop() == 0
    finally:
        server.kill()


def test_variant_env_reaches_the_stack():
    stock = manifests.load("nginx-static@stock")
    assert manifests.stack_env(stock)["STATIC_CONFIG"] == "stock"
    assert "STATIC_CONFIG" not in manifests.stack_env(manifests.load("nginx-static")) or (
        manifests.stack_env(manifests.load("nginx-static"))["STATIC_CONFIG"] != "stock"
    )
    assert stock.build_dir.name == "nginx-static@stock"


def test_checker_follows_the_contract_and_tls(tmp_path):
    static = conformance_command(manifests.load("nginx-static"), "https://127.0.0.1:1", tmp_path)
    assert static[1:3] == ["-m", "contracts.conformance.static"]
    assert static[-3:] == ["--tls", str(tmp_path), "--json"]
    api = conformance_command(manifests.load("gin"), "http://127.0.0.1:1")
    assert api[1:3] == ["-m", "contracts.conformance"] and "--tls" not in api
    assert api[api.index("--display-name") + 1] == "Go gin"


def test_bench_accepts_variant_ids_and_defaults_to_plain_stacks(tmp_path):
    from types import SimpleNamespace

    from rich.console import Console

    from loadtest.bench import run as bench
    from loadtest.core.knobs import KnobError

    def stacks(servers: list[str]) -> list[str]:
        knobs = SimpleNamespace(servers=servers, servers_from_profile=False, priority=0)
        return bench.Bench(knobs, tmp_path, Console()).stacks()

    assert stacks(["nginx-static@stock", "gin"]) == ["nginx-static@stock", "gin"]
    assert "@" not in "".join(stacks([])) and "nginx-static" in stacks([])
    with pytest.raises(KnobError, match="nginx-static@fast"):
        stacks(["nginx-static@fast"])


def test_a_cached_ca_certificate_is_replaced_by_a_server_certificate(tmp_path):
    """Certificates made before they were marked CA:FALSE are not reused."""
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "30", "-subj", "/CN=localhost",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-keyout", str(tmp_path / "key.pem"), "-out", str(tmp_path / "cert.pem")],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    old = (tmp_path / "cert.pem").read_bytes()
    files = tls.self_signed(tmp_path)
    assert files.cert.read_bytes() != old
    assert tls.self_signed(tmp_path).cert.read_bytes() == files.cert.read_bytes()  # reused now
