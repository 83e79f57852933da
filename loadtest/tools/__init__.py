"""Load-tool adapters: one module per tool, one common LoadResult record."""

from __future__ import annotations

from .ab import Ab
from .base import HOST, Executor, LoadResult, LoadSpec, Tool, ToolError
from .h2load import H2load
from .oha import Oha
from .wrk import Wrk

TOOLS = {"wrk": Wrk, "oha": Oha, "ab": Ab, "h2load": H2load}


def get_tool(name: str) -> Tool:
    try:
        return TOOLS[name]()
    except KeyError:
        raise ToolError(f"unknown load tool {name!r}: use {', '.join(TOOLS)}") from None


__all__ = ["HOST", "Executor", "LoadResult", "LoadSpec", "Tool", "ToolError", "TOOLS", "get_tool"]
