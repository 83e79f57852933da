"""The static-site checker against a real nginx, with the committed configs and broken ones.

nginx runs from servers/nginx-static (its build-site.sh and run.sh, on a free
port, with a certificate made for the test); a broken server is the same
stack with one line of its config removed. Skipped where nginx, its brotli
modules, brotli or openssl are missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from contracts.conformance import static
from contracts.conformance.runner import ServerUnreachable, UsageError
from contracts.tests.conftest import REPO_ROOT
from loadtest.host.ports import free_port
from loadtest.host.tls import self_signed

STACK = REPO_ROOT / "servers" / "nginx-static"
SCRATCH = REPO_ROOT / ".build" / "tests"
BROTLI_MODULE = Path("/usr/lib/nginx/modules/ngx_http_brotli_filter_module.so")
missing = [tool for tool in ("nginx", "openssl", "brotli") if shutil.which(tool) is None]
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(bool(missing), reason=f"not installed: {', '.join(missing)}"),
    pytest.mark.skipif(not BROTLI_MODULE.exists(), reason="libnginx-mod-http-brotli-* missing"),
]
EXPECTED_IDS = [
    "tls-version", "alpn-h2", "alpn-http11", "h2-get",
    "body[/]", "content-type[/]", "content-length[/]",
    "body[/index.html]", "content-type[/index.html]", "content-length[/index.html]",
    "body[/style.css]", "content-type[/style.css]", "content-length[/style.css]",
    "br[/]", "gzip[/]", "br[/style.css]", "gzip[/style.css]",
    "head[/]", "head[/style.css]", "not-found", "keep-alive",
    "conditional-get[/]", "conditional-get[/style.css]",
]  # fmt: skip


class Nginx:
    """servers/nginx-static started by its own run.sh, from a copy whose config may be edited.

    `edits` maps a text found exactly once in the config to its replacement.
    """

    def __init__(self, tmp: Path, tls, config: str = "tuned", edits: dict | None = None) -> None:
        # The copy keeps the layout run.sh expects: servers/<stack> next to _shared.
        self.folder = tmp / "servers" / STACK.name
        shutil.copytree(STACK, self.folder)
        shutil.copytree(STACK.parent / "_shared" / "static", tmp / "servers" / "_shared" / "static")
        template = self.folder / f"nginx-{config}.conf"
        text = template.read_text()
        for old, new in (edits or {}).items():
            assert text.count(old) == 1, f"{old!r} is not in {template} exactly once"
            text = text.replace(old, new)
        template.write_text(text)
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.env = dict(
            os.environ,
            REPO_ROOT=str(REPO_ROOT),
            BUILD_DIR=str(tmp / "build"),
            PORT=str(self.port),
            HOST="127.0.0.1",
            WORKERS="1",
            STATIC_CONFIG=config,
            **tls.env(),
        )
        (tmp / "build").mkdir()
        subprocess.run(
            ["bash", "../_shared/static/build-site.sh"],
            cwd=self.folder, env=self.env, check=True, timeout=60,
        )  # fmt: skip
        self.log = (tmp / "nginx.log").open("w")
        self.process = subprocess.Popen(
            ["bash", "run.sh"],
            cwd=self.folder,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            assert self.process.poll() is None, (tmp / "nginx.log").read_text()
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        self.stop()
        raise AssertionError("nginx did not listen within 15 s")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)
        self.log.close()
        return self.process.returncode


@contextlib.contextmanager
def readable_folder():
    """A folder nginx's www-data workers can read (pytest's tmp_path is private to root)."""
    SCRATCH.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="static-checker-", dir=SCRATCH))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def tuned(tls):
    with readable_folder() as folder:
        server = Nginx(folder, tls)
        yield server
        assert server.stop() == 0, "nginx did not exit cleanly on SIGTERM"


@pytest.fixture
def broken(tls):
    started = []

    def start(config: str, edits: dict) -> Nginx:
        started.append(Nginx(folder, tls, config, edits))
        return started[-1]

    with readable_folder() as folder:
        yield start
        for server in started:
            server.stop()


def by_id(report: dict) -> dict:
    return {check["id"]: check for check in report["checks"]}


def test_tuned_nginx_passes_every_check(tuned, tls):
    report = static.run_static_checks(tuned.url, tls_cert=tls.cert)
    assert [c["id"] for c in report["checks"]] == EXPECTED_IDS
    assert report["failed"] == 0, [c for c in report["checks"] if not c["ok"]]
    # Precompressed files go out with an exact length, not chunked.
    assert report["observed"]["compressed"]["br /"]["framing"] == "content-length"
    assert report["observed"]["tls"]["version"] in ("TLSv1.2", "TLSv1.3")


def test_cli_prints_a_line_per_check_and_json(tuned, tls):
    command = [sys.executable, "-m", "contracts.conformance.static", "--base-url", tuned.url]
    lines = subprocess.run(
        [*command, "--tls", str(tls.cert)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert lines.returncode == 0, lines.stdout + lines.stderr
    assert "PASS alpn-h2  ALPN selected h2" in lines.stdout
    assert lines.stdout.rstrip().endswith("23 passed, 0 failed")
    report = subprocess.run(
        [*command, "--tls", str(tls.cert), "--json"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert json.loads(report.stdout)["passed"] == 23
    untrusted = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert untrusted.returncode == 2
    assert "certificate verify failed" in untrusted.stderr


def test_a_changed_site_fails_the_body_checks(tuned, tls, tmp_path):
    for name in ("index.html", "style.css"):
        shutil.copy(REPO_ROOT / "contracts" / "static" / name, tmp_path / name)
    (tmp_path / "style.css").write_bytes((tmp_path / "style.css").read_bytes() + b"\n")
    checks = by_id(static.run_static_checks(tuned.url, tls_cert=tls.cert, site_dir=tmp_path))
    assert checks["body[/]"]["ok"]
    assert not checks["body[/style.css]"]["ok"]
    assert "differs from contracts/static/style.css" in checks["body[/style.css]"]["detail"]
    assert not checks["br[/style.css]"]["ok"] and not checks["gzip[/style.css]"]["ok"]


def test_stock_without_brotli_fails_the_br_checks(broken, tls):
    server = broken("stock", {"brotli on;": ""})
    checks = by_id(static.run_static_checks(server.url, tls_cert=tls.cert))
    assert not checks["br[/]"]["ok"]
    assert "answered with Content-Encoding gzip" not in checks["br[/]"]["detail"]
    assert "Content-Encoding identity" in checks["br[/]"]["detail"]
    assert checks["gzip[/]"]["ok"], checks["gzip[/]"]
    assert [c["id"] for c in static.run_static_checks(server.url, tls_cert=tls.cert)["checks"]
            if not c["ok"]] == ["br[/]", "br[/style.css]"]  # fmt: skip


def test_missing_vary_and_charset_are_caught(broken, tls):
    server = broken("stock", {"gzip_vary on;": "", "charset utf-8;": ""})
    checks = by_id(static.run_static_checks(server.url, tls_cert=tls.cert))
    assert not checks["content-type[/]"]["ok"]
    assert "lacks charset=utf-8" in checks["content-type[/]"]["detail"]
    assert checks["content-type[/style.css]"]["ok"]
    assert not checks["gzip[/]"]["ok"]
    assert "without 'Vary: Accept-Encoding'" in checks["gzip[/]"]["detail"]


def test_one_request_per_http2_connection_fails_h2_get(broken, tls):
    server = broken("tuned", {"keepalive_requests 1000;": "keepalive_requests 1;"})
    checks = by_id(static.run_static_checks(server.url, tls_cert=tls.cert))
    assert not checks["h2-get"]["ok"]
    assert "GOAWAY" in checks["h2-get"]["detail"] or "closed" in checks["h2-get"]["detail"]
    assert not checks["keep-alive"]["ok"]


def test_http11_only_server_fails_alpn_h2(broken, tls):
    server = broken("tuned", {"ssl http2 reuseport": "ssl reuseport"})
    checks = by_id(static.run_static_checks(server.url, tls_cert=tls.cert))
    assert not checks["alpn-h2"]["ok"]
    assert "selected 'http/1.1'" in checks["alpn-h2"]["detail"]
    assert checks["alpn-http11"]["ok"]


def wait_listening(port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


def test_a_server_accepting_tls11_fails_tls_version(tls, tmp_path):
    port = free_port()
    server = subprocess.Popen(
        ["openssl", "s_server", "-accept", str(port), "-cert", str(tls.cert), "-key", str(tls.key),
         "-cipher", "DEFAULT:@SECLEVEL=0", "-min_protocol", "TLSv1.1", "-www", "-quiet"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_listening(port)
        site = static.make_site(f"https://127.0.0.1:{port}", tls.cert, 5.0, None)
        with pytest.raises(static.Failure, match="accepted a TLSv1.1 handshake"):
            static.check_tls_version(site, {})
    finally:
        server.terminate()
        server.wait(5)


def test_usage_errors_and_unreachable(tls):
    with pytest.raises(UsageError, match="must start with https"):
        static.run_static_checks(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(ServerUnreachable, match="connection refused|cannot connect"):
        static.run_static_checks(f"https://127.0.0.1:{free_port()}", tls_cert=tls.cert)


def test_brotli_checks_skip_without_the_module(tuned, tls, monkeypatch):
    monkeypatch.setattr(static, "brotli", None)
    report = static.run_static_checks(tuned.url, tls_cert=tls.cert)
    skipped = [c["id"] for c in report["checks"] if c.get("skipped")]
    assert skipped == ["br[/]", "br[/style.css]"]
    assert by_id(report)["h2-get"]["ok"], "without brotli h2-get asks for gzip only"
    assert report["failed"] == 0 and report["skipped"] == 2
    assert "brotli module is not installed" in by_id(report)["br[/]"]["detail"]
