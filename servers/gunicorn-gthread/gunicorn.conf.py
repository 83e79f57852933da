"""gunicorn settings for serverlab: the threaded (gthread) worker.

The same server and settings as the gunicorn stack (sync workers) except
the worker class and what comes with it: threads and keep-alive. gunicorn
reads this file in the master process at start-up (``-c gunicorn.conf.py``);
every name that matches a gunicorn setting is used, other names are
ignored. Each choice is explained in README.md.
"""

from serverlab_contract import config_or_exit
from serverlab_contract.gunicorn_common import *  # noqa: F403  (the shared settings)
from serverlab_contract.gunicorn_common import bind_for

# PORT, HOST, WORKERS and WORKDAY_CALENDAR, validated once; exits with a clear
# message on a bad value before anything is forked.
_config = config_or_exit(default_port=8133)
bind = bind_for(_config)

# The gthread worker: a process whose main thread watches the connections
# (idle keep-alive ones included) and hands each ready request to a pool of
# threads.
worker_class = "gthread"
# gunicorn's documented starting point for workers, (2 x cores) + 1, as for
# the sync stack; WORKERS is the core count.
workers = 2 * _config.workers + 1
# Threads per worker: the low end of gunicorn's documented 2-4 x cores.
threads = 2 * _config.workers
# Idle keep-alive connections are closed after 2 s (gunicorn's default,
# spelled out; its docs advise 1-5 s when clients connect directly). At most
# 1000 connections per worker (worker_connections, default) are kept.
keepalive = 2

# Load the application (and the calendar) once in the master, before
# forking: workers share that memory and start faster.
preload_app = True

# No runtime control socket: nothing here uses gunicornc, and by default it
# is one path in $HOME shared by every gunicorn on the machine.
control_socket_disable = True
