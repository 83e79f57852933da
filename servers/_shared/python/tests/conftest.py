import pytest
from python_contract_data import CALENDAR_FILE


@pytest.fixture(scope="session")
def calendar():
    from serverlab_contract import load_calendar

    return load_calendar(str(CALENDAR_FILE))
