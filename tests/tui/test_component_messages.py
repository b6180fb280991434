"""A component of the main screen takes the answers its own workers post (issue 36 §2).

Components (tui/controllers/component.py) run their workers on themselves and post their answers
to themselves: a handler of such a message on ``MainScreen`` too would be the routing the
components replaced, or a second handler of one answer (Textual calls every handler on the way
up unless one stops it). What crosses components is posted to the screen (``self._screen``'s
``post_message``) as a ``Request``, as a pane's request bubbles there: the tests below hold that
every Request is taken by one component, under Textual's handler name, and that the screen's
one generic handler is its only handler of them.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

from textual.message import Message
from textual.widget import Widget

from mailtriage.tui import messages
from mailtriage.tui.controllers.component import Component
from tests.core.parsed import parse

CONTROLLERS = Path(messages.__file__).resolve().parent / "controllers"


def _posted_to_self(cls: type) -> set[str]:
    """Names of the message classes ``cls``'s methods post with ``self.post_message(X(...))``."""
    tree = parse(Path(inspect.getfile(cls)))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            for call in ast.walk(node):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        and call.func.attr == "post_message" and isinstance(call.func.value, ast.Name)
                        and call.func.value.id == "self" and call.args and isinstance(call.args[0], ast.Call)):
                    made = call.args[0].func
                    names.add(made.id if isinstance(made, ast.Name) else ast.unparse(made))
    return names


def _widget_components() -> list[type]:
    """The hidden widgets of tui/controllers that own work (Component subclasses, and the older
    Alerts and PublishMark, widgets that take their own answers the same way)."""
    found = []
    for path in sorted(CONTROLLERS.glob("*.py")):
        module = importlib.import_module(f"mailtriage.tui.controllers.{path.stem}")
        found += [cls for cls in vars(module).values() if inspect.isclass(cls) and cls.__module__ == module.__name__
                  and issubclass(cls, Widget) and (issubclass(cls, Component) or cls.__name__ in ("Alerts", "PublishMark"))
                  and cls is not Component]
    return found


def _screen_handles(message_cls: type[Message], screen: type | None = None) -> list[str]:
    from mailtriage.tui.screens.main import MainScreen

    found = []
    for cls in (screen or MainScreen).__mro__:
        if not cls.__module__.startswith(("mailtriage.", "tests.")):
            continue
        if message_cls.handler_name in cls.__dict__:
            found.append(f"{cls.__name__}.{message_cls.handler_name}")
        for handled, _method in getattr(cls, "_decorated_handlers", {}).items():
            if handled is message_cls:
                found.append(f"{cls.__name__} @on({message_cls.__name__})")
    return found


def test_the_main_screen_handles_no_answer_a_component_posts_to_itself():
    components = _widget_components()
    assert {"Alerts", "PublishMark"} <= {cls.__name__ for cls in components}
    routed = []
    for component in components:
        module = importlib.import_module(component.__module__)
        for name in sorted(_posted_to_self(component)):
            message_cls = getattr(module, name, None) or getattr(messages, name)
            if not inspect.isclass(message_cls):  # a function that makes the message: its return type
                message_cls = getattr(messages, inspect.signature(message_cls).return_annotation)
            routed += [f"{component.__name__} posts {name}; {where}" for where in _screen_handles(message_cls)]
    assert routed == [], "the component takes its own answers: " + ", ".join(routed)


def test_the_scan_sees_a_screen_handler_of_a_posted_message():
    """The check can fail: PublishMark posts PublishPendingChecked to itself, and a screen that
    handled it too, by name or with @on, would be found."""
    from textual import on

    from mailtriage.tui.controllers.publish_mark import PublishMark
    from mailtriage.tui.screens.main import MainScreen

    class ByName(MainScreen):
        def on_publish_pending_checked(self, message) -> None: ...

    class ByDecorator(MainScreen):
        @on(messages.PublishPendingChecked)
        def mark_checked(self, message) -> None: ...

    assert "PublishPendingChecked" in _posted_to_self(PublishMark)
    assert _screen_handles(messages.PublishPendingChecked) == []
    assert _screen_handles(messages.PublishPendingChecked, ByName) == ["ByName.on_publish_pending_checked"]
    assert _screen_handles(messages.PublishPendingChecked, ByDecorator) == ["ByDecorator @on(PublishPendingChecked)"]


