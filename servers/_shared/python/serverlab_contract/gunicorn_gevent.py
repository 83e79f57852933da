"""gunicorn settings for the Flask stacks: gevent workers, one per core.

flask-gevent (CPython) and flask-pypy (PyPy) both load this one module, so
that the interpreter is the only difference between them. gunicorn reads it
in the master process at start-up
(``--config python:serverlab_contract.gunicorn_gevent``); every name that
matches a gunicorn setting is used, other names are ignored. Each choice is
explained in the stacks' READMEs.
"""

from serverlab_contract import config_or_exit
from serverlab_contract.gunicorn_common import *  # noqa: F403  (the shared settings)
from serverlab_contract.gunicorn_common import bind_for

# PORT, HOST, WORKERS and WORKDAY_CALENDAR, validated once in the master; a
# bad value or an unreadable calendar stops the start before anything forks.
_config = config_or_exit()
bind = bind_for(_config)

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
