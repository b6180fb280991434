"""The main screen's areas (issue 36 §3): panes that own their state and work, a screen that
hands what crosses them to the component that takes it, and components it holds (no
controller mixin is left).

An area (tui/panes/area.py) runs its workers on its own widget and numbers its own
requests; it never imports another area, a controller or a screen: what one area asks of
another is a message (a Request) the screen hands on. The mixins of ``MainScreen`` and the
``NotImplementedError`` stubs through which they reach each other may only shrink: lower
the numbers below when a controller becomes an area.
"""

from __future__ import annotations

import ast
from pathlib import Path

from mailtriage.tui import messages
from tests.core.parsed import parse

TUI = Path(messages.__file__).resolve().parent
#: Controller mixins of MainScreen (11 before the areas: overview, tracker and search went; alerts,
#: proposals, accounts, compose, listing and reading became components the screen holds).
MAX_MIXINS = 0
#: Methods (handlers, workers and properties too) that MainScreen and its base define (167 when
#: issue 36 was filed; 152 before compose and listing became components, 119 before reading did).
#: 94 before the components became widgets (their base: owns, cancel_group, worker_changed); 97
#: before compose, proposals, reading, the listing, accounts and batch took their own answers; 80
#: before the components took the Requests (24 pane requests and 6 crossing messages had a handler
#: each on the screen; one generic handler hands them on now: tests/tui/test_component_messages.py).
MAX_METHODS = 50
#: ``raise NotImplementedError`` stubs in tui/controllers/ and tui/screens/main.py (20 before; the
#: last, SourcesView.show_sources, is a protocol's method now).
MAX_STUBS = 0
#: The pane modules an area may import besides tui/panes/area.py: its own parts.
PARTS = {"threads": {"thread_list", "row_marks"}, "row_marks": {"thread_list"}}


def _parse(path: Path) -> ast.Module:
    return parse(path)


def _runtime_imports(tree: ast.Module) -> set[str]:
    """Modules imported outside ``if TYPE_CHECKING:`` blocks."""
    typing_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and ast.unparse(block.test) == "TYPE_CHECKING" for node in ast.walk(block)}
    return {node.module for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and id(node) not in typing_only}


def _areas() -> dict[str, set[str]]:
    """Each area module of tui/panes (one that imports tui/panes/area.py) and what it imports."""
    found = {}
    for path in sorted((TUI / "panes").glob("*.py")):
        imports = _runtime_imports(_parse(path))
        if "mailtriage.tui.panes.area" in imports:
            found[path.stem] = imports
    return found


def test_the_areas_are_panes_that_own_their_work():
    assert {"tracker", "folders", "threads", "row_marks"} <= set(_areas())


def test_an_area_imports_no_other_area_nor_a_controller_or_screen():
    found = []
    for name, imports in _areas().items():
        allowed = {"area", *PARTS.get(name, ())}
        for module in imports:
            if module.startswith(("mailtriage.tui.controllers", "mailtriage.tui.screens", "mailtriage.tui.app")):
                found.append(f"{name} imports {module}")
            elif module.startswith("mailtriage.tui.panes.") and module.rpartition(".")[2] not in allowed:
                found.append(f"{name} imports {module}")
    assert found == [], "areas talk through messages the screen routes: " + ", ".join(found)


def test_the_import_scan_skips_type_checking_blocks():
    tree = ast.parse("from typing import TYPE_CHECKING\nfrom a import b\nif TYPE_CHECKING:\n    from c import d\n")
    assert _runtime_imports(tree) == {"typing", "a"}


def _stubs(path: Path) -> list[str]:
    def raises_not_implemented(stmt: ast.stmt) -> bool:
        return isinstance(stmt, ast.Raise) and stmt.exc is not None and "NotImplementedError" in ast.unparse(stmt.exc)

    return [f"{path.stem}.{node.name}" for node in ast.walk(_parse(path))
            if isinstance(node, ast.FunctionDef) and any(raises_not_implemented(stmt) for stmt in node.body)]


def test_the_controller_stubs_only_shrink():
    stubs = [stub for path in [*sorted((TUI / "controllers").glob("*.py")), TUI / "screens" / "main.py"]
             for stub in _stubs(path)]
    assert len(stubs) <= MAX_STUBS, f"{len(stubs)} stubs (at most {MAX_STUBS}): make an area, not a stub: {stubs}"


