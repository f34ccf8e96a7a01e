"""The neighbour layer's helper modules are importable by name (``neighbour_data``,
``neighbour_registry``, ``neighbour_known``) and are not collected as test modules."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

collect_ignore = [p.name for p in HERE.glob("neighbour_*.py")]
