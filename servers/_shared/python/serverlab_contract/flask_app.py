"""The serverlab contract as a Flask application, shared by the Flask stacks.

``flask-gevent`` (CPython) and ``flask-pypy`` (PyPy) serve this one
application with the same gunicorn settings, so a difference between their
results is the interpreter's. Routing, query decoding (werkzeug) and
responses are Flask's own; parsing, the workday rule and the bodies come from
this package, like in every Python stack.

This module needs Flask (3.1); the rest of ``serverlab_contract`` is standard
library only, and only the Flask stacks import this module.

Where Flask's defaults differ from the contract:

- Flask answers ``OPTIONS`` itself on every route and lists it in ``Allow``;
  the routes opt out (``provide_automatic_options=False``), so ``OPTIONS`` is
  a 405 like any other method and ``Allow`` is exactly ``GET, HEAD``.
- werkzeug builds the 405 ``Allow`` header from a set, so its order can vary;
  the 405 handler states it once.
- Flask's 404 and 405 pages are HTML; the handlers answer short plain text.
- werkzeug decodes the raw query as strict UTF-8 and raises on raw bytes
  that are not (a 500); such a request line is not valid HTTP, so it is a
  plain-text 400.
- Responses default to ``text/html``; here they are ``text/plain`` and
  werkzeug appends ``; charset=utf-8``.

Left as Flask does it: werkzeug matches a path with its leading slashes
collapsed into one, so ``//workday`` is served as ``/workday``.

Usage, in a stack's ``app.py``::

    from serverlab_contract.flask_app import application_from_env

    application = application_from_env("Flask + gevent (CPython)")
"""

from __future__ import annotations

from typing import Mapping, Optional, Tuple

from flask import Flask, Response, request

from .config import calendar_or_exit
from .params import BadRequest, at_from_values, n_from_values
from .responses import (
    ALLOW,
    BAD_REQUEST_BODY,
    KB_BODIES,
    METHOD_NOT_ALLOWED_BODY,
    NOT_FOUND_BODY,
    Hello,
)
from .workday import TradingCalendar

__all__ = ["PlainTextResponse", "application_from_env", "create_app"]


class PlainTextResponse(Response):
    """Every response is ``text/plain; charset=utf-8`` (werkzeug adds the charset)."""

    default_mimetype = "text/plain"


def create_app(display_name: str, calendar: TradingCalendar) -> Flask:
    """The Flask application for one stack; ``display_name`` goes into the hello body."""
    # No static folder: Flask would otherwise route /static/<path> when one exists.
    app = Flask(__name__, static_folder=None)
    app.response_class = PlainTextResponse
    # strict_slashes (Flask's default, spelled out; rules take the map's value
    # when they are added): "/workday/" is not "/workday", so it is a 404.
    app.url_map.strict_slashes = True

    hello = Hello(display_name)

    # GET routes; werkzeug adds HEAD (same headers, no body). No automatic
    # OPTIONS: the contract allows exactly GET and HEAD.
    @app.get("/", provide_automatic_options=False)
    def root() -> bytes:
        # werkzeug decodes the query as a form and keeps blank values, so
        # "?n" is hello and "?n=&n=" is a duplicate (400).
        n = n_from_values(request.args.getlist("n"))
        return hello.body() if n is None else KB_BODIES[n]

    @app.get("/workday", provide_automatic_options=False)
    def workday() -> bytes:
        at = at_from_values(request.args.getlist("at"))
        day = calendar.trading_day_now() if at is None else calendar.trading_day(at)
        return day.encode("ascii")

    # The contract's 400s are raised by the shared parsers (InvalidN, InvalidAt).
    @app.errorhandler(BadRequest)
    def bad_request(exc: BadRequest) -> Tuple[bytes, int]:
        return exc.body, 400

    # A raw non-ASCII byte in the query (HTTP allows only ASCII in the request
    # line): werkzeug's strict UTF-8 decoding of request.args fails.
    @app.errorhandler(UnicodeDecodeError)
    def undecodable_query(exc: UnicodeDecodeError) -> Tuple[bytes, int]:
        return BAD_REQUEST_BODY, 400

    @app.errorhandler(404)
    def not_found(exc: Exception) -> Tuple[bytes, int]:
        return NOT_FOUND_BODY, 404

    @app.errorhandler(405)
    def method_not_allowed(exc: Exception) -> Tuple[bytes, int, dict]:
        # Both routes allow exactly GET and HEAD; werkzeug's own Allow joins a set.
        return METHOD_NOT_ALLOWED_BODY, 405, {"Allow": ALLOW}

    return app


def application_from_env(display_name: str, environ: Optional[Mapping[str, str]] = None) -> Flask:
    """:func:`create_app` with the calendar named by ``WORKDAY_CALENDAR``.

    For servers that import the application themselves (gunicorn workers):
    the calendar is read once, when the module is imported. A missing or
    unreadable calendar ends the process with status 2 and a message that
    names the variable and the path.
    """
    return create_app(display_name, calendar_or_exit(environ))
