"""The harness's own ceiling: nginx from Debian serving fixed bodies.

Every run also loads a trivially fast responder on the same server cores, with
the same tool, client cores and scenarios as the stacks. Its requests/s is the
most this harness can measure on this host: a stack close to it is limited by
the client or the loopback, not by itself. nginx answers with fixed bodies of
the same sizes as the contract's (hello, n=1/10/100 KB, workday), so each
scenario has its own ceiling. The generated config and site live in the
results folder, next to the numbers they produced.

nginx always runs on the host (pinned to the server cores, as a stack's
container is by its cpuset). In a Docker run it is loaded from the loadgen
container like the stacks, over the same host network: the same client and
the same path, so the ceiling still bounds what the run can measure.

What nginx serves and how (the bodies, the configuration, the measurements
behind each choice): runners/ceiling_site.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from loadtest.core.errors import StepError
from loadtest.core.runner import Limits
from loadtest.host.ports import port_or_free
from loadtest.host.process import ProcessGroupServer, spawn_group, tail
from loadtest.runners import compose as compose_file
from loadtest.runners.ceiling_site import DEFAULT_PORT, DISPLAY_NAME, NAME, write_site
from loadtest.runners.container import ServedContainer, limits_env
from loadtest.runners.docker import bind_address
from loadtest.runners.engine import Engine


def nginx_path() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None
    )


def version() -> str:
    path = nginx_path()
    if not path:
        return "absent"
    result = subprocess.run([path, "-v"], capture_output=True, text=True)
    return (result.stderr or result.stdout).strip()


class CalibrationServer(ProcessGroupServer):
    """nginx running in the foreground, pinned like a stack; the Server interface."""

    name = NAME
    display_name = DISPLAY_NAME
    tls_cert = None

    def __init__(self, folder: Path, cpus: tuple[int, ...] | None, port: int = DEFAULT_PORT):
        path = nginx_path()
        if not path:
            raise StepError(NAME, "prerequisites", "nginx not found; install Debian's nginx-light")
        # Another run's ceiling, or anything else, may hold the default port.
        self.port = port_or_free(port)
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.folder = folder
        config = write_site(folder, self.port, len(cpus) if cpus else 1)
        self.log_path = folder / "nginx.stderr"
        command = [path, "-p", str(folder.resolve()), "-c", str(config.resolve())]
        self.process = spawn_group(command, folder, dict(os.environ), self.log_path, cpus)

    def output_tail(self, lines: int = 40) -> str:
        return tail(self.log_path, lines) + "\n" + tail(self.folder / "error.log", lines)

    def __enter__(self) -> CalibrationServer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.kill()


class CeilingContainer(ServedContainer):
    """The ceiling on another host (SERVER_HOST): the same nginx and site, in the
    loadgen image there (its `ceiling` service in docker-compose.yml), pinned to the
    server cores by its cpuset like a stack. A run whose stacks are elsewhere must
    find its ceiling on their machine, not on this one."""

    name = NAME
    display_name = DISPLAY_NAME
    owner = NAME

    def __init__(self, engine: Engine, cpus: tuple[int, ...] | None, port: int = DEFAULT_PORT):
        self.service = NAME
        self.engine = engine
        self.port = port
        self.address = engine.address()
        self.base_url = f"http://{self.address}:{port}"
        engine.ensure_image(compose_file.image_name("loadgen"), NAME)
        env = limits_env(Limits(cpus=cpus))
        env["SERVER_BIND"] = bind_address(self.address)
        env[compose_file.env_name(NAME, "PORT")] = str(port)
        self._up(env, NAME)

    def __enter__(self) -> CeilingContainer:
        return self
