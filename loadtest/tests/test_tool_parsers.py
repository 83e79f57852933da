"""Parsers on real outputs recorded from wrk, ab and oha (see fixtures/capture.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadtest.measure.tools import ab, oha, wrk

FIXTURES = Path(__file__).parent / "fixtures"


def recorded(tool: str, case: str) -> tuple[str, str, int]:
    prefix = FIXTURES / f"{tool}-{case}"
    stderr = prefix.with_name(prefix.name + ".stderr")
    return (
        prefix.with_name(prefix.name + ".stdout").read_text(),
        stderr.read_text() if stderr.exists() else "",
        int(prefix.with_name(prefix.name + ".exit").read_text()),
    )


# ------------------------------------------------------------------------ wrk


def test_wrk_success():
    result = wrk.parse_output(*recorded("wrk", "success"))
    assert result.ok and result.problem == ""
    assert result.requests > 1000
    assert result.rps == pytest.approx(result.requests / result.duration_s)
    assert result.errors_total == 0
    lat = result.latency_ms
    assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99.9"] <= lat["max"]
    # Bytes include headers: more than 1000 body bytes per response.
    assert result.bytes_total / result.requests > 1000
    percents = [p for p, _ in result.latency_curve]
    assert percents == sorted(percents) and 100 not in percents
    assert any("coordinated omission" in note for note in result.notes)


def test_wrk_connection_refused():
    result = wrk.parse_output(*recorded("wrk", "refused"))
    assert not result.ok
    assert "Connection refused" in result.problem
    assert result.requests == 0 and result.rps == 0


def test_wrk_all_timeouts_has_no_bogus_latency():
    stdout, stderr, code = recorded("wrk", "timeout")
    result = wrk.parse_output(stdout, stderr, code)
    assert result.ok  # wrk ran and reported
    assert result.requests == 0
    assert result.latency_ms == {} and result.latency_curve == []
    assert "no responses" in result.problem
    assert "-9223372036854775808" not in stdout.split("SERVERLAB_WRK_JSON")[1]


def test_wrk_non_2xx():
    result = wrk.parse_output(*recorded("wrk", "non2xx"))
    assert result.ok and result.requests > 0
    assert result.errors["non2xx"] == result.requests
    assert result.errors["connect"] == result.errors["timeout"] == 0


def test_wrk_command_whole_second_timeout_and_threads():
    spec = wrk.LoadSpec(url="http://127.0.0.1:1/", connections=2, duration=2.5, timeout=1,
                        threads=4)  # fmt: skip
    command = wrk.Wrk().command(spec)
    assert command[command.index("-t") + 1] == "2"  # never more threads than connections
    assert command[command.index("--timeout") + 1] == "1s"
    assert command[command.index("-d") + 1] == "3s"


# ------------------------------------------------------------------------- ab


def test_ab_success():
    result = ab.parse_output(*recorded("ab", "success"))
    assert result.ok
    assert result.requests == 2000
    assert result.errors_total == 0
    assert result.bytes_total == 2000 * (1000 + 158)  # body + the ceiling's 158 header bytes
    assert result.latency_ms["max"] >= result.latency_ms["p50"]
    assert result.latency_curve[-1][0] == 100.0


def test_ab_connection_refused_counts_no_response():
    result = ab.parse_output(*recorded("ab", "refused"))
    assert result.requests == 0
    assert result.errors_total > 0
    assert result.latency_ms == {}


def test_ab_timeout_aborts_without_report():
    stdout, stderr, code = recorded("ab", "timeout")
    result = ab.parse_output(stdout, stderr, code)
    assert code != 0 and not result.ok
    assert "timeout" in result.problem.lower()
    assert result.errors["timeout"] >= 1


def test_ab_non_2xx():
    result = ab.parse_output(*recorded("ab", "non2xx"))
    assert result.errors["non2xx"] == 2000
    assert result.requests == 2000


def test_ab_command_keepalive_recorded():
    spec = ab.LoadSpec(url="http://127.0.0.1:1/", connections=150, requests=5000, keepalive=False)
    command = ab.Ab().command(spec)
    assert command[:5] == ["ab", "-c", "150", "-l", "-r"]
    assert "-k" not in command and command[command.index("-n") + 1] == "5000"
    assert "-k" in ab.Ab().command(spec.__class__(**{**spec.__dict__, "keepalive": True}))


# ------------------------------------------------------------------------ oha


def test_oha_success():
    result = oha.parse_output(*recorded("oha", "success"))
    assert result.ok
    assert result.requests > 1000
    assert result.errors_total == 0
    assert result.status_counts == {"200": result.requests}
    lat = result.latency_ms
    assert 0 < lat["p50"] <= lat["p99"] <= lat["max"]
    assert any("coordinated omission" in note for note in result.notes)


def test_oha_connection_refused():
    result = oha.parse_output(*recorded("oha", "refused"))
    assert result.requests == 0
    assert result.errors["connect"] > 0


def test_oha_all_timeouts():
    result = oha.parse_output(*recorded("oha", "timeout"))
    assert result.requests == 0
    assert result.errors["timeout"] > 0
    assert not result.latency_ms


def test_oha_non_2xx():
    result = oha.parse_output(*recorded("oha", "non2xx"))
    assert result.requests > 0
    assert result.errors["non2xx"] == result.requests
    assert result.status_counts.get("503") == result.requests


def test_oha_command_open_loop():
    spec = oha.LoadSpec(url="http://127.0.0.1:1/", connections=64, duration=20, rate=5000)
    command = oha.Oha().command(spec)
    for flag in ("--no-tui", "--latency-correction"):
        assert flag in command
    assert command[command.index("-q") + 1] == "5000"
    assert command[command.index("--output-format") + 1] == "json"
    assert "--cacert" not in command


def test_oha_notes_say_whether_the_latency_was_corrected():
    spec = oha.LoadSpec(url="http://127.0.0.1:1/", connections=64, duration=20, rate=5000)
    corrected = oha.Oha().command(spec)
    runs = {
        "corrected": corrected,
        "uncorrected": [arg for arg in corrected if arg != "--latency-correction"],  # lab 5
        "closed": oha.Oha().command(oha.LoadSpec(url="http://127.0.0.1:1/", connections=8)),
    }
    notes = {}
    for name, command in runs.items():
        parsed = oha.parse_output(*recorded("oha", "success"))
        notes[name] = oha.Oha().finish(parsed, spec, command, 0, 1.0, 20.0).notes
    assert oha.NOTE_OPEN in notes["corrected"]
    assert oha.NOTE_UNCORRECTED in notes["uncorrected"] and oha.NOTE_OPEN not in notes["uncorrected"]
    assert oha.NOTE_CLOSED in notes["closed"] and oha.NOTE_OPEN not in notes["closed"]


def test_oha_trusts_the_runs_certificate_for_https():
    spec = oha.LoadSpec(url="https://127.0.0.1:1/", connections=2, ca_cert="/run/cert.pem")
    command = oha.Oha().command(spec)
    assert command[command.index("--cacert") + 1] == "/run/cert.pem"
    assert command[-1] == spec.url


def test_every_tool_sends_the_scenarios_headers():
    headers = (("Accept-Encoding", "br, gzip"),)
    spec = wrk.LoadSpec(url="https://127.0.0.1:1/", connections=2, requests=10, rate=100,
                        headers=headers)  # fmt: skip
    for command in (wrk.Wrk().command(spec), oha.Oha().command(spec), ab.Ab().command(spec)):
        assert command[command.index("-H") + 1] == "Accept-Encoding: br, gzip"
        assert command[-1] == spec.url
