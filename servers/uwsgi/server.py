"""Start uWSGI for serverlab: read the configuration, then become uWSGI.

uWSGI takes its settings from uwsgi.ini; this launcher adds what comes from
the environment: the address (HOST, PORT) and the number of worker
processes (WORKERS, by default the CPUs the process may use, cgroup-aware,
which uWSGI cannot compute itself). It validates them, and the calendar,
with the same code as every Python stack, then replaces itself with uwsgi
(os.execv): same process, so signals sent to it reach uWSGI's master.

Run: PORT=8136 WORKDAY_CALENDAR=... python server.py
"""

import os
import sys
from pathlib import Path

from serverlab_contract import config_or_exit

DEFAULT_PORT = 8136
HERE = Path(__file__).resolve().parent


def main() -> None:
    config = config_or_exit(default_port=DEFAULT_PORT)
    host = f"[{config.host}]" if ":" in config.host else config.host
    # The uwsgi binary installed by pip next to this interpreter (the venv's).
    uwsgi = str(Path(sys.executable).with_name("uwsgi"))
    os.execv(
        uwsgi,
        [
            uwsgi,
            "--ini",
            str(HERE / "uwsgi.ini"),
            # The public HTTP address, served by uWSGI's HTTP router process.
            "--http",
            f"{host}:{config.port}",
            "--processes",
            str(config.workers),
            # uWSGI embeds Python itself; point it at this venv's packages.
            "--virtualenv",
            sys.prefix,
        ],
    )


if __name__ == "__main__":
    main()
