"""Where this machine's packages come from: each registry probed, and the mirror made usable.

packages/mirror.py says what a choice means (OFFLINE, the families, the layout and
each package manager's variables). This module makes the choice on this
machine when OFFLINE leaves it open: it probes every family's registry at once
(`probe_registry`, at most PROBE_TIMEOUT_S), keeps the answer for the rest of
the same `make` run (PROBE_FILE), and gives the mirror as a folder the package
managers can write into (`usable_mirror`).

Run as a script it resolves the choice, prints each probed family's line to
stderr once, and the variables as shell `export` lines, for the shell scripts
that run before the harness:

    eval "$(python3 -m loadtest.packages.registries shell-env)"
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import sys
import tarfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from loadtest.core.manifest import REPO_ROOT
from loadtest.packages.mirror import (
    FAMILIES,
    PACKED_SUFFIX,
    WRITABLE_COPY,
    WRITTEN_PARTS,
    OfflineChoiceError,
    Source,
    explicit,
    mirror_dir,
    registry_env,
    registry_url,
)

# A registry that has not answered in this long is taken as unreachable. A refusal
# (no route, no name) answers at once; 3 s covers a slow proxy's first TLS handshake.
PROBE_TIMEOUT_S = 3.0
# The probe of `make bootstrap` is reused by the commands of the same `make` run
# for this long (printed once), instead of probing again.
PROBE_FILE = REPO_ROOT / ".build" / "registries.json"
PROBE_REUSE_S = 120.0


# -- the probe -------------------------------------------------------------------------


def probe_registry(url: str, timeout: float | None = None) -> tuple[bool, str]:
    """Whether `url` answers HTTP within `timeout`: any status is an answer."""
    timeout = PROBE_TIMEOUT_S if timeout is None else timeout
    started = time.monotonic()
    request = urllib.request.Request(url, method="HEAD", headers={"User-Agent": "serverlab"})
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            pass
    except urllib.error.HTTPError:
        pass  # it answered, with an error status: the registry is there
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        took = time.monotonic() - started
        if took >= timeout * 0.95 or "timed out" in str(reason):
            return False, f"{url} did not answer in {timeout:g} s"
        return False, f"{url} did not answer: {reason}"
    return True, f"{url} answered in {time.monotonic() - started:.2f} s"


def probe_all(env=os.environ, probe=None) -> list[Source]:
    """Every family's registry probed at once; one that did not answer is read from the mirror."""
    probe = probe or probe_registry
    urls = {f: registry_url(f, env) for f in FAMILIES}
    with ThreadPoolExecutor(max_workers=len(FAMILIES)) as pool:
        answers = dict(zip(FAMILIES, pool.map(lambda f: probe(urls[f]), FAMILIES)))
    return [Source(f, not answers[f][0], f"registry {answers[f][1]}") for f in FAMILIES]


def sources(env=os.environ, report=None) -> list[Source]:
    """Each family's source. Without OFFLINE, the probe of `make bootstrap` moments ago
    (same registries) is reused; else the registries are probed now and `report` is
    given each family's line."""
    chosen = explicit(env)
    if chosen is not None:
        return chosen
    reused = reused_probe(env)
    if reused is not None:
        return reused
    probed = probe_all(env)
    save_probe(probed, env)
    for source in probed:
        if report:
            report(source.line() + missing_mirror(source, env))
    return probed


def missing_mirror(source: Source, env=os.environ) -> str:
    """What a family sent to a mirror that is not there can expect (else "")."""
    mirror = mirror_dir(env)
    if not source.from_mirror or mirror.exists():
        return ""
    return (f"; there is no mirror at {mirror} (make mirror fills one), so a stack or "
            f"tool that needs {source.family} packages is skipped and listed")


def offline_families(env=os.environ) -> frozenset[str]:
    """The families read from the mirror (probing the registries when OFFLINE is unset)."""
    return frozenset(s.family for s in sources(env) if s.from_mirror)


def is_offline(family: str | None = None, env=os.environ) -> bool:
    """Is `family` read from the mirror? Without a family: is every family?"""
    families = offline_families(env)
    return family in families if family else families == frozenset(FAMILIES)




# -- a mirror tools can write into -------------------------------------------------------


def needs_copy(mirror: Path) -> bool:
    """A mirror that is read-only or holds packed parts is used through a writable copy."""
    if not mirror.is_dir():
        return False
    read_only = not mirror.stat().st_mode & stat.S_IWUSR
    return read_only or any(p.name.endswith(PACKED_SUFFIX) for p in mirror.iterdir())


def usable_mirror(mirror: Path, copy: Path = WRITABLE_COPY) -> Path:
    """`mirror` itself, or its writable copy under .cache/, brought up to date."""
    if not needs_copy(mirror):
        return mirror
    entries = sorted(mirror.iterdir())
    stamp = json.dumps([str(mirror)] + [[p.name, p.stat().st_size, p.stat().st_mtime]
                                        for p in entries])  # fmt: skip
    stamp_file = copy / ".copied-from"
    if stamp_file.is_file() and stamp_file.read_text() == stamp:
        return copy
    shutil.rmtree(copy, ignore_errors=True)
    copy.mkdir(parents=True)
    for entry in entries:
        if entry.name.endswith(PACKED_SUFFIX):
            with tarfile.open(entry) as packed:
                packed.extractall(copy, filter="data")
        elif entry.is_dir() and entry.name in WRITTEN_PARTS:
            shutil.copytree(entry, copy / entry.name, symlinks=True)
        elif not (copy / entry.name).exists():
            (copy / entry.name).symlink_to(entry)
    stamp_file.write_text(stamp)
    return copy



# -- the choice, applied -------------------------------------------------------------------


def resolved_env(env=os.environ, report=None) -> dict[str, str]:
    """The variables of the resolved choice, for this process and its children."""
    families = frozenset(s.family for s in sources(env, report) if s.from_mirror)
    mirror = mirror_dir(env)
    return registry_env(usable_mirror(mirror) if families else mirror, families)


def apply_offline_env(env=os.environ, report=None) -> frozenset[str]:
    """Resolve the choice into `env` (OFFLINE made explicit, each offline family's
    variables set); return the families read from the mirror."""
    env.update(resolved_env(env, report))
    return offline_families(env)


def reused_probe(env) -> list[Source] | None:
    """The probe `make bootstrap` made moments ago, for the same registries."""
    try:
        saved = json.loads(PROBE_FILE.read_text())
    except (OSError, ValueError):
        return None
    urls = {f: registry_url(f, env) for f in FAMILIES}
    if time.time() - saved.get("time", 0) > PROBE_REUSE_S or saved.get("urls") != urls:
        return None
    return [Source(s["family"], s["from_mirror"], s["why"]) for s in saved["sources"]]


def save_probe(probed: list[Source], env=os.environ) -> None:
    saved = {"time": time.time(), "urls": {f: registry_url(f, env) for f in FAMILIES},
             "sources": [vars(s) for s in probed]}  # fmt: skip
    try:
        PROBE_FILE.parent.mkdir(parents=True, exist_ok=True)
        PROBE_FILE.write_text(json.dumps(saved))
    except OSError:
        pass  # a read-only checkout probes again next time


def shell_env(env=os.environ, report=None) -> str:
    variables = resolved_env(env, report)
    return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in variables.items())


def say(line: str) -> None:
    print(f"[registries] {line}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    if sys.argv[1:] != ["shell-env"]:
        sys.exit("usage: python3 -m loadtest.packages.registries shell-env")
    try:
        sys.stdout.write(shell_env(report=say))
    except OfflineChoiceError as exc:
        say(str(exc))
        sys.exit(2)
