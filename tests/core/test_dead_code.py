"""No module-level function or class of ours is used nowhere, not even by a test (issue 36 §7:
"8 dead functions"; removed in 0ce6c315 and 0061928e, unguarded since).

A name counts as used when it appears anywhere in our modules, the tests, the benchmarks, the
scripts or the packaging files beyond its own definition: in code, in a string (``getattr`` by
name, entry points, monkeypatched targets) or in a comment (a word count, lenient by design).
Dunder functions a module defines for Python (``__getattr__``, ``__dir__``) are Python's to call.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from tests.core.private_members import OURS

ROOT = Path(__file__).resolve().parents[2]
READERS = OURS + ("tests", "benchmarks", "scripts")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: a module-level def or class: it starts its line
TOP_LEVEL = re.compile(r"^(?:async[ \t]+def|def|class)[ \t]+([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)


def unused_definitions(root: Path = ROOT, defining: tuple[str, ...] = OURS,
                       reading: tuple[str, ...] = READERS) -> list[str]:
    """``path: name`` for each module-level function or class of ``defining`` whose name
    appears nowhere in ``reading`` but in its own definitions (code, strings and comments
    count: a cheap word count, lenient by design)."""
    words: Counter = Counter()
    defined: list[tuple[str, str]] = []
    for folder in reading:
        for path in sorted((root / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            words.update(WORD.findall(text))
            if folder in defining:
                defined += [(path.relative_to(root).as_posix(), match.group(1)) for match in TOP_LEVEL.finditer(text)]
    for packaging in ("pyproject.toml", "setup.py"):
        if (root / packaging).exists():
            words.update(WORD.findall((root / packaging).read_text(encoding="utf-8")))
    definitions = Counter(name for _, name in defined)
    return [f"{path}: {name}" for path, name in defined
            if words[name] <= definitions[name] and not (name.startswith("__") and name.endswith("__"))]


def test_no_function_or_class_of_ours_is_used_nowhere():
    unused = unused_definitions()
    assert unused == [], "defined but named nowhere, not even by a test (remove them): " + ", ".join(unused)


def test_the_scan_sees_an_unused_function(tmp_path):
    (tmp_path / "core").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "core" / "x.py").write_text("def used():\n    pass\n\n\ndef by_name():\n    pass\n\n\n"
                                            "def dead():\n    pass\n\n\ndef __getattr__(name):\n    pass\n")
    (tmp_path / "tests" / "t.py").write_text("from core.x import used\n\ngetattr(x, 'by_name')\n")
    assert unused_definitions(tmp_path, ("core",), ("core", "tests")) == ["core/x.py: dead"]
