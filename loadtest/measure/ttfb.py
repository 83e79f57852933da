"""Time to first byte with fresh connections, TLS handshake included.

What a visitor's first request costs: TCP connect, the full TLS handshake
(no session resumption: every sample is a new client with no session to
resume), the request, and the first byte of the answer (the status line over
HTTP/1.1; the response HEADERS frame of the request's stream over HTTP/2,
after the server's SETTINGS). The client offers ALPN `h2, http/1.1` as a
browser does and sends the scenario's headers (`Accept-Encoding: br, gzip`
for the static page), so a server that compresses on the fly pays for it
here. It trusts exactly the server's certificate (`tls_cert`).

`measure()` runs the samples one after another in a child process pinned to
the client cores with the load tools' priority (`python -m loadtest.measure.ttfb`,
JSON on stdout, kept with the raw outputs), against an otherwise idle server.
Each sample splits into connect, handshake and wait (request sent to first
byte); `summarize()` turns them into the `ttfb_*` fields of a measurement.
"""

from __future__ import annotations

import argparse
import json
import socket
import ssl
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from contracts.conformance import h2wire as h2
from loadtest.core.manifest import REPO_ROOT
from loadtest.core.stats import nearest_rank
from loadtest.measure.tools.base import run_tool

DEFAULT_SAMPLES = 100
CURVE_POINTS = (1, 5, 10, 25, 50, 75, 90, 95, 99, 100)


class TtfbError(Exception):
    """One sample failed (refused, handshake, reset, timeout)."""


@dataclass
class Sample:
    connect_ms: float
    handshake_ms: float  # 0 over plain HTTP
    wait_ms: float  # request sent .. first byte of the answer
    ttfb_ms: float  # connect start .. first byte of the answer
    protocol: str
    status: int | None


# ------------------------------------------------------------------ one sample


def sample(
    host: str,
    port: int,
    path: str,
    context: ssl.SSLContext | None,
    headers: list[tuple[str, str]],
    timeout: float = 5.0,
) -> Sample:
    """One fresh connection: connect, handshake, request, first byte of the answer."""
    started = time.perf_counter()
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        raise TtfbError(f"connect: {exc}") from None
    connected = time.perf_counter()
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        protocol = "http/1.1"
        if context is not None:
            try:
                sock = context.wrap_socket(sock, server_hostname="localhost")
            except (OSError, ssl.SSLError) as exc:
                raise TtfbError(f"handshake: {exc}") from None
            protocol = sock.selected_alpn_protocol() or "http/1.1"
        shaken = time.perf_counter()
        authority = f"{host}:{port}"
        if protocol == "h2":
            first, status = _h2_first_byte(sock, authority, path, headers)
        else:
            first, status = _h1_first_byte(sock, authority, path, headers)
    except (OSError, ssl.SSLError) as exc:
        raise TtfbError(f"{type(exc).__name__}: {exc}") from None
    finally:
        sock.close()
    return Sample(
        connect_ms=(connected - started) * 1000,
        handshake_ms=(shaken - connected) * 1000,
        wait_ms=(first - shaken) * 1000,
        ttfb_ms=(first - started) * 1000,
        protocol=protocol if context is not None else "http/1.1 (no TLS)",
        status=status,
    )


def _h1_first_byte(sock, authority: str, path: str, headers) -> tuple[float, int | None]:
    lines = [f"GET {path} HTTP/1.1", f"Host: {authority}"]
    lines += [f"{name}: {value}" for name, value in headers] + ["Connection: close", "", ""]
    sock.sendall("\r\n".join(lines).encode())
    data = sock.recv(65536)
    first = time.perf_counter()
    if not data:
        raise TtfbError("connection closed without an answer")
    try:
        status = int(data.split(b" ", 2)[1])
    except (IndexError, ValueError):
        status = None
    return first, status


def _h2_first_byte(sock, authority: str, path: str, headers) -> tuple[float, int | None]:
    fields = [(":method", "GET"), (":scheme", "https"), (":authority", authority), (":path", path)]
    block = h2.hpack_literals(fields + list(headers))
    sock.sendall(
        h2.PREFACE
        + h2.frame(h2.SETTINGS, 0, 0)
        + h2.frame(h2.HEADERS, h2.END_STREAM | h2.END_HEADERS, 1, block)
    )
    buffer = b""
    arrivals: list[tuple[int, float]] = []  # (bytes received so far, when)
    offset = 0
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            raise TtfbError("connection closed without an answer")
        buffer += chunk
        arrivals.append((len(buffer), time.perf_counter()))
        while len(buffer) - offset >= 9:
            length, kind, flags, stream = h2.frame_header(buffer, offset)
            if kind == h2.HEADERS and stream == 1:
                # The first byte of the answer arrived with the chunk holding this offset.
                first = next(when for size, when in arrivals if size > offset)
                payload = buffer[offset + 9 : offset + 9 + length]
                return first, h2.indexed_status(payload)
            if kind in (h2.GOAWAY, h2.RST_STREAM):
                raise TtfbError("the server refused the stream (GOAWAY or RST_STREAM)")
            if len(buffer) - offset < 9 + length:
                break
            if kind == h2.SETTINGS and not flags & h2.ACK:
                sock.sendall(h2.frame(h2.SETTINGS, h2.ACK, 0))
            offset += 9 + length


