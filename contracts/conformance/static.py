"""Conformance checker for the static-site stacks (contract "static").

A static stack serves the files of contracts/static/ unchanged over HTTPS,
with HTTP/2 offered through ALPN and Brotli and gzip for clients that ask.
Standard library only (Brotli bodies are decoded when the `brotli` module is
importable; otherwise those checks are reported as skipped, never passed).

    python3 -m contracts.conformance.static --base-url https://127.0.0.1:8151 --tls CERT

Exit status: 0 every check passed or was skipped, 1 a check failed, 2 usage
error or server unreachable. Python API: `run_static_checks(base_url, tls_cert=...)`
returns the same dict as --json.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import socket
import ssl
import sys
import time
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

from . import h2wire as h2
from . import report
from .context import NETWORK_ERRORS, describe_error
from .rawhttp import Client, Connection, ProtocolError, Response, ResponseTimeout
from .runner import (
    DEFAULT_TIMEOUT,
    ServerUnreachable,
    UsageError,
    client_tls,
    parse_base_url,
    run_for_cli,
)

try:  # optional: the tooling venv has it, a bare python3 may not
    import brotli
except ImportError:  # pragma: no cover - depends on the interpreter
    brotli = None

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEFAULT_SITE = Path(__file__).resolve().parent.parent / "static"
# Path served -> file of the site, and the media type it must carry.
PAGES = (
    ("/", "index.html", "text/html"),
    ("/index.html", "index.html", "text/html"),
    ("/style.css", "style.css", "text/css"),
)
MISSING = "/no-such-page.html"
H2_WINDOW = 1 << 24  # the client's receive window: no flow-control stall


class Skip(Exception):
    """Raised inside a check that cannot be judged here, with the reason."""


class Failure(Exception):
    """Raised inside a check to fail it with a message."""


@dataclass
class Site:
    base_url: str
    host: str
    port: int
    host_header: str
    timeout: float
    tls: ssl.SSLContext  # ALPN http/1.1 only, trusting the given certificate
    tls_cert: str | None
    files: dict  # file name -> bytes

    def client(self) -> Client:
        return Client(self.host, self.port, self.host_header, self.timeout, self.tls)

    def get(self, target: str, headers: tuple = (), method: str = "GET") -> Response:
        with self.client() as client:
            return client.request(method, target, headers)

    def context(self, alpn: list) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.tls_cert)
        context.set_alpn_protocols(alpn)
        return context


def run(check_id: str, category: str, func) -> dict:
    """One check: `func()` returns a pass detail or raises Failure, Skip or a network error."""
    result = {"id": check_id, "category": category, "ok": True, "detail": ""}
    try:
        result["detail"] = func()
    except Skip as exc:
        result.update(skipped=True, detail=f"skipped: {exc}")
    except Failure as exc:
        result.update(ok=False, detail=str(exc))
    except NETWORK_ERRORS as exc:
        result.update(ok=False, detail=describe_error(exc))
    except Exception as exc:  # a checker bug must not hide the other results
        result.update(ok=False, detail=f"checker error: {type(exc).__name__}: {exc}")
    return result


def media_type(response: Response) -> tuple:
    """('text/html', {'charset': 'utf-8'}) from the Content-Type header (lower-cased)."""
    value = response.header("Content-Type") or ""
    kind, *params = [part.strip() for part in value.split(";")]
    pairs = {}
    for param in params:
        key, _, val = param.partition("=")
        pairs[key.strip().lower()] = val.strip().strip('"').lower()
    return kind.lower(), pairs


def require_status(response: Response, status: int) -> None:
    if response.status != status:
        raise Failure(f"status {response.status}, expected {status}")


def vary_tokens(response: Response) -> set:
    return {
        token.strip().lower()
        for value in response.header_values("Vary")
        for token in value.split(",")
        if token.strip()
    }


def exact_length(response: Response, what: str) -> int:
    """Content-Length must be present and equal to the body's size."""
    if response.chunked:
        raise Failure(f"{what} sent chunked, without Content-Length")
    length = response.header("Content-Length")
    if length is None:
        raise Failure(f"{what} has no Content-Length")
    if int(length) != len(response.body):
        raise Failure(f"{what}: Content-Length {length} but {len(response.body)} body bytes")
    return int(length)


