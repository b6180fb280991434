"""What the thread pane's search hands to the rest of the screen (issue 36 §2: a component of
the main screen, as the screen's handlers were): the scope of a server search is what the
thread list shows (a personal folder or the mailing list), the reader's n / N step through
the matches while the list shows them.

The search itself, its worker and its answers are the thread pane's (tui/panes/threads.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mailtriage.tui.controllers.component import Component
from mailtriage.tui.panes.reader import ThreadView
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.panes.threads import SearchScope, ThreadPane

if TYPE_CHECKING:
    from mailtriage.tui.controllers.base import ControllerBase


class Search(Component):
    """A search's scope, whether the reader steps through matches, and its n / N (hidden)."""

    def __init__(self, screen: ControllerBase) -> None:
        super().__init__(screen, id="search")  # the screen: the panes, the listing and accounts components

    def on_thread_pane_search_submitted(self, message: ThreadPane.SearchSubmitted) -> None:
        screen = self._screen
        screen.threads.search_on_server(message.query, SearchScope(screen.accounts.open_folder_key, screen.current_list))

    def on_thread_pane_search_state(self, message: ThreadPane.SearchState) -> None:
        self._screen.query_one(ThreadView).search_active = message.active

    def on_thread_view_match_step_requested(self, message: ThreadView.MatchStepRequested) -> None:
        """n / N in the reading pane: open the next / previous match, focus stays in the reader."""
        screen = self._screen
        thread_list = screen.query_one(ThreadList)
        target = thread_list.cursor + message.step
        if not 0 <= target < len(thread_list.rows):
            screen.notify("no more matches" if message.step > 0 else "this is the first match", markup=False)
            return
        thread_list.cursor = target
        row = thread_list.current
        if row is None:  # not fetched yet: the list fetches its page; press again
            screen.notify("the next matches are still loading", markup=False)
            return
        thread_list.post_message(ThreadList.Opened(row, target))

    #: The requests this component takes, each with its handler (the screen hands them on).
    TAKES = {
        ThreadPane.SearchSubmitted: on_thread_pane_search_submitted,
        ThreadPane.SearchState: on_thread_pane_search_state,
        ThreadView.MatchStepRequested: on_thread_view_match_step_requested,
    }
