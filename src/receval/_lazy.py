"""Modules loaded on first use, for the start-up of small runs (issue #33).

``pyarrow.compute`` takes 0.05–0.08 s to load (its kernels' docstrings are
built at import); a run that only reads a small file and evaluates it never
calls it. :data:`pc` stands for the module until an attribute is read from it,
then loads it once: ``pc.equal(a, b)`` is ``pyarrow.compute.equal(a, b)``.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["LazyModule", "pc"]


class LazyModule:
    """A module imported when one of its attributes is first read.

    Example:
        >>> json = LazyModule("json")
        >>> json.dumps([1])
        '[1]'
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # copy, pickle and friends probing: not the module's
            raise AttributeError(attr)
        if self._module is None:
            self._module = importlib.import_module(self._name)
        value = getattr(self._module, attr)
        self.__dict__[attr] = value  # found directly from now on
        return value

    def __reduce__(self) -> tuple[Any, tuple[str]]:  # pickled by name, loaded or not
        return LazyModule, (self._name,)

    def __repr__(self) -> str:
        state = "loaded" if self._module is not None else "not loaded yet"
        return f"<module {self._name!r}, {state}>"


#: ``pyarrow.compute``, loaded on first use
pc: Any = LazyModule("pyarrow.compute")
