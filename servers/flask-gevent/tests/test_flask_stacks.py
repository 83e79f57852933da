"""The two Flask stacks, flask-gevent (CPython) and flask-pypy (PyPy), built with
their manifests' build commands and run for real under WORKERS=2.

Both serve the one Flask application in serverlab_contract.flask_app, so one
test module covers both: the shared input and workday vectors over HTTP, the
points where Flask's defaults differ from the contract (OPTIONS, the Allow
header, plain-text errors, blank query values, the trailing slash), gunicorn's
single Date header, no per-request logging, a clean stop of the master and
every worker on SIGTERM, and that the twins really are twins (same settings,
same package versions). flask-pypy is skipped, with the reason, when PyPy or
a C compiler is missing.
"""

import re
import subprocess
from pathlib import Path

import pytest

from loadtest import testing
from loadtest.core.manifest import load, stack_env
from loadtest.core.runner import Limits
from loadtest.runners.native import NativeRunner, running_stack
from loadtest.testing import INPUT_CASES, INPUT_IDS, free_port

pytestmark = pytest.mark.e2e

SERVERS = Path(__file__).resolve().parents[2]
STACKS = ("flask-gevent", "flask-pypy")


def skip_if_unavailable(name):
    reason = NativeRunner().unavailable_reason(load(name))
    if reason:
        pytest.skip(f"{name}: {reason}")


@pytest.fixture(scope="module", params=STACKS)
def server(request):
    name = request.param
    skip_if_unavailable(name)
    limits = Limits(extra_env={"WORKERS": "2"})
    with running_stack(name, limits, port=free_port()) as srv:
        srv.display_name = load(name).display_name
        yield srv
        # SIGTERM must stop the master and both workers cleanly (stop() raises
        # on a bad exit code or on processes left behind).
        assert srv.stop() in (0, -15, 143)


# --- the twins --------------------------------------------------------------


@pytest.mark.parametrize("name", STACKS)
def test_display_name_matches_the_manifest(name):
    source = (SERVERS / name / "app.py").read_text()
    match = re.search(r'^application = application_from_env\("(.*)"\)$', source, re.M)
    assert match.group(1) == load(name).display_name


def test_both_stacks_run_the_same_gunicorn_settings():
    # One shared settings module: the interpreter is the only difference.
    run = load("flask-gevent").native["run"]
    assert "--config python:serverlab_contract.gunicorn_gevent" in run
    assert load("flask-pypy").native["run"] == run


def pins(name):
    lines = (SERVERS / name / "requirements.txt").read_text().splitlines()
    # pip-compile's format: "name==version \" then indented --hash lines.
    found = dict(line.split()[0].split("==") for line in lines if line[:1].isalnum())
    return {re.sub(r"[._]", "-", package.lower()): version for package, version in found.items()}


def test_both_stacks_pin_the_same_versions():
    cpython, pypy = pins("flask-gevent"), pins("flask-pypy")
    # greenlet is built into PyPy; importlib_metadata and zipp are for Python < 3.10.
    assert set(cpython) - set(pypy) == {"greenlet"}
    assert set(pypy) - set(cpython) == {"importlib-metadata", "zipp"}
    assert {p: v for p, v in cpython.items() if p in pypy} == {
        p: v for p, v in pypy.items() if p in cpython
    }
    for name in STACKS:
        assert pins(name)["flask"] == load(name).framework_version
        manifest_text = (SERVERS / name / "server.toml").read_text()
        for package in ("gunicorn", "gevent"):
            assert f"{package} {pins(name)[package]}" in manifest_text


# --- the contract over HTTP --------------------------------------------------


@pytest.fixture
def conn(server):
    with testing.connection(server.port) as connection:
        yield connection


def test_workday_vectors(conn):
    testing.check_workday_vectors(conn)


@pytest.mark.parametrize("group, case", INPUT_CASES, ids=INPUT_IDS)
def test_input_vectors(server, conn, group, case):
    testing.check_input(conn, group, case, server.display_name)


def test_headers_and_exactly_one_date(conn):
    # One Date: gunicorn's; the application adds none.
    testing.check_headers(conn, ("/", "/?n=100", "/workday", "/?n=0", "/nope"))


@pytest.mark.parametrize("path", ["/workday/", "/index.html", "/nope", "/static/app.css"])
def test_not_found(conn, path):
    assert testing.check_not_found(conn, path)[1] == b"Not Found"


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"])
@pytest.mark.parametrize("path", ["/", "/workday"])
def test_method_not_allowed(conn, method, path):
    # OPTIONS too: Flask would answer it itself and list it in Allow.
    response, body = testing.check_method_not_allowed(conn, method, path)
    assert body == b"Method Not Allowed"
    assert response.getheader("Content-Type") == testing.PLAIN_TEXT


def test_head(conn):
    testing.check_head(conn)


def test_http10_and_connection_close(server):
    testing.check_http10_and_connection_close(server.port)


def test_raw_non_ascii_byte_in_the_query_is_a_plain_400(server):
    # Not valid HTTP; werkzeug's strict UTF-8 decoding would make it a 500.
    reply = testing.raw_exchange(
        server.port, b"GET /?n=\xff HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    head, _, body = reply.partition(b"\r\n\r\n")
    assert b" 400 " in head.split(b"\r\n")[0]
    assert b"Content-Type: text/plain; charset=utf-8" in head
    assert body == b"Bad Request"


def test_two_workers_and_no_per_request_logging(server, conn):
    # The master and WORKERS=2 gevent workers.
    assert len(server.pids()) == 3, server.pids()
    testing.check_no_request_logging(server, conn)


@pytest.mark.parametrize("name", STACKS)
def test_unreadable_calendar_stops_the_start(name, tmp_path):
    skip_if_unavailable(name)
    manifest = load(name)
    NativeRunner().build(manifest)
    env = stack_env(manifest)
    env.update(PORT=str(free_port()), HOST="127.0.0.1", WORKDAY_CALENDAR=str(tmp_path / "none"))
    result = subprocess.run(
        ["bash", "-c", manifest.native["run"]],
        cwd=manifest.folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert f"WORKDAY_CALENDAR={tmp_path / 'none'}" in result.stderr