# -- the checks ------------------------------------------------------------


def check_body(site: Site, target: str, name: str) -> str:
    response = site.get(target)
    require_status(response, 200)
    coding = response.header("Content-Encoding")
    if coding and coding.lower() != "identity":
        raise Failure(f"Content-Encoding {coding!r} without Accept-Encoding in the request")
    expected = site.files[name]
    if response.body != expected:
        raise Failure(
            f"body differs from contracts/static/{name} "
            f"({len(response.body)} bytes, expected {len(expected)})"
        )
    return f"{len(expected)} bytes identical to contracts/static/{name}"


def check_content_type(site: Site, target: str, kind: str) -> str:
    response = site.get(target)
    require_status(response, 200)
    found, params = media_type(response)
    if found != kind:
        raise Failure(f"Content-Type {response.header('Content-Type')!r}, expected {kind}")
    charset = params.get("charset")
    if kind == "text/html" and charset != "utf-8":
        raise Failure(f"Content-Type {response.header('Content-Type')!r} lacks charset=utf-8")
    if charset not in (None, "utf-8"):
        raise Failure(f"Content-Type {response.header('Content-Type')!r}: the file is UTF-8")
    return response.header("Content-Type")


def check_length(site: Site, target: str) -> str:
    response = site.get(target)
    require_status(response, 200)
    return f"Content-Length {exact_length(response, 'the response')}"


def decode(coding: str, body: bytes) -> bytes:
    if coding == "gzip":
        return gzip.decompress(body)
    if brotli is None:
        raise Skip("the Python brotli module is not installed (pip install brotli)")
    return brotli.decompress(body)


def check_encoding(site: Site, target: str, name: str, coding: str, observed: dict) -> str:
    response = site.get(target, (("Accept-Encoding", coding),))
    require_status(response, 200)
    found = (response.header("Content-Encoding") or "identity").lower()
    if found != coding:
        raise Failure(f"Accept-Encoding: {coding} answered with Content-Encoding {found}")
    if "accept-encoding" not in vary_tokens(response) and "*" not in vary_tokens(response):
        raise Failure(f"Content-Encoding {coding} without 'Vary: Accept-Encoding'")
    framing = "chunked" if response.chunked else "content-length"
    if response.header("Content-Length") is not None:
        exact_length(response, f"the {coding} response")
    observed.setdefault("compressed", {})[f"{coding} {target}"] = {
        "bytes": len(response.body),
        "framing": framing,
    }
    try:
        plain = decode(coding, response.body)
    except (OSError, EOFError, zlib.error) as exc:
        raise Failure(f"{coding} body does not decode: {exc}") from None
    except Skip:
        raise
    except Exception as exc:  # brotli.error
        raise Failure(f"{coding} body does not decode: {exc}") from None
    if plain != site.files[name]:
        raise Failure(f"{coding} body decodes to {len(plain)} bytes that differ from {name}")
    return f"{len(response.body)} {coding} bytes ({framing}) decode to {name}"


def check_head(site: Site, target: str) -> str:
    with site.client() as client:
        get = client.request("GET", target)
        head = client.request("HEAD", target)
    require_status(head, 200)
    problems = []
    if head.body:
        problems.append(f"HEAD answered {len(head.body)} body bytes")
    if head.header("Content-Type") != get.header("Content-Type"):
        problems.append(
            f"Content-Type {head.header('Content-Type')!r}, GET had {get.header('Content-Type')!r}"
        )
    length = head.header("Content-Length")
    if length is not None and int(length) != len(get.body):
        problems.append(f"Content-Length {length}, GET body is {len(get.body)} bytes")
    if problems:
        raise Failure("; ".join(problems))
    return f"200, no body, Content-Length {length}"


