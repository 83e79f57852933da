"""`make bench` on the static-tls path end to end, with HTTPS nginx instances
standing in for the static stacks (no stack builds): h2load over HTTP/2, the
CPU quota and core sweep, TTFB per case, the records and the charts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loadtest.bench.results import read_records
from loadtest.runners import calibration

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(
    calibration.nginx_path() is None or shutil.which("h2load") is None,
    reason="!!! nginx or h2load NOT INSTALLED: the static-tls bench path is not exercised !!!",
)]

# Two stand-in static stacks: HTTPS nginx serving a generated page, with and without gzip.
SCRIPT = """
import argparse, sys, types
from loadtest.bench import run as bench
from loadtest.bench.instance import InstanceRunner
from loadtest.commands import bench as bench_command
from loadtest.bench import plan
from loadtest.tests.tls_nginx import TlsNginx

STACKS = {"tls-gzip": True, "tls-plain": False}
bench.Bench.stacks = lambda self: list(STACKS)
bench.stack_contracts = lambda stacks, manifests: {s: "static" for s in stacks}

def prepare(self, stacks, run_info):
    for name in stacks:
        label = name + " (test nginx)"
        self.manifests[name] = types.SimpleNamespace(display_name=label, label=label, warmup_s=0.0,
                                                     tls=True)
        self.journal.stack(name, "build", "ok", "stand-in")

def verify(self, stack, server, ready_s):
    self.context.journal.stack(stack, "verify", "ok", "stand-in, not verified")

def start_server(self, instance):
    cpus = plan.server_cpus_for(self.context.knobs, instance.cores)
    folder = self.context.folder / "stand-ins" / f"{instance.stack}-{self.context.journal.seq}"
    return TlsNginx(folder, cpus=cpus, cpu_quota=instance.quota, gzip=STACKS[instance.stack])

bench.Bench.prepare = prepare
InstanceRunner.verify = verify
InstanceRunner.start_server = start_server
parser = argparse.ArgumentParser()
bench_command.register(parser.add_subparsers())
sys.exit(bench_command.cmd_bench(parser.parse_args(["bench", *sys.argv[1:]])))
"""


def bench(results: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", SCRIPT, "--results-dir", str(results), *args]
    env = dict(os.environ, SEED="", DURATION="", PROFILE="", SERVERS="", RUNNER="native")
    return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
                          env=env)  # fmt: skip


def test_static_tls_smoke_profile_end_to_end(tmp_path):
    result = bench(tmp_path, "--profile", "static-tls-smoke", "--seed", "5")
    assert result.returncode == 0, result.stdout + result.stderr
    folder = next(p for p in tmp_path.iterdir() if p.is_dir())
    records = [r for r in read_records(folder / "results.jsonl") if r["kind"] == "measurement"]
    # 2 stacks x 2 quotas x 2 connection levels, no ceiling.
    assert len(records) == 8 and not any(r["ceiling"] for r in records)
    for record in records:
        assert record["status"] == "ok", record["problem"]
        assert record["scenario"] == "page" and record["tool"] == "h2load"
        assert record["front"] == "self"  # the stack terminates TLS, no front before it
        assert record["headers"] == {"Accept-Encoding": "br, gzip"}
        assert record["result"]["requests"] == 300
        assert record["result"]["details"]["protocol"] == "h2"
        assert record["result"]["latency_ms"]["p99"] is not None
        assert record["ttfb_samples"] == 20 and record["ttfb_protocol"] == "h2"
        assert record["ttfb_handshake_p50_ms"] > 0
        assert record["server_cores"] == 1
    assert {r["cpu_share"] for r in records} == {0.5, 1.0}
    assert {r["cpu_quota"] for r in records} == {0.5, None}
    gzip = [r for r in records if r["stack"] == "tls-gzip"]
    plain = [r for r in records if r["stack"] == "tls-plain"]
    per_response = [r["result"]["details"]["body_bytes"] / r["result"]["requests"]
                    for r in (gzip[0], plain[0])]  # fmt: skip
    assert per_response[0] < per_response[1] / 3  # the page went compressed where asked
    charts = {p.name for p in (folder / "charts").glob("*.png")}
    assert {"rps-share-page.png", "cdf-config-page.png", "ttfb-page.png"} <= charts
    page = (folder / "report.html").read_text()
    assert "ttfb-page" in page and "h2load does not verify" in page
    run = json.loads((folder / "run.json").read_text())
    assert run["tools"]["h2load"].startswith("h2load nghttp2/")
    assert list((folder / "raw").glob("*.requests.tsv.gz"))
    assert list((folder / "raw").glob("*-ttfb.stdout"))
    assert "static stacks (tls-gzip, tls-plain): page" in result.stdout
