"""The registry of check groups, in the order they run.

A group is one function that returns one or more outcomes; its outcomes
carry the group's category. The `date-fresh` group mostly waits (two
requests 2 s apart), so it runs in the background while the others run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import checks_content as content
from . import checks_protocol as protocol


@dataclass(frozen=True)
class Group:
    name: str
    category: str
    func: Callable
    background: bool = False


GROUPS = (
    Group("hello-get", "hello", content.check_hello),
    Group("hello-millis", "hello", content.check_hello_millis),
    Group("hello-not-cached", "hello", content.check_hello_not_cached),
    Group("n-vectors", "n", content.check_n_vectors),
    Group("n-random", "n", content.check_n_random),
    Group("workday-vectors", "workday", content.check_workday_vectors),
    Group("at-vectors", "workday", content.check_at_vectors),
    Group("workday-now", "workday", content.check_workday_now),
    Group("header-rules", "headers", protocol.check_headers),
    Group("no-compression", "headers", protocol.check_no_compression),
    Group("date-fresh", "headers", protocol.check_date_fresh, background=True),
    Group("not-found", "routing", protocol.check_not_found),
    Group("methods", "routing", protocol.check_methods),
    Group("head-requests", "head", protocol.check_head),
    Group("keep-alive", "connection", protocol.check_keep_alive),
    Group("http10", "connection", protocol.check_http10),
    Group("connection-close", "connection", protocol.check_connection_close),
    Group("concurrent", "connection", protocol.check_concurrent),
)

GROUP_NAMES = tuple(group.name for group in GROUPS)
CATEGORIES = tuple(dict.fromkeys(group.category for group in GROUPS))
# `only` accepts both kinds of name, so they must never collide.
assert not set(GROUP_NAMES) & set(CATEGORIES)


def select(only) -> tuple:
    """The groups named in `only` (group names or categories); all when None."""
    if only is None:
        return GROUPS
    wanted = set(only)
    unknown = wanted - set(GROUP_NAMES) - set(CATEGORIES)
    if unknown:
        raise ValueError(
            f"unknown check group or category {', '.join(sorted(unknown))}; "
            f"known: {', '.join(CATEGORIES + GROUP_NAMES)}"
        )
    return tuple(g for g in GROUPS if g.name in wanted or g.category in wanted)
