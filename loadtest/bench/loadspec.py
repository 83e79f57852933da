"""A case as its load tool sees it: the spec of one run, and the name of its raw output."""

from __future__ import annotations

from loadtest.bench.plan import Case
from loadtest.core.knobs import Knobs
from loadtest.measure.tools.base import LoadSpec


def load_spec(
    k: Knobs, priority: int, server, case: Case, rate: float | None = None, duration=None
) -> LoadSpec:
    """The load tool's spec for a case: the knobs, the case, and where the server listens."""
    fixed = case.tool in ("ab", "h2load") and duration is None
    return LoadSpec(
        url=server.base_url + case.path,
        connections=case.connections,
        duration=duration if duration is not None else k.duration,
        timeout=k.timeout,
        threads=k.threads,
        rate=rate,
        requests=k.requests.get(case.scenario) if fixed else None,
        keepalive=k.keepalive,
        client_cpus=k.client_cpus,
        priority=priority,
        headers=case.headers,
        # HTTP/2 here means over TLS (ALPN); no stack speaks cleartext h2c.
        http1=k.http == "1.1" or not server.base_url.startswith("https:"),
        ca_cert=str(server.tls_cert) if getattr(server, "tls_cert", None) else None,
    )


def raw_name(case: Case, seq: int | None = None) -> str:
    parts = [f"{seq:04d}" if seq else "", case.stack, case.scenario, f"c{case.connections}"]
    if case.quota is not None:
        parts.append(f"q{case.quota:g}")
    if case.cores is not None:
        parts.append(f"{case.cores}cores")
    parts.append(case.tool + (f"-{case.rate.replace('%', 'pct')}" if case.rate else ""))
    parts.append(f"r{case.repetition}")
    return "-".join(p for p in parts if p)
