"""The optional compiled module (``receval._native``), loaded once.

``NATIVE`` is the module, or None when it was not built (no C compiler at
install time) or ``RECEVAL_NATIVE=0`` is set; every user of it has a NumPy
path that gives the same bits.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["NATIVE"]


def _load() -> Any:
    if os.environ.get("RECEVAL_NATIVE", "1") == "0":
        return None
    try:
        from receval import _native
    except ImportError:  # no C compiler at install time: the NumPy paths
        return None
    return _native


NATIVE: Any = _load()
