"""The keys of a pane's list that act on its highlighted row (Enter, and the tracker's ``s``),
offered only while a row can be highlighted: a list showing a note ("checking backends …",
"loading folders …", "no tracker (why: below)") has no row to act on, and Enter there did nothing."""

from __future__ import annotations

from typing import Any, ClassVar


class RowKeys:
    """Mixed into an :class:`~textual.widgets.OptionList` (before it): ``ROW_ACTIONS`` are
    offered while an option is highlighted (a disabled note never is)."""

    ROW_ACTIONS: ClassVar[tuple[str, ...]] = ("select",)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        options: Any = self  # the OptionList this is mixed into
        if action in self.ROW_ACTIONS:
            return options.highlighted is not None
        return True

    def watch_highlighted(self, highlighted: int | None) -> None:
        options: Any = self
        super().watch_highlighted(highlighted)  # type: ignore[misc]  # the OptionList's, after this mixin
        options.refresh_bindings()
