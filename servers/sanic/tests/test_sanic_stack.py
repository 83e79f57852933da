"""The Sanic stack, built with its manifest's build command and run for real.

Runs the shared input and workday vectors over HTTP, plus the points where
Sanic's defaults differ from the contract (trailing slash, Allow order,
blank query values, Date header, logging).
"""

import re
import time
import warnings
from pathlib import Path

import pytest

from loadtest import testing
from loadtest.core.errors import StepError
from loadtest.core.manifest import load
from loadtest.core.runner import Limits
from loadtest.runners.native import running_stack
from loadtest.testing import INPUT_CASES, INPUT_IDS, free_port

pytestmark = pytest.mark.e2e

STACK = Path(__file__).resolve().parent.parent


# Sanic's manager loses a SIGTERM that arrives before it has seen every worker
# acknowledge its start (sanic-org/sanic#2997, fix proposed in #3063): its
# wait-for-acknowledgement loop reads back the None the signal handler sends and
# sends it again, forever (py-spy: WorkerManager.wait_for_ack, 100% of a core;
# or exit code 1 when a worker was stopped before it acknowledged). A worker
# acknowledges just before it logs "Worker ready"; the manager notices on its
# next poll, every 0.1 s, later when the machine is busy: stopped 20 requests
# after the last "Worker ready" with four CPU hogs beside it, 1 stop in 6 hung;
# 1 s later, 40 of 40 stopped cleanly. A test may be the only one of this
# module its worker runs, so the server is stopped only after that second.
MANAGER_NOTICES_ACK_S = 1.0


def wait_for_every_worker(srv, workers: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while srv.output_tail().count("Worker ready") < workers:
        assert time.monotonic() < deadline, f"not every worker ready:\n{srv.output_tail()}"
        time.sleep(0.1)
    time.sleep(MANAGER_NOTICES_ACK_S)


@pytest.fixture(scope="module")
def server():
    with running_stack("sanic", Limits(extra_env={"WORKERS": "2"}), port=free_port()) as srv:
        wait_for_every_worker(srv, 2)
        yield srv
        # SIGTERM must stop the manager and every worker, leaving no process.
        try:
            assert srv.stop() in (0, -15, 143)
        except StepError as error:
            if not is_the_known_proxy_race(error.output):
                raise
            warnings.warn(f"{error} (the worker-state race in README.md, Known issues)")


# The rare exit code 1 of README.md ("a rare unclean stop"): the manager's signal
# handler and its main loop cross replies on one multiprocessing proxy. Every
# process has still exited (stop() checks that first); any other unclean stop fails.
KNOWN_PROXY_RACE = (
    "TypeError: 'NoneType' object is not a mapping",
    "AttributeError: 'str' object has no attribute 'get'",
)


def is_the_known_proxy_race(output: str) -> bool:
    return any(signature in output for signature in KNOWN_PROXY_RACE)


@pytest.fixture
def conn(server):
    with testing.connection(server.port) as connection:
        yield connection


def test_display_name_matches_the_manifest():
    source = (STACK / "server.py").read_text()
    assert (
        re.search(r'^DISPLAY_NAME = "(.*)"$', source, re.M).group(1) == load("sanic").display_name
    )


def test_workday_vectors(conn):
    testing.check_workday_vectors(conn)


@pytest.mark.parametrize("group, case", INPUT_CASES, ids=INPUT_IDS)
def test_input_vectors(conn, group, case):
    testing.check_input(conn, group, case, "Sanic")


def test_headers(conn):
    testing.check_headers(conn, ("/", "/?n=100", "/workday", "/?n=0"))


@pytest.mark.parametrize("path", ["/workday/", "/index.html", "/nope"])
def test_not_found(conn, path):
    testing.check_not_found(conn, path)


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
@pytest.mark.parametrize("path", ["/", "/workday"])
def test_method_not_allowed(conn, method, path):
    testing.check_method_not_allowed(conn, method, path)


def test_head(conn):
    testing.check_head(conn)


def test_http10_and_connection_close(server):
    testing.check_http10_and_connection_close(server.port)


def test_no_per_request_logging(server, conn):
    testing.check_no_request_logging(server, conn)
