"""Self-signed TLS certificates, generated at run time and never committed.

HTTPS servers (a TLS front, the static stacks) get a fresh key and
certificate per run, written into the run's results folder (or `.build/tls/`
for `make check`), so no private key ever lives in the repository. Clients
of the harness (the conformance checker, h2load, curl) trust exactly that
certificate.

The key is ECDSA P-256: what current TLS guides (Mozilla's "intermediate"
configuration) put first, and the cheapest handshake for the server. The
certificate names localhost, 127.0.0.1 and ::1 only.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from loadtest.core.errors import StepError
from loadtest.core.manifest import REPO_ROOT
from loadtest.host.locks import exclusive

DEFAULT_FOLDER = REPO_ROOT / ".build" / "tls"
VALID_DAYS = 30
SUBJECT_ALT_NAMES = "DNS:localhost,IP:127.0.0.1,IP:::1"


@dataclass(frozen=True)
class TlsFiles:
    cert: Path  # PEM certificate, also the trust anchor clients use
    key: Path  # PEM private key, readable by the owner only

    def env(self) -> dict[str, str]:
        """What an HTTPS stack's `run` command reads."""
        return {"TLS_CERT": str(self.cert), "TLS_KEY": str(self.key)}


def self_signed(folder: Path = DEFAULT_FOLDER) -> TlsFiles:
    """The certificate in `folder`, generated when absent or expiring."""
    # Two commands at once would otherwise each write half of a pair.
    with exclusive(folder / ".lock"):
        return _self_signed(TlsFiles(folder / "cert.pem", folder / "key.pem"))


def _self_signed(files: TlsFiles) -> TlsFiles:
    folder = files.cert.parent
    if files.cert.exists() and files.key.exists() and _reusable(files.cert):
        return files
    if shutil.which("openssl") is None:
        raise StepError("tls", "certificate", "openssl not found (Debian: apt-get install openssl)")
    folder.mkdir(parents=True, exist_ok=True)
    command = [
        "openssl", "req", "-x509", "-newkey", "ec",
        "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-days", str(VALID_DAYS),
        "-subj", "/CN=localhost",
        "-addext", f"subjectAltName={SUBJECT_ALT_NAMES}",
        # A server certificate, not a CA (openssl's default): rustls clients such as
        # oha refuse a CA certificate as a server's, even when told to trust it.
        "-addext", "basicConstraints=critical,CA:FALSE",
        "-keyout", str(files.key), "-out", str(files.cert),
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise StepError("tls", "certificate", f"openssl failed: {result.stderr.strip()}")
    files.key.chmod(0o600)
    return files


def _reusable(cert: Path) -> bool:
    """Valid for at least a day more, and a server certificate (see above)."""
    result = subprocess.run(
        ["openssl", "x509", "-checkend", "86400", "-noout", "-ext", "basicConstraints",
         "-in", str(cert)],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    return result.returncode == 0 and "CA:FALSE" in result.stdout


def fingerprint(cert: Path) -> str:
    """SHA-256 fingerprint, for the provenance (the certificate is not kept)."""
    result = subprocess.run(
        ["openssl", "x509", "-noout", "-fingerprint", "-sha256", "-in", str(cert)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return result.stdout.strip().partition("=")[2]
