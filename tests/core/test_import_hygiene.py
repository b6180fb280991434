"""The dependency direction of the layers, enforced on the source text and at run time.

The same rules, and the front ends' own, are declared for import-linter in ``.importlinter``
(tests/core/test_import_contracts.py); this scan needs nothing installed and also reads
imports inside functions.
"""

import ast
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from tests.core.parsed import parse

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(folder: str, root: Path = ROOT) -> list[tuple[str, str]]:
    found = []
    for path in sorted((root / folder).rglob("*.py")):
        tree = parse(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [(str(path.relative_to(root)), alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.append((str(path.relative_to(root)), node.module))
    return found


FORBIDDEN = {
    "backends": ("textual", "rich", "mailtriage.tui", "mailtriage.application.flows", "mailtriage.cli", "mailtriage.trackers",
                 "mailtriage.application"),
    "trackers": ("textual", "rich", "mailtriage.tui", "mailtriage.backends", "mailtriage.application.flows", "mailtriage.cli",
                 "mailtriage.application"),
    "core": ("textual", "rich", "mailtriage.tui", "mailtriage.backends", "mailtriage.trackers", "mailtriage.application.flows",
             "mailtriage.application", "mailtriage.cli"),
    "application/flows": ("textual", "rich", "mailtriage.tui", "mailtriage.cli", "mailtriage.application"),
    "application": ("textual", "rich", "mailtriage.tui", "mailtriage.cli"),
    "cli": ("mailtriage.backends", "mailtriage.trackers", "mailtriage.application.flows"),
    "modes": ("textual", "rich", "mailtriage.tui", "mailtriage.application.flows", "mailtriage.cli", "mailtriage.trackers",
              "mailtriage.application"),
}
#: Below a forbidden layer, the part a folder belongs to (the flows import one another).
OWN = {"application/flows": "mailtriage.application.flows"}


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_layer_never_imports_upwards(folder):
    own = OWN.get(folder)
    bad = [
        (path, mod)
        for path, mod in imported_modules(folder)
        if any(mod == f or mod.startswith(f + ".") for f in FORBIDDEN[folder])
        and not (own and (mod == own or mod.startswith(own + ".")))
    ]
    assert bad == [], f"{folder}/ imports a layer above it: {bad}"


def test_hygiene_check_catches_a_violation(tmp_path):
    # The scanner itself must see an offending import, or the test above proves nothing.
    folder = tmp_path / "backends"
    folder.mkdir()
    (folder / "bad.py").write_text("from textual.app import App\nimport mailtriage.tui.app\n")
    mods = [m for _, m in imported_modules("backends", tmp_path)]
    assert "textual.app" in mods and "mailtriage.tui.app" in mods


def test_backends_and_trackers_load_without_textual():
    code = (
        "import sys\n"
        "import mailtriage.backends.registry, mailtriage.backends.security_cc, mailtriage.core.projectconfig\n"
        "import pkgutil, importlib, mailtriage.backends, mailtriage.trackers\n"
        "for pkg in (mailtriage.backends, mailtriage.trackers):\n"
        "    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "        importlib.import_module(info.name)\n"
        "loaded = [m for m in sys.modules if m == 'textual' or m.startswith(('textual.', 'mailtriage.tui'))]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


PRODUCT_PACKAGES = ("application", "backends", "cli", "core", "demo", "modes", "trackers", "tui", "themes")


def imports_in_functions(node: ast.AST, inside: bool = False) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements below ``node`` that sit inside a function (one walk of the tree: a
    nested function's imports are met once)."""
    for child in ast.iter_child_nodes(node):
        if inside and isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        yield from imports_in_functions(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))


def unexplained_function_imports(path: Path, root: Path = ROOT) -> list[str]:
    """Imports inside a function with no comment saying why: none on the import itself,
    none on the import block it belongs to, and none on the line just above that block
    (a comment line, or ``try:  # why``)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    for node in imports_in_functions(parse(path)):
        first = node.lineno - 1
        while first > 0 and lines[first - 1].lstrip().startswith(("import ", "from ")):
            first -= 1  # the top of this block of imports
        block = lines[first:node.end_lineno]
        explained = any("#" in line for line in block) or (first > 0 and "#" in lines[first - 1])
        if not explained:
            found.append(f"{path.relative_to(root)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return sorted(set(found))


def test_imports_inside_functions_say_why():
    """Imports sit at module level; one inside a function (a lazy import that measurably
    helps start-up, or an import cycle) carries a comment saying so."""
    found = [hit for package in PRODUCT_PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
             for hit in unexplained_function_imports(path)]
    assert not found, "imports inside functions without a comment saying why:\n" + "\n".join(found)


def test_the_function_import_check_catches_an_unexplained_import(tmp_path):
    module = tmp_path / "pkg" / "m.py"
    module.parent.mkdir()
    module.write_text("def quiet():\n    import json\n\n\ndef explained():\n"
                      "    # lazy: loads only for this rare command\n    import csv\n    import zlib\n")
    assert unexplained_function_imports(module, tmp_path) == ["pkg/m.py:2: import json"]
    # One in a class body (not in a function) is left; one in a function nested in a method is found.
    module.write_text("class C:\n    import os\n\n    def m(self):\n        def inner():\n            import json\n"
                      "        return inner\n")
    assert unexplained_function_imports(module, tmp_path) == ["pkg/m.py:6: import json"]
