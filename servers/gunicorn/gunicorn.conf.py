"""gunicorn settings for serverlab: the default sync workers, as gunicorn ships them.

gunicorn reads this file in the master process at start-up (``-c
gunicorn.conf.py``); every name that matches a gunicorn setting is used,
other names are ignored. Each choice is explained in README.md.
"""

from serverlab_contract import config_or_exit
from serverlab_contract.gunicorn_common import *  # noqa: F403  (the shared settings)
from serverlab_contract.gunicorn_common import bind_for

# PORT, HOST, WORKERS and WORKDAY_CALENDAR, validated once; exits with a clear
# message on a bad value before anything is forked.
_config = config_or_exit(default_port=8132)
bind = bind_for(_config)

# The sync worker: one request at a time per process. It closes the
# connection after every response (it does not support keep-alive).
worker_class = "sync"
# gunicorn's documented starting point, (2 x cores) + 1: while one worker
# waits on a socket another can use the core. WORKERS is the core count.
workers = 2 * _config.workers + 1

# Load the application (and the calendar) once in the master, before
# forking: workers share that memory and start faster.
preload_app = True

# No runtime control socket: nothing here uses gunicornc, and by default it
# is one path in $HOME shared by every gunicorn on the machine.
control_socket_disable = True
