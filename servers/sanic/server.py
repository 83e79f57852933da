"""serverlab on Sanic: the contract served by Sanic's own server on uvloop.

Routing, query decoding and responses are Sanic's; the contract logic
(parameter parsing, workday rule, bodies) is the shared serverlab_contract
package, the same code every Python stack uses.

Run: PORT=8121 WORKDAY_CALENDAR=... python server.py
"""

from sanic import HTTPResponse, Request, Sanic
from sanic.exceptions import MethodNotAllowed, NotFound

from serverlab_contract import (
    ALLOW,
    CONTENT_TYPE,
    KB_BODIES,
    METHOD_NOT_ALLOWED_BODY,
    NOT_FOUND_BODY,
    BadRequest,
    DateCache,
    Hello,
    at_from_values,
    config_or_exit,
    n_from_values,
)

DISPLAY_NAME = "Sanic"
DEFAULT_PORT = 8121

# Read once per process at import: Sanic's worker processes are spawned and
# import this module themselves. Exits with a clear message on bad settings.
CONFIG = config_or_exit(default_port=DEFAULT_PORT)
CALENDAR = CONFIG.calendar
HELLO = Hello(DISPLAY_NAME)
# Sanic sends no Date header of its own; the contract requires one. The value
# is formatted at most once a second (Date has one-second resolution).
DATES = DateCache()

# strict_slashes: "/workday/" is a different path and must be 404 (Sanic's
# default would route it to "/workday").
app = Sanic("serverlab", strict_slashes=True)
# Production settings, spelled out even where they are the defaults.
app.config.ACCESS_LOG = False  # no per-request logging
app.config.MOTD = False  # no start-up banner
app.config.NOISY_EXCEPTIONS = False


def plain(body: bytes, status: int = 200, headers=None) -> HTTPResponse:
    # HTTPResponse with bytes skips text()'s str encoding; Sanic adds the exact
    # Content-Length, and drops the body (not the headers) for HEAD.
    response = HTTPResponse(body, status=status, headers=headers, content_type=CONTENT_TYPE)
    response.headers["Date"] = DATES.value()
    return response


@app.route("/", methods=["GET", "HEAD"])
async def root(request: Request) -> HTTPResponse:
    # keep_blank_values: "?n" and "?n=" decode to an empty n (hello), and an
    # empty value given twice is still a duplicate.
    n = n_from_values(request.get_args(keep_blank_values=True).getlist("n"))
    return plain(HELLO.body() if n is None else KB_BODIES[n])


@app.route("/workday", methods=["GET", "HEAD"])
async def workday(request: Request) -> HTTPResponse:
    at = at_from_values(request.get_args(keep_blank_values=True).getlist("at"))
    day = CALENDAR.trading_day_now() if at is None else CALENDAR.trading_day(at)
    return plain(day.encode("ascii"))


@app.exception(BadRequest)
async def bad_request(request: Request, exception: BadRequest) -> HTTPResponse:
    # A bad n or at from either route: the contract's 400 with its message.
    return plain(exception.body, 400)


@app.exception(NotFound)
async def not_found(request: Request, exception: NotFound) -> HTTPResponse:
    return plain(NOT_FOUND_BODY, 404)


@app.exception(MethodNotAllowed)
async def method_not_allowed(request: Request, exception: MethodNotAllowed) -> HTTPResponse:
    # Sanic's own Allow header joins an unordered set of methods; both routes
    # allow exactly GET and HEAD, so the header is stated once here.
    return plain(METHOD_NOT_ALLOWED_BODY, 405, {"Allow": ALLOW})


if __name__ == "__main__":
    app.run(
        host=CONFIG.host,
        port=CONFIG.port,
        # One server process per CPU, as Sanic's docs recommend; the main
        # process only manages them (Sanic's worker manager, also for 1).
        workers=CONFIG.workers,
        access_log=False,
        debug=False,
        motd=False,
        # asyncio's default of 100 pending connections is small for a server
        # under load; 2048 matches gunicorn's and uvicorn's default.
        backlog=2048,
    )
