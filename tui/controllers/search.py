"""Search controller: ``/`` runs the search on the server and pages its results into the thread list.

What is searched is what the thread list shows: the mailing list (the backend that lists
it searches, when it declares ``server_search``) or a personal account's folder (its
mailbox adapter, when it declares ``server_search``). The results replace the list until
Esc; the status line names the backend that answered and how. A backend that declares no
server search gets the local filter of the rows already listed, and the status says so.

``n`` / ``N`` move between matches in the list; in the reading pane, while a search is
shown, they open the next / previous match (otherwise the reader's ``n`` / ``p`` move
between the messages of the thread).
"""

from __future__ import annotations

from textual import work
from textual.worker import get_current_worker

from mailtriage.core.inert import terminal_text
from mailtriage.tui.controllers.base import ControllerBase
from mailtriage.tui.messages import SearchFailed, SearchLoaded, SearchUnsupported
from mailtriage.tui.panes.reader import ThreadView
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.panes.threads import ThreadPane
from mailtriage.tui.search_rows import SearchRows

SEARCH_PAGE = 50


class SearchController(ControllerBase):
    #: accounts: the folder in the thread list (account id, folder id, name), or None.
    open_folder_key: tuple[str, str, str] | None

    # -- intents from the panes ------------------------------------------------------
    def on_thread_pane_search_submitted(self, message: ThreadPane.SearchSubmitted) -> None:
        self.run_search(message.query)

    def on_thread_pane_search_state(self, message: ThreadPane.SearchState) -> None:
        self.query_one(ThreadView).search_active = message.active

    def on_thread_view_match_step_requested(self, message: ThreadView.MatchStepRequested) -> None:
        """n / N in the reading pane: open the next / previous match, focus stays in the reader."""
        thread_list = self.query_one(ThreadList)
        target = thread_list.cursor + message.step
        if not 0 <= target < len(thread_list.rows):
            self.notify("no more matches" if message.step > 0 else "this is the first match", markup=False)
            return
        thread_list.cursor = target
        row = thread_list.current
        if row is None:  # not fetched yet: the list fetches its page; press again
            self.notify("the next matches are still loading", markup=False)
            return
        thread_list.post_message(ThreadList.Opened(row, target))

    # -- running a search --------------------------------------------------------------
    def run_search(self, query: str) -> None:
        folder = self.open_folder_key
        request = self.new_request("search")
        where = f"{folder[0]} · {folder[2]}" if folder else (self.current_list or "(no list)")
        self.threads.show_searching(query, where)
        self._search(request, query, folder, self.current_list)

    @work(thread=True, exclusive=True, group="search-server", exit_on_error=False)
    def _search(self, request: int, query: str, folder: tuple[str, str, str] | None, list_name: str | None) -> None:
        worker = get_current_worker()
        session = self.session
        try:
            if folder is not None:
                account_id, folder_id, _name = folder
                if not session.can_search_account(account_id):
                    self.post_message(SearchUnsupported(request, query, f"{account_id} declares no server search"))
                    return

                def load(page: int):
                    return session.search_account(account_id, folder_id, query, page=page, page_size=SEARCH_PAGE)
            else:
                account_id = None
                if not session.can_search_sources():
                    self.post_message(SearchUnsupported(request, query,
                                                        "the listing backend declares no server search"))
                    return

                def load(page: int):
                    return session.search_sources(query, list_name, page=page, page_size=SEARCH_PAGE)
            first = load(0).page
        except Exception as exc:  # the pane's error state and the error list say why
            self.post_message(SearchFailed(request, f"Searching for {query!r} failed", exc))
            return
        if worker.is_cancelled:
            return
        rows = SearchRows(first, lambda page: load(page).page, account_id)
        self.post_message(SearchLoaded(request, query, rows, first.backend, first.method, first.failed, first.notes,
                                       total_known=first.total is not None or not first.more))

    def on_search_loaded(self, message: SearchLoaded) -> None:
        if not self.is_current("search", message.request):
            return
        self.threads.show_search_results(message.rows, message.query, message.backend, message.method,
                                         failed=message.failed, notes=message.notes, complete=message.total_known)
        for folder, why in message.failed:  # server text: inert
            self.notify(terminal_text(f"{folder}: {why}"), title="Not searched", severity="warning", markup=False)

    def on_search_unsupported(self, message: SearchUnsupported) -> None:
        if self.is_current("search", message.request):
            self.threads.local_filter(message.query, message.why)

    def on_search_failed(self, message: SearchFailed) -> None:
        if not self.accept_failure(self.on_search_failed, message):
            return
        self.threads.show_search_failure(self.failure_text(message))
        self.report_failure(message)