def client_context(cert: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(cert))
    context.set_alpn_protocols(["h2", "http/1.1"])
    return context


def run_samples(url: str, cert: Path | None, count: int, headers, timeout: float) -> dict:
    parts = urlsplit(url)
    if parts.scheme == "https" and cert is None:
        raise TtfbError("an https URL needs the server's certificate (--cert)")
    context = client_context(cert) if parts.scheme == "https" else None
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    samples, errors = [], []
    for _ in range(count):
        try:
            samples.append(asdict(sample(parts.hostname, parts.port, path, context, headers,
                                         timeout)))  # fmt: skip
        except TtfbError as exc:
            errors.append(str(exc))
    return {"url": url, "samples": samples, "errors": errors}


# -------------------------------------------------------------- the summary


def summarize(data: dict) -> dict:
    """The `ttfb_*` fields of a measurement record (milliseconds)."""
    samples = data.get("samples", [])
    errors = data.get("errors", [])
    fields = {"ttfb_samples": len(samples), "ttfb_errors": len(errors)}
    if errors:
        fields["ttfb_problem"] = errors[-1][:300]
    if not samples:
        return fields
    ttfb = sorted(s["ttfb_ms"] for s in samples)
    fields.update(
        ttfb_protocol=samples[0]["protocol"],
        ttfb_mean_ms=round(sum(ttfb) / len(ttfb), 3),
        ttfb_min_ms=round(ttfb[0], 3),
        ttfb_max_ms=round(ttfb[-1], 3),
        **{f"ttfb_p{p}_ms": round(nearest_rank(ttfb, p), 3) for p in (50, 90, 99)},
        ttfb_curve=[[p, round(nearest_rank(ttfb, p), 3)] for p in CURVE_POINTS],
    )
    for part in ("connect", "handshake", "wait"):
        values = sorted(s[f"{part}_ms"] for s in samples)
        fields[f"ttfb_{part}_p50_ms"] = round(nearest_rank(values, 50), 3)
        fields[f"ttfb_{part}_mean_ms"] = round(sum(values) / len(values), 3)
    statuses = sorted({s["status"] for s in samples if s["status"] is not None})
    fields["ttfb_statuses"] = statuses
    return fields


def measure(
    url: str,
    cert: Path | None,
    raw_prefix: Path,
    samples: int = DEFAULT_SAMPLES,
    headers: tuple[tuple[str, str], ...] = (),
    cpus: tuple[int, ...] | None = None,
    priority: int = 0,
    timeout: float = 5.0,
) -> dict:
    """Run the samples in a child pinned to `cpus`; return the `ttfb_*` fields."""
    # `python -m loadtest.measure.ttfb` from wherever the harness was started.
    bootstrap = f"import sys; sys.path.insert(0, {str(REPO_ROOT)!r}); from loadtest.measure.ttfb import main; "
    command = [sys.executable, "-c", bootstrap + "sys.exit(main())", url,
               "--samples", str(samples), "--timeout", str(timeout)]  # fmt: skip
    if cert is not None:
        command += ["--cert", str(cert)]
    for name, value in headers:
        command += ["--header", f"{name}: {value}"]
    deadline = samples * (3 * timeout + 1) + 30
    code, out, err, _cpu, _wall = run_tool(command, raw_prefix, deadline, cpus, priority)
    try:
        data = json.loads(out)
    except json.JSONDecodeError:
        lines = (err or out).strip().splitlines()
        return {"ttfb_samples": 0, "ttfb_errors": samples,
                "ttfb_problem": (lines[-1] if lines else f"exit code {code}")[:300]}  # fmt: skip
    return summarize(data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--cert", type=Path, help="the server's certificate, trusted alone")
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--header", action="append", default=[], help="'Name: value'")
    args = parser.parse_args(argv)
    headers = [tuple(part.strip() for part in h.split(":", 1)) for h in args.header]
    try:
        data = run_samples(args.url, args.cert, args.samples, headers, args.timeout)
    except TtfbError as exc:
        print(f"ttfb: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
