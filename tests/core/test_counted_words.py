"""A count the user reads agrees with its noun: "1 changed file", "2 changed files", never
"1 changed file(s)" (issue 35 §6: wrong words). A scan of the front ends' and the application's
string literals, f-strings included, so a new "(s)" is caught where it is written."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.core.parsed import parse

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("tui", "cli", "application")


def hedged_plurals(tree: ast.Module) -> list[int]:
    """Lines of the string literals in ``tree`` that hedge a plural with "(s)"."""
    return sorted({node.lineno for node in ast.walk(tree)
                   if isinstance(node, ast.Constant) and isinstance(node.value, str)
                   and "(s)" in node.value and not _is_docstring(node, tree)})


def _is_docstring(node: ast.Constant, tree: ast.Module) -> bool:
    for parent in ast.walk(tree):
        if isinstance(parent, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = parent.body
            if body and isinstance(body[0], ast.Expr) and body[0].value is node:
                return True
    return False


def test_no_count_is_shown_with_a_hedged_plural():
    found = [f"{path.relative_to(ROOT)}:{line}"
             for folder in FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))
             for line in hedged_plurals(parse(path))]
    assert not found, "say '1 file' / '2 files', not 'file(s)': " + ", ".join(found)


def test_the_scan_sees_a_hedged_plural_inside_an_f_string_and_not_in_a_docstring():
    tree = ast.parse('"""Counts thread(s)."""\ndef f(n):\n    return f"{n} thread(s) with new mail"\n')
    assert hedged_plurals(tree) == [3]
