"""The serverlab contract as one WSGI application (PEP 3333), for every WSGI server.

bjoern, gunicorn, meinheld, cheroot and uWSGI all serve this same callable,
so a difference in their results is a difference between the servers.
Routing and bodies come from :class:`~serverlab_contract.Router`; this module
only adapts them to WSGI:

- the route is ``PATH_INFO`` and the query ``QUERY_STRING`` exactly as the
  server passes it (still percent-encoded; the router decodes it as a form);
- ``Content-Type`` and an exact ``Content-Length`` on every response, so no
  server falls back to chunked encoding or closes the connection to end a body;
- ``HEAD`` returns GET's status and headers with an empty body;
- the body is a one-item list of bytes, the form every server writes in one go.

``Date``: the contract wants exactly one current Date header. gunicorn,
meinheld, cheroot and uWSGI's HTTP router add their own (meinheld even drops
an application's), bjoern adds none. Each stack therefore says whether the
application adds it (``add_date``); when it does, the value comes from a
:class:`~serverlab_contract.DateCache`, formatted at most once a second.

Usage, in a stack's own module::

    from serverlab_contract.wsgi import application_from_env

    application = application_from_env("bjoern", add_date=True)
"""

from __future__ import annotations

from typing import Callable, Iterable, List, Mapping, Optional

from .config import calendar_or_exit
from .responses import STATUS_LINES, DateCache, Router
from .workday import TradingCalendar

StartResponse = Callable[..., Callable[[bytes], object]]
WSGIApplication = Callable[[dict, StartResponse], Iterable[bytes]]


def create_app(display_name: str, calendar: TradingCalendar, *, add_date: bool) -> WSGIApplication:
    """The WSGI application for one stack.

    ``add_date``: True when the server sends no Date header of its own
    (bjoern); False when it does (a second Date would break the contract).
    """
    respond = Router(display_name, calendar).respond
    date = DateCache().value if add_date else None

    def application(environ: dict, start_response: StartResponse) -> List[bytes]:
        response = respond(
            environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", "")
        )
        status, headers, body = response
        # PEP 3333 wants a list of (str, str) tuples; a fresh list, because
        # servers may append their own headers to it. The status line comes
        # from a table (STATUS_LINES) instead of being formatted per request
        # (with the one list display: 6,877 -> 4,741 instructions on CPython 3.13).
        if date is None:
            start_response(STATUS_LINES[status], [*headers])
        else:
            start_response(STATUS_LINES[status], [*headers, ("Date", date())])
        return [body]

    application.__doc__ = f"serverlab contract, WSGI, display name {display_name!r}"
    return application


def application_from_env(
    display_name: str, *, add_date: bool, environ: Optional[Mapping[str, str]] = None
) -> WSGIApplication:
    """:func:`create_app` with the calendar named by ``WORKDAY_CALENDAR``.

    For servers that import the application themselves (gunicorn workers,
    uWSGI): the calendar is read once, when the module is imported. A missing
    or unreadable calendar ends the process with status 2 and a message that
    names the variable and the path.
    """
    return create_app(display_name, calendar_or_exit(environ), add_date=add_date)
