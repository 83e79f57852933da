"""Time to first byte against a real local HTTPS server (nginx, HTTP/2 and HTTP/1.1)."""

from __future__ import annotations

import os
import ssl

import pytest

from contracts.conformance import h2wire
from loadtest.host.ports import free_port
from loadtest.measure import ttfb
from loadtest.runners.calibration import nginx_path
from loadtest.tests.tls_nginx import TlsNginx

PAGE = (("Accept-Encoding", "br, gzip"),)
needs_nginx = pytest.mark.skipif(nginx_path() is None, reason="nginx not installed")


@pytest.fixture(scope="module")
def nginx(tmp_path_factory):
    with TlsNginx(tmp_path_factory.mktemp("tls-nginx")) as server:
        yield server


@needs_nginx
def test_measure_over_h2_in_a_pinned_child(nginx, tmp_path):
    cpus = tuple(sorted(os.sched_getaffinity(0)))[-1:]
    fields = ttfb.measure(nginx.base_url + "/", nginx.tls_cert, tmp_path / "ttfb", samples=15,
                          headers=PAGE, cpus=cpus)  # fmt: skip
    assert fields["ttfb_samples"] == 15 and fields["ttfb_errors"] == 0
    assert fields["ttfb_protocol"] == "h2" and fields["ttfb_statuses"] == [200]
    assert 0 < fields["ttfb_min_ms"] <= fields["ttfb_p50_ms"] <= fields["ttfb_p90_ms"]
    assert fields["ttfb_p90_ms"] <= fields["ttfb_p99_ms"] <= fields["ttfb_max_ms"]
    # Every sample did a full handshake: it costs more than the TCP connect.
    assert fields["ttfb_handshake_p50_ms"] > fields["ttfb_connect_p50_ms"] > 0
    parts = sum(fields[f"ttfb_{p}_mean_ms"] for p in ("connect", "handshake", "wait"))
    assert parts == pytest.approx(fields["ttfb_mean_ms"], rel=0.01)
    assert [p for p, _ in fields["ttfb_curve"]][-1] == 100
    assert (tmp_path / "ttfb.stdout").is_file()  # the raw samples are kept


@needs_nginx
def test_one_sample_over_http1_and_the_status_of_h2_answers(nginx):
    context = ssl.create_default_context(cafile=str(nginx.tls_cert))
    context.set_alpn_protocols(["http/1.1"])
    one = ttfb.sample("127.0.0.1", nginx.port, "/", context, list(PAGE))
    assert one.protocol == "http/1.1" and one.status == 200
    missing = ttfb.sample("127.0.0.1", nginx.port, "/nope", ttfb.client_context(nginx.tls_cert), [])
    assert missing.protocol == "h2" and missing.status == 404


@needs_nginx
def test_a_certificate_other_than_the_servers_is_refused(nginx, tmp_path):
    from loadtest.host.tls import self_signed

    other = self_signed(tmp_path / "other")
    data = ttfb.run_samples(nginx.base_url + "/", other.cert, 2, [], 2.0)
    assert not data["samples"] and len(data["errors"]) == 2
    assert data["errors"][0].startswith("handshake")


def test_refused_connections_are_errors_not_samples():
    data = ttfb.run_samples(f"http://127.0.0.1:{free_port()}/", None, 3, [], 1.0)
    fields = ttfb.summarize(data)
    assert fields["ttfb_samples"] == 0 and fields["ttfb_errors"] == 3
    assert fields["ttfb_problem"].startswith("connect")


def test_https_without_a_certificate_is_refused_clearly():
    with pytest.raises(ttfb.TtfbError, match="certificate"):
        ttfb.run_samples("https://127.0.0.1:1/", None, 1, [], 1.0)


def test_summary_percentiles_by_nearest_rank():
    samples = [
        {"connect_ms": 0.1, "handshake_ms": 1.0, "wait_ms": float(i), "ttfb_ms": 1.1 + i,
         "protocol": "h2", "status": 200}
        for i in range(1, 101)
    ]  # fmt: skip
    fields = ttfb.summarize({"samples": samples, "errors": []})
    assert fields["ttfb_p50_ms"] == pytest.approx(51.1)
    assert fields["ttfb_p99_ms"] == pytest.approx(100.1)
    assert fields["ttfb_wait_p50_ms"] == 50 and fields["ttfb_handshake_mean_ms"] == 1.0


def test_hpack_integer_encoding():
    assert h2wire.hpack_int(10, 5) == b"\x0a"
    assert h2wire.hpack_int(1337, 5) == bytes([31, 154, 10])  # RFC 7541 C.1.2
    block = h2wire.hpack_literals([("Accept-Encoding", "br")])
    assert block == b"\x00\x0faccept-encoding\x02br"
