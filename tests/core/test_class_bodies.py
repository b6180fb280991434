"""A class body binds each name once.

Two ``features = SourceFeatures(...)`` lines in one backend class (a merge that kept both
sides) are legal Python: the second silently wins and a declared feature disappears.
"""

import ast
from pathlib import Path

from tests.core.parsed import parse

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("application", "backends", "cli", "core", "demo", "modes", "trackers", "tui")


def names_bound_twice(path: Path, root: Path = ROOT) -> list[str]:
    found = []
    for cls in ast.walk(parse(path)):
        if not isinstance(cls, ast.ClassDef):
            continue
        seen: set[str] = set()
        for stmt in cls.body:
            if isinstance(stmt, ast.Assign):
                names = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                names = [stmt.target.id]
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and not stmt.decorator_list:
                names = [stmt.name]  # (property setters and overloads carry decorators)
            else:
                continue
            for name in names:
                if name in seen:
                    found.append(f"{path.relative_to(root)}:{stmt.lineno}: {cls.name}.{name}")
                seen.add(name)
    return found


def test_no_class_binds_a_name_twice():
    found = [hit for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
             for hit in names_bound_twice(path)]
    assert not found, "bound twice in one class body:\n" + "\n".join(found)


def test_the_check_sees_a_doubled_declaration(tmp_path):
    module = tmp_path / "source.py"
    module.write_text("class Source:\n    features = 1\n    kind = 'x'\n    features = 2\n", encoding="utf-8")
    assert names_bound_twice(module, tmp_path) == ["source.py:4: Source.features"]
