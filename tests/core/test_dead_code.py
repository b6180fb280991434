"""No module-level function or class of ours is used nowhere, not even by a test (issue 36 §7:
"8 dead functions"; removed in 0ce6c315 and 0061928e, unguarded since).

A name counts as used when it appears anywhere in our modules, the tests, the benchmarks, the
scripts or the packaging files beyond its own definition: in code, in a string (``getattr`` by
name, entry points, monkeypatched targets) or in a comment (a word count, lenient by design).
Dunder functions a module defines for Python (``__getattr__``, ``__dir__``) are Python's to call.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

from tests.core.parsed import parse
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


#: Module-level functions of ours that only the tests call, each with why it stays (may only
#: shrink). Anything else the product never names is dead to the user however well it is tested:
#: its test checks code no user runs (require_send_allowed, joins_thread, equivalence_key and
#: unpack_summaries went so; their tests now check what the product calls).
TEST_ONLY = {
    "core/secrets.py: forget_remembered_secrets": "each test starts as a new process does, knowing no secret",
    "backends/imap/connection.py: unregister_token_provider": "a test's account leaves the process-wide table",
    "application/queue.py: derive_queue": "the queue's rules as one pure call; build_queue runs them row by row",
    "demo/__init__.py: demo_archive": "the demo tests' path to the archive the demo project names",
}


def named_in_code(root: Path = ROOT, folders: tuple[str, ...] = OURS) -> Counter:
    """Each name the code of ``folders`` reads (a name, an attribute, an import, a word of a
    string: ``getattr`` by name, entry points) and the packaging files name. Comments do not
    count, nor does a definition name itself."""
    names: Counter = Counter()
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(parse(path)):
                if isinstance(node, ast.Name):
                    names[node.id] += 1
                elif isinstance(node, ast.Attribute):
                    names[node.attr] += 1
                elif isinstance(node, ast.alias):
                    names[node.name.rpartition(".")[2]] += 1
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    names.update(WORD.findall(node.value))
    for packaging in ("pyproject.toml", "setup.py"):
        if (root / packaging).exists():
            names.update(WORD.findall((root / packaging).read_text(encoding="utf-8")))
    return names


def unused_by_the_product(root: Path = ROOT, folders: tuple[str, ...] = OURS) -> list[str]:
    """``path: name`` for each module-level function or class of ``folders`` that their own code
    never names (the tests and benchmarks may)."""
    named = named_in_code(root, folders)
    return [f"{path.relative_to(root).as_posix()}: {node.name}"
            for folder in folders for path in sorted((root / folder).rglob("*.py"))
            for node in parse(path).body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and not (node.name.startswith("__") and node.name.endswith("__")) and named[node.name] == 0]


def test_no_function_or_class_of_ours_is_called_by_the_tests_alone():
    found = sorted(set(unused_by_the_product()) - set(TEST_ONLY))
    assert found == [], ("the product never names these, only tests do: remove them and test what the product "
                         "calls (or say in TEST_ONLY why a test needs it): " + ", ".join(found))
    gone = sorted(set(TEST_ONLY) - set(unused_by_the_product()))
    assert gone == [], f"the product uses these now, or they went: take them out of TEST_ONLY: {gone}"


def test_the_product_scan_counts_code_and_strings_not_comments(tmp_path):
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "x.py").write_text(
        "def called():\n    pass\n\n\ndef by_name():\n    pass\n\n\ndef in_a_comment():\n    pass\n\n\n"
        "called()\ngetattr(x, 'by_name')  # in_a_comment\n")
    assert unused_by_the_product(tmp_path, ("core",)) == ["core/x.py: in_a_comment"]
