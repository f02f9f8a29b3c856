"""How to install an optional extra, worded for where ragtriage runs from.

From a PyPI install that is ``pip install 'ragtriage[serve]'``; from a source checkout
installed editable (``make demo`` / ``make test`` in a clone) the same command would fetch
the released package instead of the clone's code, so the hint names the clone's own
commands: the Makefile target when there is one, and ``pip install -e`` of the checkout
with the interpreter that is running.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

__all__ = ["install_hint", "source_checkout"]

#: Extras with a Makefile target that installs them (and uses them).
_MAKE_TARGETS = {"serve": "make serve"}


def source_checkout(package_dir: Path | None = None) -> Path | None:
    """The root of the source checkout this package is imported from (``src/ragtriage``
    under a ``pyproject.toml`` that names ragtriage), or ``None`` for an installed copy."""
    here = package_dir if package_dir is not None else Path(__file__).resolve().parent
    if here.parent.name != "src":
        return None
    root = here.parent.parent
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if re.search(r'^name\s*=\s*"ragtriage"', text, re.MULTILINE) else None


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it lies under it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path) if rel.startswith("..") else rel


def install_hint(extra: str, *, package_dir: Path | None = None) -> str:
    """The command(s) that install ``extra`` for the ragtriage that is running."""
    root = source_checkout(package_dir)
    if root is None:
        return f"pip install 'ragtriage[{extra}]'"
    target = root.resolve()
    spec = f".[{extra}]" if target == Path.cwd().resolve() else f"{_shown(target)}[{extra}]"
    pip = f"{_shown(Path(sys.executable))} -m pip install -e '{spec}'"
    make = _MAKE_TARGETS.get(extra)
    if make is not None and (root / "Makefile").is_file():
        where = "" if target == Path.cwd().resolve() else f" (in {_shown(target)})"
        return f"{make}{where}, or {pip}"
    return pip
