"""Packages that load their submodules on first use of a name (start-up time, see
benchmarks/startup.py): the one loader behind their module ``__getattr__``/``__dir__``."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def load(package: str, exports: Mapping[str, str], namespace: dict[str, Any], name: str) -> Any:
    """``name`` from the submodule ``exports`` maps it to, kept in the package's
    ``namespace`` so the next lookup is a plain attribute."""
    module = exports.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{package}.{module}"), name)
    namespace[name] = value
    return value


def names(exports: Mapping[str, str], namespace: Mapping[str, Any]) -> list[str]:
    """The package's names for ``dir()``: what it holds and what it can load."""
    return sorted({*namespace, *exports})
