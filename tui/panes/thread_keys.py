"""The reading pane's keys that act on some threads only (issue 35: no key that silently does
nothing): ``i`` (import) and ``u`` (the archive URL) on a project source's thread, not on a
personal account's message (no tracker import, no archive); ``e`` on a thread with attachments;
``K`` where a message offers an OpenPGP key. On an open thread they cannot act on, the footer
does not offer them; pressed there, their action runs and its toast says why (as the thread
list's ``i`` on a personal message). With no thread open they are offered and say why too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mailtriage.tui import bindings, keymaps, typeahead

if TYPE_CHECKING:
    from textual import events

    from mailtriage.application import Thread

#: The keys, by action: their binding ids (a user's key map rebinds them).
NOT_ALWAYS = {"import_thread": "reader.import", "thread_url": "reader.url", "import_key": "reader.import_key",
              "attachments": "reader.attachments"}


def acting_keys(thread: Thread, account_id: str | None) -> frozenset[str]:
    """The actions of :data:`NOT_ALWAYS` that act on ``thread`` (``account_id``: the personal
    account whose message it is; None: a project source's thread)."""
    keys = {"import_thread", "thread_url"} if account_id is None else set()
    if any(message.attachments for message in thread.messages):
        keys.add("attachments")
    if any(message.crypto is not None and message.crypto.offered_keys for message in thread.messages):
        keys.add("import_key")
    return frozenset(keys)


class OffersWhereActing:
    """Mixed into the reading pane's view (its keys' actions too): :attr:`acting` is set with
    each thread shown."""

    #: The actions of NOT_ALWAYS that act on the open thread (read only while one is open).
    acting: frozenset[str] = frozenset(NOT_ALWAYS)

    def offered(self, action: str) -> bool:
        """False for a key of NOT_ALWAYS that cannot act on the open thread (check_action)."""
        view: Any = self  # the ThreadView this is mixed into
        return action not in NOT_ALWAYS or action in self.acting or not view.has_class("-has-thread")

    def on_key(self, event: events.Key) -> None:
        """A key not offered (:meth:`offered`) acts when pressed: what it ends in says why."""
        view: Any = self
        actions = {"import_thread": self.action_import_thread, "thread_url": self.action_thread_url,
                   "import_key": self.action_import_key, "attachments": self.action_attachments}
        for action in NOT_ALWAYS.keys() - self.acting:
            if not self.offered(action) and event.key in bindings.keys_of(view.app, NOT_ALWAYS[action]):
                event.stop()
                actions[action]()
                return
        hint = keymaps.habit_hint(view.app, "reader", event.key)  # the preset's key with no action here
        if hint is not None:
            event.stop()
            view.notify(hint, timeout=5, markup=False)

    # -- the keys' actions: each asks the screen, with a thread open (else it says why) ----------
    def action_import_thread(self) -> None:
        view: Any = self
        if view._thread_open():
            typeahead.post_opening(view, view.ImportRequested())

    def action_import_key(self) -> None:
        view: Any = self
        if view._thread_open():
            typeahead.post_opening(view, view.KeyImportRequested())

    def action_thread_url(self) -> None:
        view: Any = self
        if view._thread_open():
            view.post_message(view.UrlRequested())

    def action_attachments(self) -> None:
        view: Any = self
        if view._thread_open():
            typeahead.post_opening(view, view.AttachmentsRequested())
