"""Running every check against one server; `run_checks` is the Python API."""

from __future__ import annotations

import secrets
import ssl
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from .checks import Group, select
from .context import NETWORK_ERRORS, Context, Outcome
from .rawhttp import ProtocolError, ResponseTimeout, tls_context
from .tradingday import CalendarError, TradingCalendar
from .vectors import VectorError, load_inputs, load_workday

DEFAULT_TIMEOUT = 5.0
CONTRACTS_DIR = Path(__file__).resolve().parent.parent
DEFAULT_CALENDAR = CONTRACTS_DIR / "calendar" / "xshg-non-trading-weekdays.txt"
DEFAULT_VECTORS = CONTRACTS_DIR / "vectors"

# Responses whose header block size is reported (the 2019 lesson: with tiny
# bodies, header bytes decide throughput in MB/s).
OBSERVED_TARGETS = (("hello", "/"), ("workday", "/workday"), ("kb1", "/?n=1"))


class UsageError(ValueError):
    """Bad arguments, or a calendar or vector file that cannot be used."""


class ServerUnreachable(ConnectionError):
    """Nothing answers HTTP at the base URL; no check could run."""


def run_for_cli(call):
    """`call()`'s report, or None after printing why no check could run.

    The command-line front ends exit 2 on None: a usage error (bad arguments
    or data files) or a server that does not answer at all.
    """
    try:
        return call()
    except UsageError as exc:
        print(f"conformance: error: {exc}", file=sys.stderr)
    except ServerUnreachable as exc:
        print(f"conformance: server unreachable: {exc}", file=sys.stderr)
    return None


def parse_base_url(base_url: str) -> tuple:
    """(scheme, host, port, Host header value) of an http(s)://host:port URL without a path."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--base-url must look like http://127.0.0.1:8101, got {base_url!r}")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise UsageError(f"--base-url must have no path, query or user, got {base_url!r}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise UsageError(f"--base-url has an invalid port: {base_url!r}") from None
    return parts.scheme, parts.hostname, port, parts.netloc


def client_tls(scheme: str, tls_cert: str | Path | None) -> ssl.SSLContext | None:
    """The TLS context for an https:// base URL, trusting `tls_cert` if given."""
    if tls_cert is not None and scheme != "https":
        raise UsageError("--tls needs an https:// --base-url")
    if scheme != "https":
        return None
    if tls_cert is not None and not Path(tls_cert).is_file():
        raise UsageError(f"--tls: no certificate file at {tls_cert}")
    try:
        return tls_context(str(tls_cert) if tls_cert is not None else None)
    except ssl.SSLError as exc:
        raise UsageError(f"--tls: {tls_cert} is not a PEM certificate: {exc}") from None


def make_context(
    base_url: str,
    display_name: str,
    seed: int | None,
    timeout: float,
    calendar: str | Path | None,
    vectors: str | Path | None,
    tls_cert: str | Path | None = None,
) -> Context:
    """Validate the arguments and load the data files the checks need."""
    scheme, host, port, host_header = parse_base_url(base_url)
    tls = client_tls(scheme, tls_cert)
    if not display_name:
        raise UsageError("--display-name must not be empty")
    if timeout <= 0:
        raise UsageError("--timeout must be positive")
    vectors_dir = Path(vectors) if vectors is not None else DEFAULT_VECTORS
    try:
        trading = TradingCalendar.load(calendar if calendar is not None else DEFAULT_CALENDAR)
        workday_cases = load_workday(vectors_dir / "workday.json")
        inputs = load_inputs(vectors_dir / "inputs.json")
    except (CalendarError, VectorError) as exc:
        raise UsageError(str(exc)) from None
    return Context(
        base_url=base_url.rstrip("/"),
        host=host,
        port=port,
        host_header=host_header,
        display_name=display_name,
        timeout=float(timeout),
        seed=seed if seed is not None else secrets.randbelow(1_000_000),
        calendar=trading,
        workday_cases=workday_cases,
        inputs=inputs,
        tls=tls,
    )


def probe(ctx: Context) -> None:
    """Fail fast, with one clear message, when no HTTP server answers at all."""
    try:
        ctx.fetch("/")
    except ResponseTimeout:
        raise ServerUnreachable(
            f"{ctx.base_url} accepted a connection but sent no response within {ctx.timeout:g} s"
        ) from None
    except ProtocolError:
        pass  # something answers; the checks will say what is wrong with it
    except ConnectionRefusedError:
        raise ServerUnreachable(
            f"cannot connect to {ctx.base_url}: connection refused (is the server running?)"
        ) from None
    except OSError as exc:
        raise ServerUnreachable(f"cannot connect to {ctx.base_url}: {exc}") from None


def observe(ctx: Context) -> dict:
    """Facts recorded, not judged: Server header, header bytes, a Date example."""
    observed = {
        "server_header": None,
        "response_header_bytes": {key: None for key, _ in OBSERVED_TARGETS},
        "date_header_example": None,
    }
    for key, target in OBSERVED_TARGETS:
        try:
            response = ctx.fetch(target)
        except NETWORK_ERRORS:
            continue
        observed["response_header_bytes"][key] = response.head_bytes
        if key == "hello":
            observed["server_header"] = response.header("Server")
            observed["date_header_example"] = response.header("Date")
    return observed


def run_group(group: Group, ctx: Context) -> list:
    try:
        outcomes = list(group.func(ctx))
    except Exception as exc:  # a checker bug must not hide the other results
        outcomes = [Outcome(group.name, False, f"checker error: {type(exc).__name__}: {exc}")]
    return [
        {"id": o.id, "category": group.category, "ok": o.ok, "detail": o.detail} for o in outcomes
    ]


class Background:
    """A group running in a thread while the others run in the foreground."""

    def __init__(self, group: Group, ctx: Context) -> None:
        self.results: list = []
        self.thread = threading.Thread(target=self._run, args=(group, ctx), daemon=True)
        self.thread.start()

    def _run(self, group: Group, ctx: Context) -> None:
        self.results = run_group(group, ctx)

    def join(self) -> list:
        self.thread.join()
        return self.results


def run_checks(
    base_url: str,
    display_name: str,
    *,
    seed: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    calendar: str | Path | None = None,
    vectors: str | Path | None = None,
    only=None,
    on_result=None,
    tls_cert: str | Path | None = None,
) -> dict:
    """Check the server at `base_url` against contract v1; return the report.

    `only` limits the run to some check groups or categories (names from
    contracts.conformance.checks); `on_result` is called with each check
    dict as soon as it is known. An https:// `base_url` is checked over TLS,
    trusting `tls_cert` (a PEM file) or else the system's trust store. Raises UsageError for bad arguments or data
    files and ServerUnreachable when nothing answers HTTP at `base_url`.
    """
    started = time.monotonic()
    try:
        groups = select(only)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    ctx = make_context(base_url, display_name, seed, timeout, calendar, vectors, tls_cert)
    probe(ctx)
    observed = observe(ctx)
    background = [Background(g, ctx) for g in groups if g.background]
    checks: list = []

    def record(results: list) -> None:
        for check in results:
            checks.append(check)
            if on_result is not None:
                on_result(check)

    for group in groups:
        if not group.background:
            record(run_group(group, ctx))
    for task in background:
        record(task.join())
    failed = sum(1 for check in checks if not check["ok"])
    return {
        "display_name": display_name,
        "base_url": ctx.base_url,
        "passed": len(checks) - failed,
        "failed": failed,
        "seed": ctx.seed,
        "duration_s": round(time.monotonic() - started, 3),
        "checks": checks,
        "observed": observed,
    }
