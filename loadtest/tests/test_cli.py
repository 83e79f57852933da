"""Which commands point the package managers at a registry or the mirror (cli.FETCHING)."""

from __future__ import annotations

import pytest

from loadtest import cli
from loadtest.packages import registries


@pytest.fixture
def probes(monkeypatch) -> list[str]:
    """The commands before which the registry choice was made, instead of making it."""
    made: list[str] = []
    monkeypatch.setattr(registries, "apply_offline_env", lambda **_: made.append("probe"))
    return made


def test_reading_commands_ask_no_registry(probes, tmp_path, capsys):
    # A report or a comparison of runs that are not there: the command answers, no probe.
    assert cli.main(["report", "absent", "--results-dir", str(tmp_path)]) == 2
    assert cli.main(["compare", "old,new", "--results-dir", str(tmp_path)]) == 2
    assert cli.main(["validate"]) == 0
    assert probes == []
    assert "[registries]" not in capsys.readouterr().out


def test_building_commands_choose_each_package_source_first(probes):
    # The choice is made before the command runs (here it then stops at the unknown stack).
    assert cli.main(["check", "--servers", "no-such-stack"]) != 0
    assert probes == ["probe"]


def test_every_fetching_command_is_a_registered_command():
    registered = set()
    for action in cli.parser()._subparsers._group_actions:
        for sub in action.choices.values():
            registered.add(sub.get_default("func"))
            for nested in sub._subparsers._group_actions if sub._subparsers else []:
                registered |= {p.get_default("func") for p in nested.choices.values()}
    assert set(cli.FETCHING) <= registered
    assert cli.check.cmd_check in cli.FETCHING and cli.report.cmd_report not in cli.FETCHING
