"""gunicorn settings every gunicorn stack shares, whatever its worker class.

A stack's settings (``gunicorn.conf.py``, or ``gunicorn_gevent``) take them
with ``from serverlab_contract.gunicorn_common import *``, add their worker
model and bind with :func:`bind_for`. gunicorn reads the module-level names
that match its settings; ``__all__`` lists these. Each choice is explained in
the stacks' READMEs.
"""

from typing import List

from .config import Config

__all__ = ["accesslog", "errorlog", "graceful_timeout", "worker_tmp_dir", "wsgi_app"]

# app.py in the stack's folder (the working directory) names the application.
wsgi_app = "app:application"

# No per-request logging (gunicorn's default, spelled out); start-up and
# error lines go to stderr.
accesslog = None
errorlog = "-"

# Workers signal liveness to the master by touching a temporary file; in
# memory (/dev/shm) that never blocks on a disk and works when the rest of
# the file system is read-only (gunicorn's advice for containers).
worker_tmp_dir = "/dev/shm"

# On SIGTERM workers get 10 s to finish their requests (default 30 s).
graceful_timeout = 10


def bind_for(config: Config) -> List[str]:
    """gunicorn's ``bind`` for the configured HOST and PORT (an IPv6 host in brackets)."""
    host = f"[{config.host}]" if ":" in config.host else config.host
    return [f"{host}:{config.port}"]