def check_not_found(site: Site) -> str:
    response = site.get(MISSING)
    require_status(response, 404)
    return f"404 for {MISSING}"


def check_keep_alive(site: Site) -> str:
    with Connection(site.host, site.port, site.timeout, site.tls) as conn:
        for number, (target, _, _) in enumerate(PAGES, start=1):
            response = conn.request("GET", target, site.host_header)
            require_status(response, 200)
            if response.will_close and number < len(PAGES):
                raise Failure(f"the server closed the connection after request {number}")
    return f"{len(PAGES)} requests on one connection"


def check_conditional(site: Site, target: str) -> str:
    with site.client() as client:
        first = client.request("GET", target)
        require_status(first, 200)
        etag, modified = first.header("ETag"), first.header("Last-Modified")
        if etag:
            validator = ("If-None-Match", etag)
        elif modified:
            validator = ("If-Modified-Since", modified)
        else:
            raise Failure("neither ETag nor Last-Modified: clients cannot revalidate")
        again = client.request("GET", target, (validator,))
    if again.status != 304:
        raise Failure(f"{validator[0]}: {validator[1]} answered {again.status}, expected 304")
    if again.body:
        raise Failure(f"304 with {len(again.body)} body bytes")
    return f"304 for {validator[0]}"


def handshake(site: Site, context: ssl.SSLContext) -> ssl.SSLSocket:
    sock = socket.create_connection((site.host, site.port), timeout=site.timeout)
    try:
        return context.wrap_socket(sock, server_hostname=site.host)
    except BaseException:
        sock.close()
        raise


def check_alpn_h2(site: Site) -> str:
    with handshake(site, site.context(["h2", "http/1.1"])) as tls:
        selected = tls.selected_alpn_protocol()
        if selected != "h2":
            raise Failure(f"ALPN offering h2 and http/1.1 selected {selected!r}")
        # An HTTP/2 server answers the client preface with its SETTINGS frame.
        tls.sendall(h2.PREFACE + h2.frame(h2.SETTINGS, 0, 0))
        header = b""
        deadline = time.monotonic() + site.timeout
        while len(header) < 9 and time.monotonic() < deadline:
            chunk = tls.recv(9 - len(header))
            if not chunk:
                break
            header += chunk
    if len(header) < 9 or header[3] != h2.SETTINGS:
        raise Failure(f"h2 selected, but the first frame was {header[:9].hex() or 'missing'}")
    return "ALPN selected h2; the server sent its SETTINGS frame"


def check_alpn_http11(site: Site) -> str:
    context = site.context(["http/1.1"])
    with handshake(site, context) as tls:
        selected = tls.selected_alpn_protocol()
    if selected not in ("http/1.1", None):
        raise Failure(f"ALPN offering only http/1.1 selected {selected!r}")
    with Connection(site.host, site.port, site.timeout, context) as conn:
        response = conn.request("GET", "/", site.host_header)
    require_status(response, 200)
    return f"ALPN {selected or 'none'}, GET / over HTTP/1.1 answered 200"


