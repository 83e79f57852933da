"""Start mod_wsgi-express for serverlab: read the configuration, then become it.

mod_wsgi-express generates an Apache configuration (in a server root of its
own) that runs Apache with mod_wsgi in daemon mode: Apache's event-MPM child
holds the client connections and hands each request over a UNIX socket to a
pool of daemon processes that run the application. This launcher validates
the address (HOST, PORT), the worker count (WORKERS, by default the CPUs the
process may use, cgroup-aware) and the calendar with the code every Python
stack uses, then replaces itself with mod_wsgi-express (os.execv): same
process, which then execs Apache, so the stop signal reaches Apache's parent.
Every option is explained in README.md.

Run: PORT=8137 WORKDAY_CALENDAR=... python server.py
"""

import os
import sys
import tempfile
from pathlib import Path

from serverlab_contract import config_or_exit

DEFAULT_PORT = 8137
HERE = Path(__file__).resolve().parent
# mod_wsgi-express's default thread pool per daemon process.
THREADS = 5
WEB_USER = "www-data"


def main() -> None:
    config = config_or_exit(default_port=DEFAULT_PORT)
    express = str(Path(sys.executable).with_name("mod_wsgi-express"))
    # One server root per port and user: two instances never share config or pid file.
    root = Path(tempfile.gettempdir()) / f"serverlab-mod-wsgi-{config.port}-{os.getuid()}"
    # Apache refuses to serve as root: started as root, its children and the daemon
    # processes run as Debian's web server user (the build picked an interpreter
    # that user can run).
    as_user = ["--user", WEB_USER, "--group", WEB_USER] if os.getuid() == 0 else []
    os.execv(
        express,
        [
            express,
            "start-server",
            *as_user,
            str(HERE / "app.py"),
            "--host",
            config.host,
            "--port",
            str(config.port),
            "--processes",
            str(config.workers),
            "--threads",
            str(THREADS),
            "--server-root",
            str(root),
            "--server-mpm",
            "event",
            # C.UTF-8: the one UTF-8 locale every Debian image has.
            "--locale",
            "C.UTF-8",
            # Errors and start-up lines on stderr; no access log (the default).
            "--log-to-terminal",
            # The event MPM keeps idle keep-alive connections without a thread.
            "--keep-alive-timeout",
            "5",
            # Extra Apache directives (TRACE off), explained in the file.
            "--include-file",
            str(HERE / "apache-extra.conf"),
            "--working-directory",
            str(HERE),
        ],
    )


if __name__ == "__main__":
    main()
