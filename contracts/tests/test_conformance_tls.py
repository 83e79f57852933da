"""The checker over HTTPS: `--tls CERT` trusts a self-signed test certificate.

A TLS front (nginx or Apache httpd) or an HTTPS stack must pass the same
contract as a plain one; here the reference server serves HTTPS with a
certificate made for the test by openssl.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from contracts.conformance import ServerUnreachable, UsageError, run_checks
from contracts.tests.conftest import DISPLAY_NAME, expected_ids
from contracts.tests.reference_server import ReferenceServer
from contracts.tests.test_conformance_run import run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not found")]


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


@pytest.fixture(scope="module")
def https_reference(certificate):
    with ReferenceServer(DISPLAY_NAME, tls=certificate) as server:
        yield server


def test_every_check_passes_over_tls(https_reference, certificate):
    assert https_reference.url.startswith("https://127.0.0.1:")
    report = run_checks(https_reference.url, DISPLAY_NAME, tls_cert=certificate[0])
    assert [c["id"] for c in report["checks"]] == expected_ids()
    assert report["failed"] == 0, [c for c in report["checks"] if not c["ok"]]


def test_cli_tls_flag(https_reference, certificate):
    result = run_cli(
        "--base-url", https_reference.url, "--display-name", DISPLAY_NAME,
        "--tls", str(certificate[0]), "--only", "hello",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS hello-body" in result.stdout


def test_untrusted_certificate_is_a_clear_error(https_reference):
    with pytest.raises(ServerUnreachable, match="certificate verify failed"):
        run_checks(https_reference.url, DISPLAY_NAME, only=["hello"])


def test_tls_flag_needs_https_and_a_certificate_file(https_reference, certificate, tmp_path):
    plain = https_reference.url.replace("https://", "http://")
    with pytest.raises(UsageError, match="needs an https"):
        run_checks(plain, DISPLAY_NAME, tls_cert=certificate[0])
    with pytest.raises(UsageError, match="no certificate file"):
        run_checks(https_reference.url, DISPLAY_NAME, tls_cert=tmp_path / "absent.pem")
