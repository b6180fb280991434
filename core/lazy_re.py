"""Regular expressions compiled on first use, for module-level patterns a command may never use.

Compiling is most of what a regex costs at import: ``core/inert.py``'s character classes (the
whole C0/C1, bidi and tag ranges) took ~2.7 ms of a ``mailtriage --version`` that never uses
them (issue 36 §7). ``lazy(source, flags)`` stands for ``re.compile(source, flags)``: the first
method or attribute read compiles it and keeps the compiled pattern's bound methods in slots,
so a later ``P.search(text)`` is one slot read, as cheap as the compiled pattern's own
(tests/core/test_lazy_re.py). Only method calls and the plain attributes go through it:
code that hands the pattern on (``re.sub(P, …)``, ``isinstance(P, re.Pattern)``) takes
``compiled(P)``. Two threads may both compile it once; both keep an equal pattern.
"""

from __future__ import annotations

import re
from typing import AnyStr, cast

__all__ = ["compiled", "lazy"]

_READS = ("match", "search", "fullmatch", "sub", "subn", "split", "findall", "finditer", "scanner",
          "pattern", "flags", "groups", "groupindex")


class _LazyPattern:
    __slots__ = ("_source", "_flags", "_compiled", *_READS)

    def __init__(self, source: str | bytes, flags: int) -> None:
        self._source = source
        self._flags = flags

    def __getattr__(self, name: str) -> object:  # only for a slot not yet filled
        if name not in _READS and name != "_compiled":
            raise AttributeError(name)
        pattern = re.compile(self._source, self._flags)
        for read in _READS:
            object.__setattr__(self, read, getattr(pattern, read))
        object.__setattr__(self, "_compiled", pattern)
        return getattr(self, name)

    def __repr__(self) -> str:
        return f"lazy({self._source!r}, {self._flags!r})"


def lazy(source: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """``re.compile(source, flags)``, compiled when first used (typed as the pattern it stands for)."""
    return cast("re.Pattern[AnyStr]", _LazyPattern(source, flags))


def compiled(pattern: re.Pattern[AnyStr]) -> re.Pattern[AnyStr]:
    """The compiled pattern itself, for code that passes it on (``pattern`` may be either)."""
    if isinstance(pattern, _LazyPattern):
        return cast("re.Pattern[AnyStr]", pattern._compiled)
    return pattern
