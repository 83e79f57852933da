"""In-process microbenchmark of the contract's per-request path (pyperf).

One benchmark per route and input shape, each run two ways:

- ``wsgi:<case>``: through the WSGI application of ``serverlab_contract.wsgi``
  as bjoern serves it (``add_date=True``, so the Date header is included),
  with a prepared environ and a ``start_response`` that does nothing;
- ``router:<case>``: through ``Router.respond``, as the uvloop stack calls it.

Neither includes the server's own work (reading the socket, building the
environ, writing the response): what is measured is the contract's share of
a request, the part this package can make cheaper.

    python servers/_shared/python/bench/contract_bench.py            # pyperf's defaults
    python servers/_shared/python/bench/contract_bench.py --rigorous -o out.json
    python servers/_shared/python/bench/contract_bench.py --only wsgi:   # names starting so

The routes and inputs are those of ``servers/_shared/microbench-cases.json``,
which every language's microbenchmark reads. Any pyperf option works
(``--help``). ``scripts/microbench.sh`` (``make microbench``) runs it on each
CPython it finds. The package measured is the
one next to this folder, so a copy of an older tree measures that tree.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Tuple

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
REPO_ROOT = PACKAGE_ROOT.parent.parent.parent
DEFAULT_CALENDAR = REPO_ROOT / "contracts" / "calendar" / "xshg-non-trading-weekdays.txt"

# Measure this tree's package, not an installed copy.
if str(PACKAGE_ROOT) not in sys.path:
    sys.path.insert(0, str(PACKAGE_ROOT))

from serverlab_contract import Router, load_calendar  # noqa: E402
from serverlab_contract.wsgi import create_app  # noqa: E402

DISPLAY_NAME = "Python bjoern"


class Case(NamedTuple):
    """One route and input shape, and the status it must answer with."""

    name: str
    method: str
    path: str
    query: str
    status: int


# The routes and input shapes every language's microbenchmark measures, in one file.
CASES_FILE = REPO_ROOT / "servers" / "_shared" / "microbench-cases.json"


def read_cases_file(path: Path = CASES_FILE) -> Dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def load_cases(path: Path = CASES_FILE) -> Tuple[Case, ...]:
    return tuple(Case(**case) for case in read_cases_file(path)["cases"])


def held_at_ms(path: Path = CASES_FILE) -> int:
    """The instant the step program (count_steps.py) hands the library, in ms since the epoch."""
    return read_cases_file(path)["held_at_ms"]


CASES: Tuple[Case, ...] = load_cases()

TimeFunc = Callable[[int], float]


def calendar_path() -> str:
    return os.environ.get("WORKDAY_CALENDAR") or str(DEFAULT_CALENDAR)


def wsgi_environ(case: Case) -> Dict[str, object]:
    """What a WSGI server passes for the request, prepared once per benchmark."""
    return {
        "REQUEST_METHOD": case.method,
        "SCRIPT_NAME": "",
        "PATH_INFO": case.path,
        "QUERY_STRING": case.query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8080",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "127.0.0.1:8080",
        "wsgi.url_scheme": "http",
    }


def start_response(status: str, headers: List[Tuple[str, str]], exc_info=None) -> None:
    """A server's start_response reduced to nothing: only the application is timed."""


def wsgi_call(app, case: Case) -> Callable[[], int]:
    """One request through the WSGI application; returns the status code."""
    environ = wsgi_environ(case)
    captured = []

    def call() -> int:
        def capture(status, headers, exc_info=None):
            captured[:] = [status]

        app(environ, capture)
        return int(captured[0].split(" ", 1)[0])

    return call


def router_call(router: Router, case: Case) -> Callable[[], int]:
    """One request through Router.respond; returns the status code."""
    return lambda: router.respond(case.method, case.path, case.query).status


def wsgi_timer(app, case: Case) -> TimeFunc:
    environ = wsgi_environ(case)

    def time_calls(loops: int) -> float:
        # Locals and a range loop: the loop itself costs a few ns per call.
        application, env, start = app, environ, start_response
        started = time.perf_counter()
        for _ in range(loops):
            application(env, start)
        return time.perf_counter() - started

    return time_calls


def router_timer(router: Router, case: Case) -> TimeFunc:
    method, path, query = case.method, case.path, case.query

    def time_calls(loops: int) -> float:
        respond = router.respond
        started = time.perf_counter()
        for _ in range(loops):
            respond(method, path, query)
        return time.perf_counter() - started

    return time_calls


def build(path: str = "") -> Tuple[object, Router]:
    """The WSGI application and the router the benchmarks call."""
    calendar = load_calendar(path or calendar_path())
    return create_app(DISPLAY_NAME, calendar, add_date=True), Router(DISPLAY_NAME, calendar)


def benchmarks(app, router: Router) -> List[Tuple[str, TimeFunc]]:
    """Every benchmark as (name, time function), WSGI first."""
    found = [(f"wsgi:{case.name}", wsgi_timer(app, case)) for case in CASES]
    found += [(f"router:{case.name}", router_timer(router, case)) for case in CASES]
    return found


def verify(app, router: Router) -> List[str]:
    """Problems with the cases: a benchmark must measure the status it names."""
    problems = []
    for case in CASES:
        for way, call in (("wsgi", wsgi_call(app, case)), ("router", router_call(router, case))):
            status = call()
            if status != case.status:
                problems.append(f"{way}:{case.name}: status {status}, expected {case.status}")
    return problems


def pass_only(command: List[str], args) -> None:
    """pyperf starts a worker process per run; it needs --only too."""
    if args.only:
        command.extend(("--only", args.only))


def main() -> None:
    import pyperf

    runner = pyperf.Runner(add_cmdline_args=pass_only)
    runner.argparser.add_argument(
        "--only", default="", help="run only the benchmarks whose names start so (wsgi:, router:kb)"
    )
    args = runner.parse_args()
    runner.metadata["serverlab_contract_path"] = str(PACKAGE_ROOT)
    app, router = build()
    problems = verify(app, router)
    if problems:
        sys.exit("contract_bench: " + "; ".join(problems))
    for name, time_calls in benchmarks(app, router):
        if name.startswith(args.only):
            runner.bench_time_func(name, time_calls)


if __name__ == "__main__":
    main()
