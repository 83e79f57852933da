"""The committed calendar and vectors are exactly what the generators produce.

Both generators read exchange-calendars (installed in the tooling venv), so
a hand edit of the data, or a new exchange-calendars release with different
holidays, shows up here instead of in a confusing stack failure.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

CONTRACTS = Path(__file__).resolve().parent.parent
pytest.importorskip("exchange_calendars", reason="needs the tooling venv (make bootstrap)")


def load_module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_calendar_file_matches_exchange_calendars():
    generator = load_module(CONTRACTS / "calendar" / "generate.py")
    days = generator.non_trading_weekdays(generator.FIRST, generator.LAST)
    expected = generator.render(days, generator.FIRST, generator.LAST)
    committed = (CONTRACTS / "calendar" / "xshg-non-trading-weekdays.txt").read_text()
    assert committed == expected, "calendar differs from exchange-calendars: run `make calendar`"
    assert len(days) == 359  # XSHG weekdays closed in 2007..2026, as exchange-calendars 4.13.2 says


def test_workday_vectors_match_exchange_calendars():
    generator = load_module(CONTRACTS / "vectors" / "generate.py")
    cases = generator.build_cases(generator.load_calendar())
    committed = json.loads((CONTRACTS / "vectors" / "workday.json").read_text())
    assert committed["cases"] == cases, "vectors differ from exchange-calendars: run `make vectors`"
    assert len(cases) >= 300
