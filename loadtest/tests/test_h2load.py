"""h2load: the parser on real recorded outputs (fixtures/h2load/capture.py) and a real run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from loadtest.core.stats import nearest_rank
from loadtest.measure.tools import get_tool
from loadtest.measure.tools.base import LoadSpec
from loadtest.measure.tools.h2load import H2load, parse_output

FIXTURES = Path(__file__).parent / "fixtures" / "h2load"
PAGE = (("Accept-Encoding", "br, gzip"),)


def recorded(case: str, with_log: bool = True):
    def read(suffix: str) -> str | None:
        path = FIXTURES / f"{case}.{suffix}"
        return path.read_text() if path.exists() else None

    log = read("requests.tsv") if with_log else None
    return parse_output(read("stdout"), read("stderr") or "", int(read("exit")), log)


def test_success_over_h2_and_tls():
    result = recorded("success")
    assert result.ok and result.problem == ""
    assert result.requests == 2000 and result.errors_total == 0
    assert result.status_counts == {"2xx": 2000}
    assert result.rps == pytest.approx(result.requests / result.duration_s)
    assert result.details["protocol"] == "h2"
    assert result.details["tls_protocol"].startswith("TLSv1.")
    # HPACK compresses the repeated headers; the page itself came gzip-compressed.
    assert 0 < result.details["header_compression_pct"] < 100
    # Total = headers + data + HTTP/2 framing.
    assert result.bytes_total > result.details["header_bytes"] + result.details["body_bytes"]
    assert result.bytes_total / result.requests < 5000  # a ~30 KB page, compressed
    for row in ("connect_ms", "first_byte_ms"):
        figures = result.details[row]
        assert 0 < figures["min"] <= figures["mean"] <= figures["max"]
    # Percentiles from the per-request log, within h2load's own min..max.
    lat = result.latency_ms
    assert lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99.9"] <= lat["max"]
    assert len(result.latency_curve) > 90
    values = [ms for _, ms in result.latency_curve]
    assert values == sorted(values)
    assert any("per-request log" in note for note in result.notes)
    assert any("coordinated omission" in note for note in result.notes)


def test_success_over_http1():
    result = recorded("success-h1")
    assert result.ok and result.requests == 1000 and result.errors_total == 0
    assert result.details["protocol"] == "http/1.1"
    assert result.details["header_compression_pct"] == 0.0


def test_timed_run_without_log_has_no_percentiles():
    result = recorded("success-duration", with_log=False)
    assert result.requests > 0 and result.errors_total == 0
    assert result.duration_s == pytest.approx(1.0)  # -D 1: h2load's req/s is over that
    assert any("in flight at the end" in note for note in result.notes)
    assert result.latency_ms["mean"] > 0 and result.latency_ms["p99"] is None
    assert result.latency_curve == []
    assert any("no per-request log" in note for note in result.notes)


def test_timed_run_with_log_has_percentiles_and_did_not_end_early():
    result = recorded("success-duration")
    assert result.latency_ms["p99"] is not None
    assert result.problem == ""


def test_connection_refused():
    result = recorded("refused")
    assert result.requests == 0 and result.rps == 0
    assert result.errors["connect"] == 100
    assert result.latency_ms == {}
    assert result.problem == "no responses (100 connect errors)"


def test_server_that_never_answers():
    result = recorded("timeout")
    assert result.requests == 0
    # One stream per connection timed out by -N; the other 96 were never sent
    # because their connections had timed out: timeouts too.
    assert result.errors["timeout"] == 100 and result.errors_total == 100
    assert "no responses" in result.problem


def test_timed_run_against_a_server_that_never_answers():
    result = recorded("timeout-duration")
    assert result.requests == 0
    assert result.errors["timeout"] == 4  # unanswered when the run ended
    assert "no responses" in result.problem


def test_h2load_crash_is_a_failed_run_with_its_message():
    result = recorded("crash-duration-inactivity")
    assert not result.ok
    assert "Assertion" in result.problem and "exit code -6" in result.problem


def test_non_2xx():
    result = recorded("non2xx")
    assert result.requests == 500
    assert result.errors["non2xx"] == 500 and result.status_counts == {"5xx": 500}
    assert result.errors_total == 500


def test_goaway_without_reconnect_is_reported():
    result = recorded("goaway")
    assert result.requests == 1000  # nginx's 1000 requests per connection, then GOAWAY
    assert result.errors["read"] == 2000 and result.errors["connect"] == 0
    assert "does not reconnect" in result.problem


def test_timed_run_that_lost_its_connections_is_reported():
    result = recorded("goaway-duration")
    assert result.errors_total == 0  # h2load counts nothing wrong ...
    assert "understated" in result.problem  # ... but the log shows when answers stopped


def test_nearest_rank():
    data = [float(v) for v in range(1, 101)]
    assert nearest_rank(data, 50) == 50 and nearest_rank(data, 99.9) == 100
    assert nearest_rank(data, 1) == 1 and nearest_rank([7.0], 99) == 7.0


def test_command_line():
    spec = LoadSpec(url="https://127.0.0.1:1/", connections=3, requests=5000, threads=4,
                    headers=PAGE, timeout=2)  # fmt: skip
    command = H2load().command(spec, Path("/tmp/x.tsv"))
    assert command[0] == "h2load" and command[-1] == spec.url
    assert command[command.index("-n") + 1] == "5000"
    assert command[command.index("-c") + 1] == "3"
    assert command[command.index("-t") + 1] == "3"  # never more threads than connections
    assert command[command.index("-m") + 1] == "1"
    assert command[command.index("-N") + 1] == "2s"
    assert command[command.index("-H") + 1] == "Accept-Encoding: br, gzip"
    assert command[command.index("--log-file") + 1] == "/tmp/x.tsv"
    assert "--h1" not in command and "-D" not in command
    timed = H2load().command(LoadSpec(url=spec.url, connections=2, duration=2.5, http1=True))
    assert timed[timed.index("-D") + 1] == "3s" and "--h1" in timed
    assert "-N" not in timed and "-n" not in timed


@pytest.mark.skipif(shutil.which("h2load") is None, reason="h2load not installed")
def test_real_run_against_a_tls_nginx(tmp_path):
    from loadtest.tests.tls_nginx import TlsNginx

    with TlsNginx(tmp_path / "site") as nginx:
        spec = LoadSpec(url=nginx.base_url + "/", connections=2, requests=300, headers=PAGE)
        result = get_tool("h2load").run(spec, tmp_path / "raw" / "case")
    assert result.ok and result.requests == 300 and result.errors_total == 0
    assert result.details["protocol"] == "h2"
    assert result.latency_ms["p99"] is not None
    assert (tmp_path / "raw" / "case.stdout").is_file()
    assert (tmp_path / "raw" / "case.requests.tsv.gz").is_file()
    assert not (tmp_path / "raw" / "case.requests.tsv").exists()
    assert result.tool_cpu_s > 0 and result.command[-1] == spec.url


@pytest.mark.skipif(shutil.which("h2load") is None, reason="h2load not installed")
@pytest.mark.parametrize("connections, requests, runs", [(1, 350, 4), (2, 450, 3)])
def test_reconnects_for_a_server_that_ends_connections(tmp_path, connections, requests, runs):
    """nginx with keepalive_requests 100: GOAWAY after 100 requests on each connection."""
    from loadtest.tests.tls_nginx import TlsNginx

    with TlsNginx(tmp_path / "site", keepalive_requests=100) as nginx:
        spec = LoadSpec(url=nginx.base_url + "/", connections=connections, requests=requests,
                        headers=PAGE)  # fmt: skip
        result = get_tool("h2load").run(spec, tmp_path / "raw" / "case")
    assert result.ok and result.requests == requests
    assert result.errors_total == 0 and result.problem == ""
    assert result.details["h2load_runs"] == runs and "never_sent" not in result.details
    assert any("as a browser reconnects" in note for note in result.notes)
    assert result.rps == pytest.approx(result.requests / result.duration_s)
    assert result.latency_ms["min"] <= result.latency_ms["p50"] <= result.latency_ms["max"]
    assert (tmp_path / "raw" / f"case.run{runs}.stdout").is_file()
    assert len(list((tmp_path / "raw").glob("*.requests.tsv.gz"))) == runs