# -- what crosses components: a Request, taken by the one component that lists it ----------------
def _requests() -> set[type[messages.Request]]:
    """Every Request class defined under tui/ (the modules that define them imported first)."""
    import pkgutil

    import mailtriage.tui as tui

    for module in pkgutil.walk_packages(tui.__path__, "mailtriage.tui."):
        if module.name.startswith(("mailtriage.tui.panes.", "mailtriage.tui.controllers.", "mailtriage.tui.screens.main")):
            importlib.import_module(module.name)
    found, todo = set(), [messages.Request]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("mailtriage.tui."):
                found.add(sub)
    return found


def _untaken(requests: set[type], table: dict) -> list[str]:
    return sorted(cls.__qualname__ for cls in requests if cls not in table)


def test_every_request_is_taken_by_one_component_of_the_main_screen():
    """The screen's table, made from its components' TAKES as a start makes it: a Request no
    component takes would reach the screen's handler and be reported as an error."""
    from mailtriage.tui.screens.main import MainScreen

    requests = _requests()
    assert {"ThreadList.Opened", "ThreadView.BackRequested", "ProposalReady", "ThreadOfIssueFound"} <= {
        cls.__qualname__ for cls in requests}
    table = MainScreen()._takers
    assert _untaken(requests, table) == []
    assert _misnamed(table) == [], "a handler has Textual's name of its message (message.handler_name)"


def _misnamed(table: dict) -> list[str]:
    return [f"{cls.__qualname__}: {handler.__name__}" for cls, handler in table.items()
            if handler.__name__ != cls.handler_name]


def test_a_request_no_component_takes_is_found():
    class Stray(messages.Request):
        pass

    from mailtriage.tui.screens.main import MainScreen

    assert _untaken(_requests() | {Stray}, MainScreen()._takers) == [Stray.__qualname__]


def test_a_request_two_components_take_stops_the_screen():
    import pytest

    from mailtriage.tui.controllers.component import takers
    from mailtriage.tui.panes.reader import ThreadView

    class Taker(Widget):
        def on_thread_view_back_requested(self, message) -> None:
            self.took = message

        TAKES = {ThreadView.BackRequested: on_thread_view_back_requested}

    taker, message = Taker(), ThreadView.BackRequested()
    table = takers([taker])
    table[ThreadView.BackRequested](message)  # bound to the component that takes it
    assert taker.took is message
    with pytest.raises(TypeError, match="BackRequested is taken by two components"):
        takers([Taker(), Taker()])


def test_a_handler_not_named_as_textual_names_it_is_found():
    from mailtriage.tui.controllers.component import takers
    from mailtriage.tui.panes.reader import ThreadView

    class Misnamed(Widget):
        def back(self, message) -> None: ...

        TAKES = {ThreadView.BackRequested: back}

    assert _misnamed(takers([Misnamed()])) == ["ThreadView.BackRequested: back"]



def test_the_main_screen_hands_every_request_on_with_its_one_handler():
    """No handler of a Request on the screen but the generic one: a named ``on_…`` (or an
    ``@on``) there would act beside the component, or instead of the table."""
    from mailtriage.tui.screens.main import MainScreen

    found = [where for cls in _requests() for where in _screen_handles(cls)]
    assert found == [], "a component takes it (TAKES): " + ", ".join(found)
    assert _screen_handles(messages.Request) == ["MainScreen @on(Request)"]


def test_the_scan_sees_a_screen_handler_of_a_request():
    from mailtriage.tui.panes.reader import ThreadView
    from mailtriage.tui.screens.main import MainScreen

    class Routing(MainScreen):
        def on_thread_view_back_requested(self, message) -> None: ...

    assert _screen_handles(ThreadView.BackRequested, Routing) == ["Routing.on_thread_view_back_requested"]
