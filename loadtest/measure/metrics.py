"""Server-side metrics during a measurement, and bytes per response.

A sampler thread reads the server's whole process tree (every worker) with
psutil a few times a second: CPU % (sum over processes, 100% = one core) as a
mean over the measurement and the peak of the sampled intervals, and the peak
of the tree's summed RSS. RSS counts shared pages once per process, so forked
workers overstate the total a little; it is the same rule for every stack.
The load tool's own CPU comes from the kernel (see tools/base.py).

Header and body bytes per response come from one real request over a raw
socket, so they are the bytes on the wire (the 2019 lesson: with tiny bodies,
headers dominate and decide MB/s).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from contracts.conformance.rawhttp import status_and_fields
from loadtest.measure.steady import active_span, drift, read_loopback_bytes

SAMPLE_INTERVAL_S = 0.25
PID_REFRESH_S = 1.0


@dataclass
class ServerUsage:
    cpu_mean_pct: float | None = None  # 100 = one core fully busy
    cpu_peak_pct: float | None = None
    rss_peak_bytes: int | None = None
    samples: int = 0
    # Host-wide busy share of the server and client cores over the same window:
    # catches neighbours or the harness itself competing for the cores.
    server_cores_busy_pct: float | None = None
    client_cores_busy_pct: float | None = None
    processes_peak: int = 0
    # The server's CPU over the windows while load flowed (the verdict's input:
    # the tool's start and end are not the server's idle time).
    cpu_active_pct: float | None = None
    # Loopback bytes/s per sampled window (every request and answer crosses
    # it), and the second half's rate over the first's, minus 1 (loadtest/steady.py).
    loopback_bytes_per_s: list = field(default_factory=list)
    drift: float | None = None
    drift_t: float | None = None  # Welch's t of the halves (loadtest/steady.py)
    # Where the figures come from: the process tree on this machine, or the
    # engine's API (its stats of the container) for a server on another host
    # (runners/engine.py).
    source: str = "process-tree"

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class _Tree:
    processes: dict = field(default_factory=dict)  # pid -> psutil.Process


class UsageSampler:
    """Samples a process tree in a thread between start() and stop()."""

    def __init__(
        self,
        pids: Callable[[], list[int]],
        server_cpus: tuple[int, ...] | None = None,
        client_cpus: tuple[int, ...] | None = None,
        interval: float = SAMPLE_INTERVAL_S,
    ) -> None:
        self._pids = pids
        self._interval = interval
        self._server_cpus = server_cpus
        self._client_cpus = client_cpus
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._tree = _Tree()
        self._cpu_pcts: list[float] = []
        self._rss_peak = 0
        self._processes_peak = 0
        self._first_cpu = self._last_cpu = None
        self._first_wall = self._last_wall = None
        self._host_start = self._host_end = None
        self._windows: list[tuple[float, float, int | None]] = []  # (wall, tree cpu s, lo bytes)

    def _refresh(self) -> None:
        wanted = set(self._pids())
        for pid in list(self._tree.processes):
            if pid not in wanted:
                del self._tree.processes[pid]
        for pid in wanted - set(self._tree.processes):
            try:
                self._tree.processes[pid] = psutil.Process(pid)
            except psutil.Error:
                pass

    def _tree_cpu_and_rss(self) -> tuple[float, int]:
        cpu = 0.0
        rss = 0
        for pid, process in list(self._tree.processes.items()):
            try:
                with process.oneshot():
                    times = process.cpu_times()
                    cpu += times.user + times.system
                    rss += process.memory_info().rss
            except psutil.Error:
                del self._tree.processes[pid]
        return cpu, rss

    def _sample(self) -> None:
        cpu, rss = self._tree_cpu_and_rss()
        now = time.monotonic()
        self._windows.append((now, cpu, read_loopback_bytes()))
        if self._last_cpu is not None and now > self._last_wall:
            # A process that exited between samples takes its CPU time with it;
            # never report negative usage for that interval.
            self._cpu_pcts.append(max(0.0, (cpu - self._last_cpu) / (now - self._last_wall) * 100))
        else:
            self._first_cpu, self._first_wall = cpu, now
        self._last_cpu, self._last_wall = cpu, now
        self._rss_peak = max(self._rss_peak, rss)
        self._processes_peak = max(self._processes_peak, len(self._tree.processes))

    def _run(self) -> None:
        last_refresh = time.monotonic()
        while not self._stop.wait(self._interval):
            if time.monotonic() - last_refresh >= PID_REFRESH_S:
                self._refresh()
                last_refresh = time.monotonic()
            self._sample()

    def start(self) -> None:
        self._refresh()
        self._host_start = psutil.cpu_times(percpu=True)
        self._sample()
        self._thread = threading.Thread(target=self._run, name="usage-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> ServerUsage:
        self._stop.set()
        if self._thread:
            self._thread.join()
        self._sample()
        self._host_end = psutil.cpu_times(percpu=True)
        usage = ServerUsage(samples=len(self._cpu_pcts), processes_peak=self._processes_peak)
        if self._cpu_pcts and self._last_wall > self._first_wall:
            usage.cpu_mean_pct = (
                (self._last_cpu - self._first_cpu) / (self._last_wall - self._first_wall) * 100
            )
            usage.cpu_peak_pct = max(self._cpu_pcts)
        usage.rss_peak_bytes = self._rss_peak or None
        self._flow(usage)
        usage.server_cores_busy_pct = cores_busy(
            self._host_start, self._host_end, self._server_cpus
        )
        usage.client_cores_busy_pct = cores_busy(
            self._host_start, self._host_end, self._client_cpus
        )
        return usage

    def _flow(self, usage: ServerUsage) -> None:
        """Loopback rate per window, drift, and the server's CPU while load flowed."""
        windows = self._windows
        if len(windows) < 2 or any(lo is None for _, _, lo in windows):
            return
        rates, cpus = [], []
        for (t0, c0, b0), (t1, c1, b1) in zip(windows, windows[1:]):
            span = max(t1 - t0, 1e-6)
            rates.append(max(0, b1 - b0) / span)
            cpus.append((c1 - c0, span))
        usage.loopback_bytes_per_s = [round(r) for r in rates]
        change, t = drift(rates)
        usage.drift = None if change is None else round(change, 4)
        usage.drift_t = (
            None if t is None else round(max(-1e6, min(t, 1e6)), 2)
        )  # t is inf when both halves are flat
        start, end = active_span(rates)
        busy = sum(c for c, _ in cpus[start:end])
        wall = sum(s for _, s in cpus[start:end])
        if wall > 0:
            usage.cpu_active_pct = max(0.0, busy / wall * 100)


