"""serverlab on cheroot: the shared WSGI application on CherryPy's HTTP server.

cheroot is the HTTP/WSGI server of CherryPy, published on its own. One
process: the main thread accepts connections and watches idle keep-alive
connections with a selector; a fixed pool of worker threads handles the
requests that are ready. Python code runs one thread at a time (the GIL),
so the process uses about one core however many CPUs it may use.

Run: PORT=8135 WORKDAY_CALENDAR=... python server.py
"""

import signal
import sys

from cheroot import __version__ as cheroot_version
from cheroot.wsgi import Server

from serverlab_contract import config_or_exit
from serverlab_contract.wsgi import create_app

DISPLAY_NAME = "CherryPy (cheroot)"
DEFAULT_PORT = 8135
# cheroot's and CherryPy's default pool of 10 threads, spelled out. With the
# GIL more threads add no CPU for a CPU-bound application; idle keep-alive
# connections wait in the selector, not in a thread, so 10 threads serve
# thousands of connections.
NUMTHREADS = 10
# request_queue_size is the listen backlog; cheroot's default of 5 drops
# connections in bursts. 2048 matches gunicorn's default and the other
# Python stacks (the kernel caps it at net.core.somaxconn).
LISTEN_BACKLOG = 2048
# cheroot closes a keep-alive connection after its response when 10 or more
# connections already wait in its selector (keep_alive_conn_limit, default
# 10), so beyond 10 clients most requests pay a new TCP connection. 1000
# idle connections cost a selector entry each, not a thread; it matches the
# 1000 connections a gunicorn worker holds. README.md has the measurement.
KEEP_ALIVE_CONN_LIMIT = 1000


def main() -> int:
    config = config_or_exit(default_port=DEFAULT_PORT)
    # cheroot adds a Date header when the application sends none.
    application = create_app(DISPLAY_NAME, config.calendar, add_date=False)
    server = Server(
        (config.host, config.port),
        application,
        numthreads=NUMTHREADS,
        request_queue_size=LISTEN_BACKLOG,
    )
    server.keep_alive_conn_limit = KEEP_ALIVE_CONN_LIMIT
    # SIGTERM stops the server like Ctrl-C: KeyboardInterrupt in the main
    # thread ends server.start(), then server.stop() closes the socket and
    # lets the threads finish the requests in flight.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    print(
        f"{DISPLAY_NAME}: http://{config.host}:{config.port}/ with one process, "
        f"{NUMTHREADS} threads (cheroot {cheroot_version}; WORKERS={config.workers} not used)",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.start()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
