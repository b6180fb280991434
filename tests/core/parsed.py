"""The source files' syntax trees, parsed once per test process (issue 36 §8).

The structural tests (import hygiene, layers, private members, class bodies, the façade, the
TUI's areas) each walked the trees of the same folders: every file was parsed again by each.
``parse(path)`` keeps a file's tree while the file is unchanged (its modification time and
size), so a test that writes a file (the checks' own failing examples) gets its new tree.
The trees are shared: read them, never change them.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.lru_cache(maxsize=None)
def _parsed(path: str, _mtime_ns: int, _size: int) -> ast.Module:
    return ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)


def parse(path: Path) -> ast.Module:
    """The syntax tree of the Python file ``path`` (shared: do not change it)."""
    stat = path.stat()
    return _parsed(str(path), stat.st_mtime_ns, stat.st_size)
