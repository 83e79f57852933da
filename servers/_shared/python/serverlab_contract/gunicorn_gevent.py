"""gunicorn settings for the Flask stacks: gevent workers, one per core.

flask-gevent (CPython) and flask-pypy (PyPy) both load this one module, so
that the interpreter is the only difference between them. gunicorn reads it
in the master process at start-up
(``--config python:serverlab_contract.gunicorn_gevent``); every name that
matches a gunicorn setting is used, other names are ignored. Each choice is
explained in the stacks' READMEs.
"""

from serverlab_contract import config_or_exit

# PORT, HOST, WORKERS and WORKDAY_CALENDAR, validated once in the master; a
# bad value or an unreadable calendar stops the start before anything forks.
_config = config_or_exit()
_host = f"[{_config.host}]" if ":" in _config.host else _config.host

# app.py in the stack's folder (the working directory) names the application.
wsgi_app = "app:application"
bind = [f"{_host}:{_config.port}"]

# gevent workers: each worker process runs one gevent event loop (libev) and
# serves every connection in its own greenlet. gunicorn monkey-patches the
# standard library in each worker before it imports the application.
worker_class = "gevent"
# One worker per core: a gevent worker already keeps its core busy with many
# connections at once, and this application never waits on I/O of its own,
# so more processes would only add context switches. WORKERS is the core count.
workers = _config.workers
# At most 1000 simultaneous connections per worker (gunicorn's default,
# spelled out); more wait in the listen backlog (2048, the default).
worker_connections = 1000
# Keep-alive on: idle connections are closed after 2 s (gunicorn's default,
# spelled out; its docs advise 1-5 s when clients connect directly).
keepalive = 2

# No preload_app: the application is imported in each worker, after gevent
# has patched the standard library, as gevent advises (patch before other
# imports). The calendar is still checked in the master, above.
preload_app = False

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
