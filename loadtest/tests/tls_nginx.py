"""A throw-away HTTPS nginx (HTTP/2 and HTTP/1.1 via ALPN) for tests and fixtures.

Debian's nginx with a run-time self-signed certificate (loadtest.host.tls) serving
a generated HTML page of about 30 KB with gzip, a fixed 503 at /unavailable
and 404 elsewhere, on 127.0.0.1 and a free port. It stands in for the static
stacks where a test needs a real TLS server without building one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path

import psutil

from loadtest.host.cgroups import CgroupLimits
from loadtest.host.ports import free_port
from loadtest.host.tls import self_signed
from loadtest.runners.calibration import nginx_path

CONFIG = """\
daemon off;
{user}
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    server_tokens off;
    client_body_temp_path {folder}/tmp;
    types {{ text/html html; }}
    default_type text/plain;
    gzip {gzip};
    gzip_types text/html;
    # h2load does not reconnect after an HTTP/2 GOAWAY: no per-connection request limit.
    keepalive_requests {keepalive_requests};
    server {{
        listen 127.0.0.1:{port} ssl http2;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        root {folder}/www;
        index index.html;
        location = /unavailable {{ return 503 "unavailable\\n"; }}
    }}
}}
"""


def page(size: int = 30_000) -> str:
    """An HTML page of about `size` bytes that compresses like real text."""
    words = "static site served over https with http2 and compression".split()
    parts = ["<!DOCTYPE html><html lang=en><head><title>test</title></head><body>"]
    i = 0
    while sum(map(len, parts)) < size:
        parts.append(f"<p id=p{i}>" + " ".join(words[(i + j) % len(words)] for j in range(12)))
        i += 1
    parts.append("</body></html>\n")
    return "\n".join(parts)


class TlsNginx:
    def __init__(
        self, folder: Path, cpus: tuple[int, ...] | None = None,
        keepalive_requests: int = 100_000_000, cpu_quota: float | None = None,
        gzip: bool = True,
    ):  # fmt: skip
        self.folder = folder.resolve()
        (self.folder / "www").mkdir(parents=True, exist_ok=True)
        (self.folder / "tmp").mkdir(exist_ok=True)
        (self.folder / "www" / "index.html").write_text(page())
        tls = self_signed(self.folder / "tls")
        self.tls_cert = tls.cert
        self.port = free_port()
        self.base_url = f"https://127.0.0.1:{self.port}"
        config = self.folder / "nginx.conf"
        config.write_text(
            CONFIG.format(
                folder=self.folder,
                port=self.port,
                cert=tls.cert,
                key=tls.key,
                keepalive_requests=keepalive_requests,
                gzip="on" if gzip else "off",
                user="user root;" if os.geteuid() == 0 else "",
            )
        )
        command = [nginx_path(), "-p", str(self.folder), "-c", str(config)]
        if cpus:
            command = ["taskset", "-c", ",".join(map(str, cpus)), *command]
        # A CPU quota as the native runner applies it (raises LimitsUnavailable).
        self.cgroup = CgroupLimits(f"serverlab-test-nginx-{os.getpid()}-{self.port}", cpu_quota)
        self.cgroup.create()
        with (self.folder / "nginx.stderr").open("w") as err:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
                preexec_fn=self.cgroup.enter if self.cgroup.wanted else None,
            )

    def wait_ready(self, timeout: float = 20.0) -> float:
        started = time.monotonic()
        context = ssl.create_default_context(cafile=str(self.tls_cert))
        while time.monotonic() < started + timeout:
            if self.process.poll() is not None:
                raise RuntimeError((self.folder / "nginx.stderr").read_text())
            with contextlib.suppress(OSError):
                with socket.create_connection(("127.0.0.1", self.port), timeout=2) as raw:
                    with context.wrap_socket(raw, server_hostname="localhost"):
                        return time.monotonic() - started
            time.sleep(0.1)
        raise RuntimeError(f"TLS nginx not ready on {self.port} within {timeout} s")

    def pids(self) -> list[int]:
        with contextlib.suppress(psutil.Error):
            parent = psutil.Process(self.process.pid)
            return [parent.pid] + [child.pid for child in parent.children(recursive=True)]
        return []

    def is_alive(self) -> bool:
        return self.process.poll() is None

    def output_tail(self, lines: int = 40) -> str:
        text = ""
        for name in ("nginx.stderr", "error.log"):
            with contextlib.suppress(OSError):
                text += (self.folder / name).read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 15.0) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        finally:
            self.kill()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        time.sleep(0.1)  # let the workers go before the cgroup is removed
        self.cgroup.remove()

    def __enter__(self) -> TlsNginx:
        self.wait_ready()
        return self

    def __exit__(self, *exc_info) -> None:
        self.kill()
