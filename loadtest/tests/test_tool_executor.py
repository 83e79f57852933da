"""The executor hook of the load-tool adapters: `Tool.run(spec, raw, executor)`.

The same adapter runs on this host (`HOST`, the default) or wherever an
executor says, as the Docker runner's loadgen container does. Here a real
executor runs wrk as a subprocess from a relocated copy of the harness files
(as the loadgen image holds them under /opt/serverlab), against a real HTTP
server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from loadtest.core.manifest import REPO_ROOT
from loadtest.host.ports import free_port
from loadtest.measure.tools import HOST, LoadSpec, ToolError, get_tool
from loadtest.measure.tools.base import Tool
from loadtest.measure.tools.wrk import LUA_SCRIPT

pytestmark = pytest.mark.e2e

needs_wrk = pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk not installed")


class Hello(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Head and body leave in two writes: without this, each keep-alive response
    # would wait for the client's delayed ACK (~40 ms).
    disable_nagle_algorithm = True

    def do_GET(self):  # noqa: N802 (http.server's naming)
        body = b"hello"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def hello_server() -> Iterator[str]:
    """A small HTTP server on 127.0.0.1 answering "hello"; yields its URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", free_port()), Hello)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def server():
    with hello_server() as url:
        yield url


class RelocatedExecutor:
    """Runs tools by name from PATH, with repository paths mapped to a copy of
    the harness files under `root`, like the loadgen container."""

    where = "relocated-copy"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.calls: list[list[str]] = []
        lua = root / LUA_SCRIPT.relative_to(REPO_ROOT)
        lua.parent.mkdir(parents=True)
        shutil.copy(LUA_SCRIPT, lua)

    def binary(self, tool: Tool) -> str:
        if shutil.which(tool.binary) is None:
            raise ToolError(f"{tool.binary} not in this executor")
        return tool.binary

    def argv(self, command, cpus):
        root = str(REPO_ROOT)
        return [str(self.root) + a[len(root) :] if a.startswith(root + "/") else a for a in command]

    def run_tool(self, command, raw_prefix, timeout_s, cpus=None, priority=0):
        argv = self.argv(command, cpus)
        self.calls.append(argv)
        raw_prefix.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        wall = time.monotonic() - started
        raw_prefix.with_name(raw_prefix.name + ".stdout").write_text(done.stdout)
        return done.returncode, done.stdout, done.stderr, 0.0, wall


@needs_wrk
def test_wrk_runs_through_another_executor(server, tmp_path):
    executor = RelocatedExecutor(tmp_path / "harness")
    spec = LoadSpec(url=server, connections=4, duration=1, timeout=2, threads=1)
    result = get_tool("wrk").run(spec, tmp_path / "raw" / "wrk", executor)
    assert result.ok and result.requests > 0, result.problem
    assert len(executor.calls) == 1
    argv = executor.calls[0]
    assert argv[0] == "wrk"  # the executor's own program, not this host's path
    lua = argv[argv.index("-s") + 1]
    assert lua == str(tmp_path / "harness" / "loadtest" / "measure" / "tools" / "wrk_report.lua")
    assert result.command == argv  # the record says what really ran
    assert (tmp_path / "raw" / "wrk.stdout").read_text().startswith("Running")


@needs_wrk
def test_host_is_the_default_executor(server, tmp_path):
    spec = LoadSpec(url=server, connections=4, duration=1, timeout=2, threads=1)
    result = get_tool("wrk").run(spec, tmp_path / "wrk")
    assert result.ok and result.requests > 0, result.problem
    assert result.command[0] == shutil.which("wrk")
    assert result.command[result.command.index("-s") + 1] == str(LUA_SCRIPT)
    assert result.tool_cpu_s > 0  # from the kernel's rusage, on this host
    assert HOST.where == "host"


def test_a_missing_tool_is_reported_by_the_executor(tmp_path):
    class Missing(Tool):
        name = "missing"
        binary = "serverlab-no-such-load-tool"

        def command(self, spec):
            return [self.binary, spec.url]

    spec = LoadSpec(url="http://127.0.0.1:9/", connections=1)
    with pytest.raises(ToolError, match="serverlab-no-such-load-tool not found"):
        Missing().run(spec, tmp_path / "missing")
    with pytest.raises(ToolError, match="not in this executor"):
        Missing().run(spec, tmp_path / "missing", RelocatedExecutor(tmp_path / "harness"))
