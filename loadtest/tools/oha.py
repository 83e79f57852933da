"""oha: constant-rate, open-loop latency (`cargo install --locked oha`).

`oha --no-tui -q RATE -z DUR -c CONN --latency-correction --output-format json`
sends requests on a fixed schedule whatever the server does, and with
`--latency-correction` measures each latency from when the request *should*
have been sent. A stalled server therefore shows up in the tail: these
latencies are free of coordinated omission, unlike wrk's and ab's.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

from .base import PERCENTILES, LoadResult, LoadSpec, Tool, latency_key

NOTE_OPEN = "open loop at a constant rate, latency corrected for coordinated omission"


def cache_bin_dir() -> Path:
    """Where scripts/install-oha.sh puts oha (outside the repository)."""
    cache = os.environ.get("SERVERLAB_CACHE") or str(Path.home() / ".cache" / "serverlab")
    return Path(cache) / "bin"


class Oha(Tool):
    name = "oha"
    binary = "oha"

    def path(self) -> str | None:
        cached = cache_bin_dir() / "oha"
        if cached.is_file() and os.access(cached, os.X_OK):
            return str(cached)
        return shutil.which(self.binary)

    def version(self) -> str:
        result = subprocess.run([self.path(), "--version"], capture_output=True, text=True)
        return result.stdout.strip()

    def command(self, spec: LoadSpec) -> list[str]:
        command = [
            self.binary,
            "--no-tui",
            "-z", f"{max(1, math.ceil(spec.duration))}s",
            "-c", str(spec.connections),
            "-t", f"{max(1, int(spec.timeout))}s",
            "--output-format", "json",
        ]  # fmt: skip
        if spec.rate:
            command += ["-q", f"{spec.rate:g}", "--latency-correction"]
        command.append(spec.url)
        return command

    def parse(self, stdout: str, stderr: str, exit_code: int) -> LoadResult:
        return parse_output(stdout, stderr, exit_code)


def parse_output(stdout: str, stderr: str = "", exit_code: int = 0) -> LoadResult:
    result = LoadResult(tool="oha", notes=[NOTE_OPEN])
    try:
        data = json.loads(stdout)
    except json.JSONDecodeError:
        result.ok = False
        result.problem = (stderr.strip() or stdout.strip() or f"exit code {exit_code}")[:500]
        return result
    raise NotImplementedError(json.dumps(data)[:3000])