def cores_busy(start, end, cpus: tuple[int, ...] | None) -> float | None:
    """Mean busy % of the given cores between two psutil.cpu_times(percpu=True)."""
    if not cpus or start is None or end is None:
        return None
    busy = total = 0.0
    for cpu in cpus:
        if cpu >= len(start) or cpu >= len(end):
            return None
        before, after = start[cpu], end[cpu]
        spent = sum(after) - sum(before)
        idle = (after.idle + getattr(after, "iowait", 0)) - (
            before.idle + getattr(before, "iowait", 0)
        )
        busy += spent - idle
        total += spent
    return busy / total * 100 if total > 0 else None


@dataclass
class ResponseBytes:
    status: int | None = None
    header_bytes: int | None = None  # status line + headers + the blank line
    body_bytes: int | None = None
    server_header: str | None = None
    problem: str = ""

    @property
    def total_bytes(self) -> int | None:
        if self.header_bytes is None or self.body_bytes is None:
            return None
        return self.header_bytes + self.body_bytes

    def to_dict(self) -> dict:
        data = asdict(self)
        data["total_bytes"] = self.total_bytes
        return data


def response_bytes(
    host: str, port: int, path: str, timeout: float = 5.0, tls_cert: Path | None = None,
    headers: tuple[tuple[str, str], ...] = (),
) -> ResponseBytes:  # fmt: skip
    """Send one keep-alive GET (as the load tools do) and measure the answer's bytes.

    With `tls_cert` the request goes over HTTPS (HTTP/1.1), trusting that
    certificate; the bytes counted are the HTTP message, not the TLS records.
    """
    extra = "".join(f"{name}: {value}\r\n" for name, value in headers)  # the scenario's
    request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{extra}\r\n".encode()
    result = ResponseBytes()
    try:
        with contextlib.ExitStack() as stack:
            sock = stack.enter_context(socket.create_connection((host, port), timeout=timeout))
            if tls_cert is not None:
                context = ssl.create_default_context(cafile=str(tls_cert))
                sock = stack.enter_context(context.wrap_socket(sock, server_hostname=host))
            sock.sendall(request)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
            head, sep, rest = data.partition(b"\r\n\r\n")
            if not sep:
                result.problem = "connection closed before the end of the headers"
                return result
            result.status, headers = status_and_fields(head)
            result.header_bytes = len(head) + len(sep)
            result.server_header = headers.get("server")
            if "content-length" in headers:
                length = int(headers["content-length"])
                while len(rest) < length:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    rest += chunk
                result.body_bytes = length
            else:
                result.problem = "no Content-Length"
                while chunk := sock.recv(65536):
                    rest += chunk
                result.body_bytes = len(rest)
    except (OSError, ValueError, IndexError) as exc:
        result.problem = f"{type(exc).__name__}: {exc}"
    return result


def tree_rss(pids: list[int]) -> int:
    """Summed RSS of the server's processes (shared pages count once per process)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            total += psutil.Process(pid).memory_info().rss
    return total
