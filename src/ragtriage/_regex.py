"""Regular expressions compiled on first use.

The rules judge holds about two hundred module-level patterns; compiling them all costs a
one-trace ``ragtriage diagnose`` about a quarter of its start-up, and most of them (the
Chinese ones for an English answer, the checks of answer shapes a trace does not have)
are never used by a short run. :func:`lazy_compile` returns a stand-in that compiles on
its first use and then holds the compiled pattern's own bound methods as attributes, so
a call costs what a call on a :class:`re.Pattern` costs. Matching is unchanged: it is
the same ``re.compile(pattern, flags)``.
"""

from __future__ import annotations

import re
from typing import Any, cast

__all__ = ["compile_all", "lazy_compile"]

#: What the stand-in takes over from the compiled pattern on first use.
_PATTERN_ATTRS = (
    "search",
    "match",
    "fullmatch",
    "finditer",
    "findall",
    "sub",
    "subn",
    "split",
    "scanner",
    "flags",
    "groups",
    "groupindex",
)


class _LazyPattern:
    """A pattern compiled when an attribute other than ``pattern`` is first read."""

    def __init__(self, pattern: str, flags: int) -> None:
        self.pattern = pattern  # as re.Pattern.pattern: the source, no compile needed
        self._flags = flags

    def _compile(self) -> re.Pattern[str]:
        compiled = re.compile(self.pattern, self._flags)
        for name in _PATTERN_ATTRS:
            self.__dict__[name] = getattr(compiled, name)
        return compiled

    def __getattr__(self, name: str) -> Any:
        # called only for an attribute not set yet: the first use of the pattern
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._compile(), name)

    def __repr__(self) -> str:
        return f"lazy_compile({self.pattern!r}, {self._flags!r})"


_PENDING: list[_LazyPattern] = []


def lazy_compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, done when the pattern is first used."""
    lazy = _LazyPattern(pattern, flags)
    _PENDING.append(lazy)
    return cast("re.Pattern[str]", lazy)


def compile_all() -> None:
    """Compile every pattern not compiled yet: before forking workers, which would each
    compile them again."""
    for lazy in _PENDING:
        if "search" not in lazy.__dict__:
            lazy._compile()
    _PENDING.clear()
