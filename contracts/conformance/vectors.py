"""Loading the shared test vectors (contracts/vectors/*.json).

The files are generated (`make vectors`) and shared with every stack's unit
tests; the checker only reads them and refuses a malformed file with a clear
message rather than judging a server against nonsense.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

AT_SHAPE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2})?")
DATE_SHAPE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class VectorError(ValueError):
    """A vector file is missing or malformed."""


@dataclass(frozen=True)
class WorkdayCase:
    at: str  # exchange-local time, sent as the `at` value
    expect: str  # YYYY-MM-DD
    note: str = ""


@dataclass(frozen=True)
class QueryCase:
    raw: str  # query string exactly as sent on the wire
    kb: int = 0  # n vectors: expected body size in kB (valid cases only)
    expect: str = ""  # at vectors: expected body (valid cases only)
    note: str = ""


@dataclass(frozen=True)
class Inputs:
    n_valid: tuple
    n_hello: tuple
    n_invalid: tuple
    at_valid: tuple
    at_invalid: tuple


def _load_json(path: Path) -> dict:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise VectorError(f"cannot read vector file {path}: {exc}") from None
    if not isinstance(document, dict):
        raise VectorError(f"{path}: expected a JSON object at the top level")
    return document


def load_workday(path: Path) -> tuple:
    document = _load_json(path)
    cases = document.get("cases")
    if not isinstance(cases, list) or not cases:
        raise VectorError(f"{path}: expected a non-empty list 'cases'")
    result = []
    for index, case in enumerate(cases):
        where = f"{path} case {index}"
        if not isinstance(case, dict):
            raise VectorError(f"{where}: expected an object")
        at, expect = case.get("at"), case.get("expect")
        if not isinstance(at, str) or not AT_SHAPE.fullmatch(at):
            raise VectorError(f"{where}: 'at' must be YYYY-MM-DDTHH:MM[:SS], got {at!r}")
        if not isinstance(expect, str) or not DATE_SHAPE.fullmatch(expect):
            raise VectorError(f"{where}: 'expect' must be YYYY-MM-DD, got {expect!r}")
        result.append(WorkdayCase(at, expect, str(case.get("note", ""))))
    return tuple(result)


def _query_cases(document: dict, path: Path, key: str, kind: str) -> tuple:
    group = document.get(key)
    cases = group.get(kind) if isinstance(group, dict) else None
    if not isinstance(cases, list):
        raise VectorError(f"{path}: expected a list '{key}.{kind}'")
    result = []
    for index, case in enumerate(cases):
        where = f"{path} {key}.{kind}[{index}]"
        if not isinstance(case, dict) or not isinstance(case.get("raw"), str):
            raise VectorError(f"{where}: expected an object with a string 'raw'")
        raw = case["raw"]
        if any(ch in raw for ch in " #\r\n") or not raw.isascii():
            raise VectorError(f"{where}: 'raw' must be ASCII as sent on the wire, got {raw!r}")
        kb = case.get("kb", 0)
        expect = case.get("expect", "")
        if key == "n" and kind == "valid" and (not isinstance(kb, int) or not 1 <= kb <= 100):
            raise VectorError(f"{where}: 'kb' must be an integer 1..100")
        if key == "at" and kind == "valid" and not DATE_SHAPE.fullmatch(str(expect)):
            raise VectorError(f"{where}: 'expect' must be YYYY-MM-DD")
        result.append(QueryCase(raw, kb, str(expect), str(case.get("note", ""))))
    return tuple(result)


def load_inputs(path: Path) -> Inputs:
    document = _load_json(path)
    return Inputs(
        n_valid=_query_cases(document, path, "n", "valid"),
        n_hello=_query_cases(document, path, "n", "hello"),
        n_invalid=_query_cases(document, path, "n", "invalid"),
        at_valid=_query_cases(document, path, "at", "valid"),
        at_invalid=_query_cases(document, path, "at", "invalid"),
    )