class H2Connection:
    """Just enough HTTP/2 to send GETs one after another and read each answer's body.

    Header blocks are sent as HPACK literals without indexing and not decoded,
    except a response's leading indexed :status; a body is judged by its bytes.
    """

    def __init__(self, site: Site) -> None:
        self.site = site
        self.tls = handshake(site, site.context(["h2"]))
        if self.tls.selected_alpn_protocol() != "h2":
            self.tls.close()
            raise Failure(f"ALPN h2 not selected ({self.tls.selected_alpn_protocol()!r})")
        self.buffer = b""
        self.next_stream = 1
        settings = (0x4).to_bytes(2, "big") + H2_WINDOW.to_bytes(4, "big")  # INITIAL_WINDOW_SIZE
        self.tls.sendall(
            h2.PREFACE
            + h2.frame(h2.SETTINGS, 0, 0, settings)
            + h2.frame(h2.WINDOW_UPDATE, 0, 0, (H2_WINDOW - 65535).to_bytes(4, "big"))
        )

    def read_frame(self, deadline: float) -> tuple:
        while len(self.buffer) < 9 or len(self.buffer) < 9 + int.from_bytes(self.buffer[:3], "big"):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Failure(f"no complete HTTP/2 answer within {self.site.timeout:g} s")
            self.tls.settimeout(remaining)
            chunk = self.tls.recv(65536)
            if not chunk:
                raise Failure("the server closed the HTTP/2 connection")
            self.buffer += chunk
        length, kind, flags, stream = h2.frame_header(self.buffer)
        payload, self.buffer = self.buffer[9 : 9 + length], self.buffer[9 + length :]
        return kind, flags, stream, payload

    def get(self, path: str, headers: tuple = ()) -> tuple:
        """(status or None, body) of one GET on a new stream."""
        stream, self.next_stream = self.next_stream, self.next_stream + 2
        block = h2.hpack_literals(
            (
                (":method", "GET"), (":scheme", "https"),
                (":authority", self.site.host_header), (":path", path),
                ("user-agent", "serverlab-conformance/1"), *headers,
            )
        )  # fmt: skip
        self.tls.sendall(h2.frame(h2.HEADERS, h2.END_STREAM | h2.END_HEADERS, stream, block))
        status, body = None, bytearray()
        deadline = time.monotonic() + self.site.timeout
        while True:
            kind, flags, on, payload = self.read_frame(deadline)
            if kind == h2.SETTINGS and not flags & h2.ACK:
                self.tls.sendall(h2.frame(h2.SETTINGS, h2.ACK, 0))
            elif kind == h2.GOAWAY:
                code = int.from_bytes(payload[4:8], "big")
                raise Failure(f"GOAWAY (error code {code}) on stream {stream} for {path}")
            elif on != stream:
                continue
            elif kind == h2.RST_STREAM:
                code = int.from_bytes(payload[:4], "big")
                raise Failure(f"RST_STREAM (error code {code}) on stream {stream} for {path}")
            elif kind in (h2.HEADERS, h2.CONTINUATION, h2.DATA):
                if flags & h2.PADDED and kind != h2.CONTINUATION:
                    payload = payload[1 : len(payload) - payload[0]]
                if kind == h2.HEADERS:
                    if flags & h2.PRIORITY:  # 5 bytes before the block
                        payload = payload[5:]
                    if status is None:
                        status = h2.indexed_status(payload)
                if kind == h2.DATA:
                    body += payload
            if on == stream and kind in (h2.HEADERS, h2.DATA) and flags & h2.END_STREAM:
                return status, bytes(body)

    def close(self) -> None:
        self.tls.close()


def body_coding(body: bytes, expected: bytes) -> str | None:
    """Which coding turns `body` into `expected`: identity, br, gzip, or None."""
    if body == expected:
        return "identity"
    for coding in ("br", "gzip"):
        with contextlib.suppress(Exception):
            if decode(coding, body) == expected:
                return coding
    return None


def check_h2_get(site: Site) -> str:
    """Requests over HTTP/2, one after another on one connection, as a browser makes them."""
    # What a browser sends, and gzip alone; Brotli only when it can be decoded here.
    compressed = [(("accept-encoding", "gzip"),)]
    if brotli is not None:
        compressed.insert(0, (("accept-encoding", "br, gzip"),))
    connection = H2Connection(site)
    seen = []
    try:
        for path, name in (("/", "index.html"), ("/style.css", "style.css")):
            for headers in ((), *compressed):
                for _ in range(2):
                    status, body = connection.get(path, headers)
                    if status not in (200, None):
                        raise Failure(f"{path} over HTTP/2 answered {status}")
                    coding = body_coding(body, site.files[name])
                    if coding is None:
                        raise Failure(
                            f"{path} over HTTP/2 ({dict(headers) or 'no Accept-Encoding'}): "
                            f"{len(body)} body bytes that are not {name} in any coding"
                        )
                    if not headers and coding != "identity":
                        raise Failure(f"{path} over HTTP/2 compressed ({coding}) unasked")
                    seen.append(coding)
    finally:
        connection.close()
    return f"{len(seen)} GETs on one HTTP/2 connection: " + ", ".join(sorted(set(seen)))


