"""Checks for the modules that hold every private member of a library we use (issue 36 §4):
tui/textual_private.py, backends/imap/imaplib_private.py and backends/gnupg_private.py.

Each lists its members as ``MEMBERS`` rows ``(module, class, member, use)``; ``check_member``
fails, naming the member, when the installed library no longer has it in the shape we use.
``private_reads_outside`` finds a private member read anywhere else in a folder.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from pathlib import Path

from tests.core.parsed import parse

ROOT = Path(__file__).resolve().parents[2]
#: our own top-level folders: a private name they define is ours to use
OURS = ("application", "backends", "core", "tui", "cli", "trackers", "modes", "themes", "demo")
#: private names of the standard library we may use: os._exit ends a forked child at once
STDLIB = {"_exit"}
#: the one module per library that may use its private members
SEAMS = (ROOT / "tui" / "textual_private.py", ROOT / "backends" / "imap" / "imaplib_private.py",
         ROOT / "backends" / "gnupg_private.py")


def check_member(module: str, owner: str, member: str, use: tuple[str, ...], seam: str) -> None:
    """Fail, naming ``module.owner.member``, when it is gone or no longer takes what ``seam`` passes.

    ``use``: ("method", parameter names…) is a method called with those parameters first;
    ("attribute",) an instance attribute, looked for on an instance or, when the class
    cannot be made without a server, as ``self.<member> =`` (annotated or not) in the class's own code;
    ("class", base) a module-level class with that base; ("property",) a property of the class
    (read on an instance it may need a running app)."""
    where = ".".join(part for part in (module, owner, member) if part)
    loaded = importlib.import_module(module)
    cls = getattr(loaded, owner) if owner else None
    if use[0] == "method":
        method = getattr(cls, member, None)
        assert callable(method), f"{where} is gone from the installed version: update {seam}"
        parameters = list(inspect.signature(method).parameters)[1:]
        assert parameters[:len(use) - 1] == list(use[1:]), (
            f"{where} now takes {parameters}; {seam} passes {list(use[1:])}")
    elif use[0] == "property":
        assert isinstance(getattr(cls, member, None), property), (
            f"{where} is gone or no longer a property in the installed version: update {seam}")
    elif use[0] == "attribute":
        try:
            instance = cls()
        except Exception:  # noqa: BLE001 - it needs a server (IMAPClient connects): read its code instead
            assert re.search(rf"self\.{member}\s*(:[^=\n]*)?=", inspect.getsource(cls)), (
                f"{where} is no longer set by the installed version: update {seam}")
        else:
            assert hasattr(instance, member), f"{where} is gone from the installed version: update {seam}"
    else:
        found = getattr(loaded, member, None)
        assert inspect.isclass(found) and found.__mro__[1].__name__ == use[1], (
            f"{where} is gone or no longer a {use[1]} from the installed version: update {seam}")


def private_reads(path: Path) -> tuple[set[str], set[str]]:
    """Private names a module reads as attributes, and those it imports from another package."""
    tree = parse(path)
    attributes = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 0
                and node.module and not node.module.startswith("mailtriage") for alias in node.names}
    return ({name for name in attributes if name.startswith("_") and not name.startswith("__")},
            {name for name in imported if name.startswith("_") and not name.startswith("__")})


@functools.lru_cache(maxsize=4)  # both seams' tests read the same tree: parsed once
def defined_names(folders: tuple[str, ...] = OURS, root: Path = ROOT, skip: tuple[Path, ...] = ()) -> frozenset[str]:
    """Every name our own code defines: functions, classes, assigned attributes and variables."""
    names: set[str] = set()
    for folder in folders:
        for path in (root / folder).rglob("*.py"):
            if path in skip:
                continue
            for node in ast.walk(parse(path)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(node.name)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    names.add(node.attr)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names.add(node.id)
    return frozenset(names)


def private_reads_outside(folder: str, seams: tuple[Path, ...], root: Path = ROOT,
                          folders: tuple[str, ...] = OURS) -> list[str]:
    """``path: name`` for each private member a module of ``folder`` (the seams aside) imports
    from a library, or reads as an attribute when our own code (the seams aside) defines no
    such name."""
    ours = defined_names(folders, root, skip=seams) | STDLIB
    found = []
    for path in sorted((root / folder).rglob("*.py")):
        if path not in seams:
            attributes, imported = private_reads(path)
            found += [f"{path.relative_to(root)}: {name}" for name in sorted((attributes - ours) | imported)]
    return found
