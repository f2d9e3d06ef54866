"""Metric plugins named on the command line (``--plugin``): a module or a Python file
whose import registers metrics (:func:`receval.register_metric`,
``@receval.metric``). Packages installed with a ``receval.metrics`` entry point need
no flag: :func:`receval.metrics.registry.load_plugins` finds them."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from receval.errors import MetricError

__all__ = ["import_plugin"]


def import_plugin(name: str, *, flag: str = "plugin=") -> ModuleType:
    """Import the module ``name`` (``my_metrics``, ``pkg.metrics``) or the Python
    file it names (``./my_metrics.py``: imported as the module ``my_metrics``, its
    folder put first on ``sys.path`` so that other processes, such as Spark's
    workers started from here, can import it by name as well).

    Raises:
        MetricError: no such module or file, or its import failed (``flag`` names
            the option in the caller's syntax; the exception's type and message).
    """
    path = Path(name)
    if name.endswith(".py"):
        if not path.is_file():
            raise MetricError(f"{flag} {name}: no such Python file")
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        module_name = path.stem
        if module_name in sys.modules:
            return sys.modules[module_name]
        spec = importlib.util.spec_from_file_location(module_name, path.resolve())
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as e:
            del sys.modules[module_name]
            raise MetricError(f"{flag} {name}: importing it failed: {type(e).__name__}: {e}") from e
        return module
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name is not None and name.startswith(e.name):
            raise MetricError(
                f"{flag} {name}: no module named {e.name!r} (a module on the Python path, "
                "or a path to a .py file)"
            ) from e
        raise MetricError(f"{flag} {name}: importing it failed: {type(e).__name__}: {e}") from e
    except MetricError:
        raise
    except Exception as e:
        raise MetricError(f"{flag} {name}: importing it failed: {type(e).__name__}: {e}") from e