def test_the_main_screen_mixins_only_shrink():
    from mailtriage.tui.controllers.base import ControllerBase
    from mailtriage.tui.screens.main import MainScreen

    mixins = [cls.__name__ for cls in MainScreen.__mro__[1:]
              if issubclass(cls, ControllerBase) and cls is not ControllerBase]
    assert len(mixins) <= MAX_MIXINS, f"{len(mixins)} controller mixins (at most {MAX_MIXINS}): {mixins}"


def test_the_main_screen_methods_only_shrink():
    """What the screen and its mixins define themselves: a component's methods are its own."""
    from mailtriage.tui.controllers.base import ControllerBase
    from mailtriage.tui.screens.main import MainScreen

    owners = [cls for cls in MainScreen.__mro__ if cls is MainScreen or issubclass(cls, ControllerBase)
              and cls.__module__.startswith("mailtriage.")]
    methods = {name for cls in owners for name, value in vars(cls).items()
               if callable(value) or isinstance(value, (property, staticmethod, classmethod))}
    assert len(methods) <= MAX_METHODS, f"{len(methods)} methods on MainScreen (at most {MAX_METHODS}): a component"


#: The components MainScreen holds (issue 36 §2): no mixin, no screen imported.
COMPONENTS = {"alerts": "Alerts", "banner": "Banner", "publish_mark": "PublishMark", "batch": "Batch",
              "keys": "ReaderKeys", "proposals": "Proposals", "accounts": "Accounts", "compose": "Compose",
              "listing": "Listing", "reading": "Reading", "thread_ahead": "ThreadAhead",
              "jump": "Jump", "search": "Search"}
#: Those that are hidden widgets running their work on themselves and taking its answers (their base).
WIDGETS = {"compose", "proposals", "keys", "reading", "thread_ahead", "listing", "accounts", "batch",
           "jump", "search"}


def test_the_components_the_screen_holds_are_no_mixins_and_import_no_screen():
    import importlib

    from mailtriage.tui.controllers.base import ControllerBase
    from mailtriage.tui.controllers.component import Component

    found = []
    for module, name in COMPONENTS.items():
        path = TUI / "controllers" / f"{module}.py"
        cls = getattr(importlib.import_module(f"mailtriage.tui.controllers.{module}"), name)
        if issubclass(cls, ControllerBase):
            found.append(f"{name} is a controller mixin")
        if module in WIDGETS and not issubclass(cls, Component):
            found.append(f"{name} is not a Component (a hidden widget that owns its workers)")
        found += [f"{module} imports {imported}" for imported in _runtime_imports(_parse(path))
                  if imported.startswith(("mailtriage.tui.screens", "mailtriage.tui.app", "mailtriage.tui.controllers"))
                  and imported != "mailtriage.tui.controllers.component"]  # their base: a hidden widget
    assert found == [], "a component gets what it needs passed in, typed: " + ", ".join(found)


def test_no_mixin_handler_shadows_another():
    """A handler named ``on_x`` in two of MainScreen's classes: Textual calls both for a message,
    but a direct ``self.on_x(...)`` reaches only the first in the MRO. Found after the start and
    areas merges: the listing controller's ``on_thread_loaded`` took the reading controller's
    direct call, so a personal-account message read ahead was never shown on Enter."""
    from mailtriage.tui.screens.main import MainScreen

    owners: dict[str, list[str]] = {}
    for cls in MainScreen.__mro__:
        if cls.__module__.startswith("mailtriage."):
            for name in cls.__dict__:
                if name.startswith("on_"):
                    owners.setdefault(name, []).append(cls.__name__)
    shadowed = {name: classes for name, classes in owners.items() if len(classes) > 1}
    assert shadowed == {}, f"give these handlers names of their own (@on): {shadowed}"


def test_the_backend_console_is_the_sources_view_each_check_reaches():
    """The listing hands each sources check to every ``SourcesView`` on the screen stack (a
    protocol the console meets, no longer a base class with a stub): a console that stopped
    meeting it would keep the matrix it opened with."""
    from mailtriage.tui.controllers.listing import SourcesView
    from mailtriage.tui.screens.console import ConsoleScreen
    from mailtriage.tui.screens.main import MainScreen

    assert issubclass(ConsoleScreen, SourcesView)
    assert not issubclass(MainScreen, SourcesView)
