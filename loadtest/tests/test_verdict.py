"""The verdict of every row of a real run, and each cause on the figures that show it.

The quick run kept in docs/measurements/20261122-072106-quick was measured on
the reference machine before the verdict existed; its figures are judged here
the way a new run is judged, so the thresholds are tested on recorded numbers.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from loadtest.core import verdict
from loadtest.core.verdict import Figures, judge

QUICK = Path(__file__).resolve().parents[2] / "docs/measurements/20261122-072106-quick/summary.csv"


def recorded(stack: str, scenario: str, connections: int) -> dict:
    with QUICK.open() as handle:
        for row in csv.DictReader(handle):
            if (row["stack"], row["scenario"], row["connections"]) == (
                stack,
                scenario,
                str(connections),
            ):
                return row
    raise LookupError((stack, scenario, connections))


def figures(row: dict, **override) -> Figures:
    values = dict(
        rps=float(row["rps_median"]),
        connections=int(row["connections"]),
        mean_latency_ms=float(row["latency_mean_ms"]),
        server_cpu_pct=float(row["server_cpu_mean_pct"]),
        server_capacity=1,
        tool_share=float(row["tool_cpu_pct"]) / 100,
        errors=int(row["errors_total"]),
        requests=int(row["requests"]),
        tool=row["tool"],
    )
    values.update(override)
    return Figures(**values)


@pytest.mark.parametrize(
    ("stack", "scenario", "connections"),
    [("bjoern", "hello", 16), ("spring-webflux", "kb10", 16), ("gunicorn", "workday", 128),
     ("uwsgi", "kb100", 128), ("flask-pypy", "hello", 16)],
)  # fmt: skip
def test_a_busy_server_is_server_bound(stack, scenario, connections):
    # flask-pypy's cold 756 req/s was server-bound too: the JIT, not the
    # verdict, explains it (the steady-state warm-up is what fixes that figure).
    assert judge(figures(recorded(stack, scenario, connections))).verdict == "server-bound"


@pytest.mark.parametrize(("scenario", "connections"), [("hello", 16), ("kb100", 128)])
def test_the_ceiling_was_client_bound(scenario, connections):
    row = recorded("ceiling", scenario, connections)
    assert judge(figures(row)).verdict == "client-bound"


@pytest.mark.parametrize(("scenario", "connections"), [("kb10", 16), ("kb10", 128), ("kb100", 16)])
def test_uwsgi_large_bodies_were_a_delayed_ack_stall(scenario, connections):
    # 366 req/s at 16 connections, 43 ms mean, server at 8% and wrk at 2%.
    found = judge(figures(recorded("uwsgi", scenario, connections)))
    assert (found.verdict, found.cause) == ("neither", "delayed-ack")
    assert "40 ms" in found.detail
    assert found.little_ratio == pytest.approx(1.0, abs=0.1)


def test_every_row_of_the_recorded_run_gets_a_verdict_and_a_neither_names_its_cause():
    with QUICK.open() as handle:
        rows = list(csv.DictReader(handle))
    found = [judge(figures(r)) for r in rows]
    assert all(v.verdict in verdict.VERDICTS for v in found)
    neither = [v for v in found if v.verdict == "neither"]
    assert neither and all(v.cause in verdict.CAUSES and v.cause != "unknown" for v in neither)
    # Limited by neither side in that run: uwsgi's stalls, and two figures set by
    # failures: apache-static at 128 connections (4,437 errors in 5,212 requests,
    # wrk busy re-handshaking) and cold flask-pypy (48 timeouts in 3,834).
    causes = {(r["stack"], r["scenario"], v.cause) for r, v in zip(rows, found)
              if v.verdict == "neither"}  # fmt: skip
    assert causes <= {("uwsgi", "kb10", "delayed-ack"), ("uwsgi", "kb100", "delayed-ack"),
                      ("apache-static", "page", "errors"), ("flask-pypy", "hello", "errors")}


def test_a_quota_is_the_capacity():
    capped = Figures(rps=5000, connections=8, mean_latency_ms=1.6, server_cpu_pct=24,
                     server_capacity=0.25, tool_share=0.1)  # fmt: skip
    assert judge(capped).verdict == "server-bound"
    assert judge(Figures(**{**capped.__dict__, "server_capacity": 1.0})).verdict == "neither"


def test_busy_cores_count_when_no_other_process_explains_them():
    # nginx at 81% of its core while the core was 97% busy (loopback softirq work).
    base = dict(rps=108653, connections=128, mean_latency_ms=0.63, server_cpu_pct=81,
                server_capacity=1, tool_share=0.80, server_cores_busy_pct=97)  # fmt: skip
    assert judge(Figures(**base, foreign_pct=3)).verdict == "server-bound"
    assert judge(Figures(**base, foreign_pct=40)).verdict == "neither"


def test_errors_idle_connections_and_tool_counts():
    errors = Figures(rps=800, connections=64, mean_latency_ms=2, server_cpu_pct=20,
                     server_capacity=1, tool_share=0.2, errors=500, requests=2400)  # fmt: skip
    assert judge(errors).cause == "errors"
    # apache-static at 128 connections over TLS (run 20261125-041511-quick): the server
    # closed 12% of its connections; wrk, re-handshaking, used 98% of its core.
    reconnecting = Figures(rps=8468, connections=128, mean_latency_ms=6.8, server_cpu_pct=98,
                           server_capacity=1, tool_share=0.98, errors=2061, requests=16985)  # fmt: skip
    assert (judge(reconnecting).verdict, judge(reconnecting).cause) == ("neither", "errors")
    # 1,000 req/s x 2 ms = 2 connections in service of 64: the rest were idle.
    idle = Figures(rps=1000, connections=64, mean_latency_ms=2, server_cpu_pct=20,
                   server_capacity=1, tool_share=0.2)  # fmt: skip
    assert judge(idle).cause == "idle-connections"
    assert "2.0 of 64" in judge(idle).detail
    # 10,000 req/s x 10 ms = 100 in service with 16 open: impossible, unless the
    # mean holds wrk's back-filled latencies.
    counts = Figures(rps=10000, connections=16, mean_latency_ms=10, server_cpu_pct=20,
                     server_capacity=1, tool_share=0.2, tool="h2load")  # fmt: skip
    assert judge(counts).cause == "tool-counts"
    assert judge(Figures(**{**counts.__dict__, "tool": "wrk"})).cause == "waiting"


def test_waiting_concurrency_and_offered_rate():
    waiting = Figures(rps=1600, connections=16, mean_latency_ms=10, server_cpu_pct=15,
                      server_capacity=1, tool_share=0.05)  # fmt: skip
    assert judge(waiting).cause == "waiting"
    one = Figures(rps=9000, connections=1, mean_latency_ms=0.11, server_cpu_pct=45,
                  server_capacity=1, tool_share=0.4)  # fmt: skip
    assert judge(one).cause == "concurrency"
    paced = Figures(rps=995, connections=10, mean_latency_ms=0.3, server_cpu_pct=5,
                    server_capacity=1, tool_share=0.02, closed_loop=False, offered_rate=1000)  # fmt: skip
    assert (judge(paced).verdict, judge(paced).cause) == ("neither", "offered-rate")


@pytest.mark.parametrize(("mean", "expected"), [(40, True), (44, True), (81, True), (62, False),
                                                (25, False), (5, False), (None, False)])  # fmt: skip
def test_near_delayed_ack(mean, expected):
    assert verdict.near_delayed_ack(mean) is expected
