"""Load-tool adapters: one module per tool, one common LoadResult record."""

from __future__ import annotations

from loadtest.measure.tools.ab import Ab
from loadtest.measure.tools.base import HOST, Executor, LoadResult, LoadSpec, Tool, ToolError
from loadtest.measure.tools.h2load import H2load
from loadtest.measure.tools.oha import Oha
from loadtest.measure.tools.wrk import Wrk

TOOLS = {"wrk": Wrk, "oha": Oha, "ab": Ab, "h2load": H2load}


def get_tool(name: str) -> Tool:
    try:
        return TOOLS[name]()
    except KeyError:
        raise ToolError(f"unknown load tool {name!r}: use {', '.join(TOOLS)}") from None


def latency_decimals(name: str) -> int:
    """How many decimals a latency percentile of tool `name` carries (Tool's default for
    a tool no longer listed)."""
    return TOOLS.get(name, Tool).latency_decimals


__all__ = ["HOST", "Executor", "LoadResult", "LoadSpec", "Tool", "ToolError", "TOOLS", "get_tool",
           "latency_decimals"]  # fmt: skip
