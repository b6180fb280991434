"""The session's compose calls: replies, forwards and new mail (blocking; worker threads only).

Part of the app's Session (in the session module), kept in a module of its own: where a compose
goes is decided here from the row (``application.route_compose``, issue 30), never from the
pane or folder the user came from. Uses the session's ``project``, ``settings``, ``demo``, ``_lock``,
``_mailbox_lock`` and ``_mailboxes``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import mailtriage.application as application

if TYPE_CHECKING:
    from mailtriage.application import ComposeForm, ComposeRoute, Message, Thread, ThreadId

__all__ = ["ComposeCalls"]


class ComposeCalls:
    def reply_forms(self, thread: Thread, what: str, answering=None) -> dict[str, "ComposeForm"]:
        """The compose forms on a project thread: ``what`` ("" = what ``r`` picks) first,
        then the alternative one key away (receipt ↔ quoted reply). ``answering``: the
        message chosen in an account (else the reporter's newest)."""
        flow = application.ReplyFlow(self.project, self.settings)
        with self._lock:
            first = flow.form(thread, what or flow.default_kind(thread), answering=answering)
            forms = {first.kind: first}
            if first.is_reply:
                other = {"receipt": "reply", "reply": "receipt"}[first.kind]
                forms[other] = flow.form(thread, other, answering=answering)
            return forms

    def propose_compose(self, thread: Thread, form: "ComposeForm", *, allow_clear: bool = False, answering=None):
        """The draft proposal of a composed reply on a project thread (writes nothing).
        ``allow_clear``: the user chose to draft in clear a reply to an encrypted report."""
        with self._lock:
            return application.ReplyFlow(self.project, self.settings).propose(thread, form=form,
                                                                              allow_clear=allow_clear,
                                                                              answering=answering)

    def compose_route(self, compose_kind: str, *, thread_id: ThreadId | None = None, thread: Thread | None = None,
                      account_id: str | None = None, message_id: str | None = None,
                      source: "Message | None" = None) -> "ComposeRoute":
        """Where a compose on this row goes (``application.route_compose``): decided from the
        row (a project thread, or a personal message and what it answers), not from where
        it was found. ``source``: the personal message's content when the caller holds it
        (else it is read)."""
        if source is None and account_id is not None and message_id and compose_kind != "new":
            with self._mailbox_lock:
                source = self._mailboxes.message(account_id, message_id).content
        with self._lock:
            return application.route_compose(application.OutgoingRule(self.project), compose_kind, thread_id=thread_id,
                                             thread=thread, account_id=account_id, message_id=message_id,
                                             source=source)

    def personal_forms(self, account_id: str, message_id: str | None, what: str, *,
                       source: "Message | None" = None) -> dict[str, "ComposeForm"]:
        """The compose forms on a personal account's message (None: new mail); a forward
        has two, inline and as an attachment. ``source``: that message's content when the
        caller holds it (else it is read)."""
        with self._mailbox_lock:
            flow = application.ComposeFlow(self._mailboxes.get(account_id), self.settings)
            if source is None and message_id:
                source = self._mailboxes.message(account_id, message_id).content
            first = flow.form(what or "reply", source)
            if not first.is_forward:
                return {what or "reply": first}
            return {f"forward-{how}": flow.form("forward", source, forward_as=how)
                    for how in (application.FORWARD_INLINE, application.FORWARD_ATTACHED)}

    def propose_personal(self, account_id: str, form: "ComposeForm", source_id: str | None):
        """Send (access = "send"), draft ("draft") or blocked ("read", or a message that answers
        a thread of the security list: the outgoing rule); writes nothing."""
        with self._lock, self._mailbox_lock:  # the rule asks the project's sources: both, in apply's order
            flow = application.ComposeFlow(self._mailboxes.get(account_id), self.settings,
                                           rule=application.OutgoingRule(self.project))
            return flow.propose(form, source_id=source_id)

    def compose_where(self, account_id: str | None) -> str:
        """Where a compose goes, for the dialog's title line."""
        if account_id is None:
            return "a draft, after you confirm it (security CC kept)"
        with self._mailbox_lock:
            access = application.ComposeFlow(self._mailboxes.get(account_id), self.settings).access
        if self.demo:
            return (f"DEMO: nothing is ever sent. Saved as a draft in account {account_id}, a local Maildir "
                    f"in the demo workspace ({account_id} has access = \"{access}\")")
        return {"send": f"sent from account {account_id} after you confirm it (a copy goes to Sent)",
                "draft": f"saved as a draft in account {account_id} (access = \"draft\")"}.get(
                    access, f"nothing: account {account_id} is read-only")
