"""serverlab on meinheld: the shared WSGI application on meinheld's picoev server.

meinheld runs one single-threaded event loop (picoev) in one process and
calls the application for each request in a new greenlet (so applications
using its patched sockets can suspend); it has no process manager of its
own. The socket is opened once and WORKERS processes are forked over it; the
parent supervises them (serverlab_contract.prefork) and serves nothing.

CPython 3.11 or 3.12 only: meinheld 1.0.2 does not import on 3.13 (it uses
Py_TRASHCAN_SAFE_BEGIN, which 3.13 removed from the C API).

Run: PORT=8134 WORKDAY_CALENDAR=... python server.py
"""

import signal
import sys

import meinheld

from serverlab_contract import config_or_exit
from serverlab_contract.prefork import run_forked
from serverlab_contract.wsgi import create_app

DISPLAY_NAME = "meinheld"
DEFAULT_PORT = 8134
# meinheld closes every connection after one response unless keep-alive is
# switched on; the value is the idle timeout in seconds.
KEEPALIVE_S = 5


def main() -> int:
    config = config_or_exit(default_port=DEFAULT_PORT)
    # meinheld writes its own Date (and Server) header and drops the
    # application's, so the application does not add one.
    application = create_app(DISPLAY_NAME, config.calendar, add_date=False)
    # meinheld logs every request to stdout by default; the contract forbids
    # per-request logging.
    meinheld.set_access_logger(None)
    meinheld.set_keepalive(KEEPALIVE_S)
    # Bound once, before forking: every worker accepts from this one socket
    # (listen backlog: meinheld's default, 4096).
    meinheld.listen((config.host, config.port))
    # meinheld stops on SIGTERM or SIGINT by itself: it stops accepting and
    # ends its loop after at most about a second, open connections or not.
    return run_forked(
        config, lambda: meinheld.run(application), stop_signal=signal.SIGTERM, name=DISPLAY_NAME
    )


if __name__ == "__main__":
    sys.exit(main())
