"""Paths of the shared contract data, for the tests of serverlab_contract."""

import json
import sys
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
REPO_ROOT = PACKAGE_ROOT.parent.parent.parent
CONTRACTS = REPO_ROOT / "contracts"
CALENDAR_FILE = CONTRACTS / "calendar" / "xshg-non-trading-weekdays.txt"

# Test this checkout's package, not an installed copy.
if str(PACKAGE_ROOT) not in sys.path:
    sys.path.insert(0, str(PACKAGE_ROOT))


def load_vectors(name):
    return json.loads((CONTRACTS / "vectors" / name).read_text(encoding="utf-8"))
