"""serverlab on bjoern: the shared WSGI application on bjoern's libev server.

bjoern runs one single-threaded event loop (libev) in one process and has no
process manager of its own. As bjoern's own fork example does, the socket is
opened once and WORKERS processes are forked over it; the parent supervises
them (serverlab_contract.prefork) and serves nothing.

Run: PORT=8131 WORKDAY_CALENDAR=... python server.py
"""

import signal
import sys

import bjoern

from serverlab_contract import config_or_exit
from serverlab_contract.prefork import run_forked
from serverlab_contract.wsgi import create_app

DISPLAY_NAME = "bjoern"
DEFAULT_PORT = 8131
# bjoern's default listen backlog is 1024; 2048 matches gunicorn's default
# and the other Python stacks (the kernel caps it at net.core.somaxconn).
LISTEN_BACKLOG = 2048


def main() -> int:
    config = config_or_exit(default_port=DEFAULT_PORT)
    # bjoern sends no Date header of its own, so the application adds it.
    application = create_app(DISPLAY_NAME, config.calendar, add_date=True)
    # Bound once, before forking: every worker accepts from this one socket.
    # reuse_port as in bjoern's README; it does not change how the shared
    # socket's connections are spread, it only lets another server bind the
    # same port (for example a replacement starting while this one drains).
    bjoern.listen(
        application, config.host, config.port, reuse_port=True, listen_backlog=LISTEN_BACKLOG
    )
    # bjoern stops on SIGINT: it stops accepting, finishes the open
    # connections, then raises KeyboardInterrupt; the supervisor turns
    # SIGTERM into that and kills whatever is still open after the grace time.
    return run_forked(config, bjoern.run, stop_signal=signal.SIGINT, name=DISPLAY_NAME)


if __name__ == "__main__":
    sys.exit(main())