def check_tls_version(site: Site, observed: dict) -> str:
    with handshake(site, site.context(["http/1.1"])) as tls:
        version, cipher = tls.version(), tls.cipher()
    observed["tls"] = {"version": version, "cipher": cipher[0] if cipher else None}
    if version not in ("TLSv1.2", "TLSv1.3"):
        raise Failure(f"negotiated {version}")
    refused = []
    for old in (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if site.tls_cert:
            context.load_verify_locations(site.tls_cert)
        else:
            context.load_default_certs()
        try:
            # Security level 0 lets this client offer the old versions at all.
            context.set_ciphers("DEFAULT:@SECLEVEL=0")
            with warnings.catch_warnings():  # deprecated on purpose: that is the test
                warnings.simplefilter("ignore", DeprecationWarning)
                context.minimum_version = context.maximum_version = old
        except (ValueError, ssl.SSLError) as exc:
            raise Skip(f"this Python/OpenSSL cannot offer {old.name}: {exc}") from None
        try:
            with handshake(site, context) as tls:
                raise Failure(f"the server accepted a {tls.version()} handshake")
        except ssl.SSLError as exc:
            if "NO_PROTOCOLS_AVAILABLE" in str(exc) or "no protocols available" in str(exc):
                raise Skip(f"this OpenSSL cannot offer {old.name}: {exc.reason}") from None
            refused.append(old.name)
        except (ConnectionResetError, BrokenPipeError):
            refused.append(old.name)
    return f"negotiated {version} ({cipher[0]}); refused {', '.join(refused)}"


# -- running ---------------------------------------------------------------


def make_site(
    base_url: str, tls_cert: str | Path | None, timeout: float, site_dir: str | Path | None
) -> Site:
    scheme, host, port, host_header = parse_base_url(base_url)
    if scheme != "https":
        raise UsageError("a static stack serves HTTPS: --base-url must start with https://")
    tls = client_tls(scheme, tls_cert)
    if timeout <= 0:
        raise UsageError("--timeout must be positive")
    folder = Path(site_dir) if site_dir is not None else DEFAULT_SITE
    try:
        files = {name: (folder / name).read_bytes() for name in ("index.html", "style.css")}
    except OSError as exc:
        raise UsageError(f"cannot read the site: {exc}") from None
    return Site(
        base_url=base_url.rstrip("/"),
        host=host,
        port=port,
        host_header=host_header,
        timeout=float(timeout),
        tls=tls,
        tls_cert=str(tls_cert) if tls_cert is not None else None,
        files=files,
    )


def probe(site: Site) -> None:
    """Fail fast, with one clear message, when nothing answers HTTPS at all."""
    try:
        site.get("/")
    except ResponseTimeout:
        raise ServerUnreachable(f"{site.base_url} sent no response within {site.timeout:g} s")
    except ProtocolError:
        pass  # something answers; the checks say what is wrong with it
    except ssl.SSLError as exc:
        raise ServerUnreachable(f"TLS handshake with {site.base_url} failed: {exc}") from None
    except OSError as exc:
        raise ServerUnreachable(f"cannot connect to {site.base_url}: {exc}") from None


def checks(site: Site, observed: dict) -> list:
    """(id, category, function) for every check, in the order they run."""
    plan = [
        ("tls-version", "tls", lambda: check_tls_version(site, observed)),
        ("alpn-h2", "tls", lambda: check_alpn_h2(site)),
        ("alpn-http11", "tls", lambda: check_alpn_http11(site)),
        ("h2-get", "protocol", lambda: check_h2_get(site)),
    ]
    for target, name, kind in PAGES:
        plan += [
            (f"body[{target}]", "content", lambda t=target, n=name: check_body(site, t, n)),
            (
                f"content-type[{target}]",
                "content",
                lambda t=target, k=kind: check_content_type(site, t, k),
            ),
            (f"content-length[{target}]", "content", lambda t=target: check_length(site, t)),
        ]
    for target, name, _ in (PAGES[0], PAGES[2]):
        for coding in ("br", "gzip"):
            plan.append(
                (
                    f"{coding}[{target}]",
                    "compression",
                    lambda t=target, n=name, c=coding: check_encoding(site, t, n, c, observed),
                )
            )
    plan += [
        ("head[/]", "protocol", lambda: check_head(site, "/")),
        ("head[/style.css]", "protocol", lambda: check_head(site, "/style.css")),
        ("not-found", "protocol", lambda: check_not_found(site)),
        ("keep-alive", "protocol", lambda: check_keep_alive(site)),
        ("conditional-get[/]", "caching", lambda: check_conditional(site, "/")),
        ("conditional-get[/style.css]", "caching", lambda: check_conditional(site, "/style.css")),
    ]
    return plan


def run_static_checks(
    base_url: str,
    *,
    tls_cert: str | Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    site_dir: str | Path | None = None,
    on_result=None,
) -> dict:
    """Check the static stack at `base_url`; returns the report (same dict as --json).

    Raises UsageError for bad arguments and ServerUnreachable when nothing
    answers HTTPS at `base_url`.
    """
    started = time.monotonic()
    site = make_site(base_url, tls_cert, timeout, site_dir)
    probe(site)
    observed: dict = {"server_header": None, "response_header_bytes": {}}
    try:
        first = site.get("/")
        observed["server_header"] = first.header("Server")
        observed["response_header_bytes"]["page"] = first.head_bytes
    except NETWORK_ERRORS:
        pass
    results = []
    for check_id, category, func in checks(site, observed):
        result = run(check_id, category, func)
        results.append(result)
        if on_result is not None:
            on_result(result)
    failed = sum(1 for r in results if not r["ok"])
    skipped = sum(1 for r in results if r.get("skipped"))
    return {
        "contract": "static",
        "base_url": site.base_url,
        "passed": len(results) - failed - skipped,
        "failed": failed,
        "skipped": skipped,
        "duration_s": round(time.monotonic() - started, 3),
        "checks": results,
        "observed": observed,
    }


def parse_args(argv: list) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python3 -m contracts.conformance.static",
        description="Check a running static-site stack: contracts/static/ served unchanged "
        "over HTTPS with HTTP/2, Brotli and gzip.",
        epilog="Exit status: 0 every check passed or was skipped, 1 a check failed, "
        "2 usage error or server unreachable.",
    )
    parser.add_argument("--base-url", required=True, help="e.g. https://127.0.0.1:8151 (no path)")
    parser.add_argument(
        "--tls",
        metavar="CERT",
        help="trust this PEM certificate (a self-signed test certificate); "
        "without it the system trust store is used",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON report")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds allowed per connection and response (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument("--site", help="folder with the expected files (default: contracts/static)")
    return parser.parse_args(argv)


def main(argv: list | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)

    def stream(check: dict) -> None:
        print(report.check_line(check), flush=True)

    result = run_for_cli(
        lambda: run_static_checks(
            args.base_url,
            tls_cert=args.tls,
            timeout=args.timeout,
            site_dir=args.site,
            on_result=None if args.json else stream,
        )
    )
    if result is None:
        return EXIT_USAGE
    if args.json:
        print(report.to_json(result))
    else:
        observed = result["observed"]
        server = observed["server_header"]
        print(
            f"INFO server-header  {server!r}" if server is not None else "INFO server-header  none"
        )
        for key, value in sorted(observed.get("compressed", {}).items()):
            print(f"INFO compressed  {key}: {value['bytes']} bytes, {value['framing']}")
        if "tls" in observed:
            print(f"INFO tls  {observed['tls']['version']} {observed['tls']['cipher']}")
        print(report.summary_line(result))
    return EXIT_FAILED if result["failed"] else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
