"""The application service: the open project of one run, as both front ends call it.

One object per run owns the project, its sources, the tracker, the personal mailboxes and the
user's settings, and every call into them goes through it, so the command line and the terminal
UI behave alike by construction (issue 36 §1): a setting such as ``[alerts] poll_seconds`` is
read here once for both. Its methods are the entry points of the flows (``application.flows``).

It is thread-safe: everything here that touches a backend blocks, so the app calls it from
worker threads. Calls into the project's backends go through one lock (:mod:`.service_lock`,
with a priority for a call the user waits on): a backend object (an IMAP connection, say)
serves one call at a time, and a superseded request simply finishes and is ignored by the UI.
The tracker has a lock of its own, and so have the personal accounts' mailboxes (connections
of their own): opening an account never waits for the project's listing.

The mail side (the window, thread ids, the mandatory rule, listing, reading, one contract op)
is in :mod:`.service_mail`, the service's base class; the tracker's side (the triage flows, the
queue, new-report polls, the sweep) in :mod:`.service_triage`, its base. The flows, the trackers and the mailbox adapters load in the call that first needs them, not
when a front end starts (python -X importtime: about a fifth of the app's import time
otherwise): hence the imports inside the methods.
"""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from mailtriage.application.service_lock import Parts, ServiceLock, take_or_abort
from mailtriage.application.service_mail import MailSide
from mailtriage.application.service_triage import AlertWatch
from mailtriage.core.settings import UserSettings

if TYPE_CHECKING:
    from mailtriage.application.accounts import Mailboxes
    from mailtriage.application.flows.compose import ComposeRoute
    from mailtriage.application.flows.alerts import PollFlow
    from mailtriage.application.project import ListEntry, Project
    from mailtriage.backends.contract import Message, Thread, ThreadId
    from mailtriage.backends.registry import SourceSet
    from mailtriage.backends.security_cc import CcResolution
    from mailtriage.core.projectconfig import ProjectConfig
    from mailtriage.application.flows.compose import ComposeForm

__all__ = ["AlertWatch", "Service"]


class Service(MailSide):
    def __init__(self, project_dir: Path, *, demo: bool, settings: UserSettings, quiet_pinentry: bool = True) -> None:
        """``quiet_pinentry``: no terminal pinentry (the app, whose terminal the UI holds: a key
        is unlocked on request); the command line lets gpg ask on its terminal."""
        self.project_dir = Path(project_dir)
        self.demo = demo
        self.quiet_pinentry = quiet_pinentry
        if demo:
            # lazy: the demo's settings (its personal Maildir account) load with a demo run only
            from mailtriage.demo.workspace import demo_settings

            settings = demo_settings(settings, self.project_dir)
        self.settings = settings
        self.project: Project | None = None
        self.config: ProjectConfig | None = None
        self.sources: SourceSet | None = None
        self._lock = ServiceLock()
        self._tracker_lock = threading.RLock()
        self._tracker_stale = False  # R asked for the tracker to be opened again
        # The personal accounts' mailboxes are connections of their own: opening an account
        # or a folder never waits behind the project's listing (a whole 30-day window).
        self._mailbox_lock = threading.RLock()
        self.cc: CcResolution | None = None  # once opened
        self.tracker_description = ""
        self._opened_mailboxes: Mailboxes | None = None
        self._polls: dict[str | None, PollFlow] = {}  # a list's poller, kept: its cursor is acknowledged later

    # -- opening ---------------------------------------------------------
    def open(self) -> None:
        """Load project.md and build the mail sources.

        Raises:
            ConfigError: project.md is missing or invalid (the error names file and key).
        """
        from mailtriage.application.project import Project  # why: loads on first use, not at start-up
        # The lock itself, past its gate: the calls waiting at the gate go on once this ends.
        try:
            with self._lock.lock:
                project = Project.open(self.project_dir, user_settings=self.settings)
                project.pgp_quiet_pinentry = self.quiet_pinentry
                self.project, self.config, self.sources = project, project.config, project.sources
                self.cc = project.security_cc()
        finally:
            self._lock.open_gate()

    def open_later(self) -> None:
        """The project opens on a worker once the first frame is drawn (the head start came
        from the forked child): until :meth:`open` ends, calls that need it wait."""
        self._lock.close_until_opened()

    @property
    def is_open(self) -> bool:
        return self.sources is not None

    @property
    def title(self) -> str:
        if self.config is not None and self.config.title:
            return self.config.title
        return self.project_dir.name or str(self.project_dir)

    # -- what the panes show ------------------------------------------------
    def lists(self) -> list["ListEntry"]:
        """The security list first; then the lists the configured archives say they hold."""
        from mailtriage.application.project import ListEntry  # why: loads on first use, not at start-up
        if self.project is None:
            return [ListEntry("(no security list)", None, "security_list is not configured in project.md")]
        return self.project.lists()

    def forget_availability(self) -> None:
        """The sources are checked again on their next use. Never waits: the UI thread calls it
        (a failure report, R) while a worker may hold the backend lock for seconds; the cache
        only notes it (:meth:`AvailabilityCache.forget`) and the next check under the lock reads that."""
        project = self.project
        if project is not None:
            project.forget_availability()

    def forget_tracker(self) -> None:
        """R: the tracker is opened again on its next use, so a descriptor or a setting fixed
        meanwhile is read anew (not the one cached when it was first opened). Never waits."""
        self._tracker_stale = True

    # -- operations (blocking; the rest in service_mail.py) ------------------------
    def offline_threads(self, list_name: str | None, *, limit: int | None = None, local: bool = True):
        """Rows read without asking a server, and whether they are stale, or None: see
        :meth:`Project.offline_threads`."""
        with self._lock:
            return self.opened.offline_threads(list_name, limit=limit, local=local)

    def listing_can_start_early(self) -> bool:
        """Whether the start-up's helper process may list the first list (tui/head_start.py)."""
        with self._lock:
            return self.opened.listing_can_start_early()

    def reading_can_start_early(self) -> bool:
        """Whether the start-up's helper process may read the first row's thread ahead (tui/head_start.py)."""
        with self._lock:
            return self.opened.reading_can_start_early()

    def prepare_reading(self) -> None:
        """Sign in where a read would, ahead of it (``SourceSet.prepare_reading``). Not under the
        service's lock: start-up's child runs it on a thread while its head start reads the summary
        cache (which uses no connection), and joins it before it reads or lists (tui/head_start.py)."""
        self.opened.prepare_reading()

    def prepare_next_read(self) -> None:
        """While the app is idle: the reading backend's folder selected again and its newest
        message's first byte read (``SourceSet.prepare_reading`` with ``open_message``), so the
        next Enter does not pay the server's open of a large folder (issue 33: 0.6-1.2 s at 100k
        messages, after the row marks had selected Drafts and Sent). Under the service's lock, not
        urgently: a read the user asks for while this waits for the lock goes first (one asked once
        it holds the lock waits for it, about a second on a cold 100k folder)."""
        with self._lock:
            self.opened.prepare_reading(open_message=True)

    def listing_can_be_limited(self) -> bool:
        """True when the backend that lists threads can return the newest ones first, fast."""
        with self._lock:
            return self.opened.listing_can_be_limited()

    def propose_reply(self, thread: Thread, body: str, *, allow_clear: bool = False, allow_second_draft: bool = False):
        """``allow_clear``: the user chose to draft in clear a reply to an encrypted report;
        ``allow_second_draft``: a draft although one is pending (the command line's ``--second-draft``)."""
        from mailtriage.application.flows.reply import ReplyFlow  # why: loads on first use, not at start-up
        with self._lock:
            return ReplyFlow(self.opened, self.settings).propose(thread, body, allow_clear=allow_clear,
                                                                 allow_second_draft=allow_second_draft)

    def pgp_needs_passphrase(self, thread: Thread) -> bool:
        return self.project is not None and self.project.pgp.needs_passphrase(thread)

    def pgp_loopback(self) -> bool:
        """The user opted in to typing the passphrase in the app (``[pgp] pinentry = "loopback"``)."""
        return self.opened.pgp.pinentry == "loopback"

    def pgp_unlock(self, thread: Thread, *, passphrase: str | None = None, tty: str | None = None) -> str | None:
        """Unlock the key the thread needs; None when done, else why not."""
        # No backend lock: gpg needs none, and the command line's gpg (or the app's suspended
        # terminal) waits while the user types the passphrase: a listing must not wait on that.
        return self.opened.pgp.unlock(thread, passphrase=passphrase, tty=tty)

    def propose_key_import(self, thread: Thread):
        """Import a key the thread offers (OpenPGP), after confirmation."""
        from mailtriage.application.crypto import KeyImportFlow  # why: loads on first use, not at start-up
        with self._lock:
            return KeyImportFlow(self.opened).propose(thread)

    def apply(self, proposal):
        # A proposal may write through the project's sources, the tracker (a ticket, a
        # comment) or an account's mailbox (flag, move): all three locks, always in this order.
        with self._lock.writing(), self._lock, self._tracker_lock, self._mailbox_lock:
            return proposal.apply(confirmed=True)

    # -- compose: replies, forwards and new mail (where a compose goes is decided from the row,
    #    never from the pane or folder the user came from: issue 30) --------------------
    def reply_forms(self, thread: Thread, what: str, answering=None) -> dict[str, ComposeForm]:
        """The compose forms on a project thread: ``what`` ("" = what ``r`` picks) first,
        then the alternative one key away (receipt ↔ quoted reply). ``answering``: the
        message chosen in an account (else the reporter's newest)."""
        from mailtriage.application.flows.reply import ReplyFlow  # why: loads on first use, not at start-up
        flow = ReplyFlow(self.opened, self.settings)
        with self._lock:
            first = flow.form(thread, what or flow.default_kind(thread), answering=answering)
            forms = {first.kind: first}
            if first.is_reply:
                other = {"receipt": "reply", "reply": "receipt"}[first.kind]
                forms[other] = flow.form(thread, other, answering=answering)
            return forms

    def propose_compose(self, thread: Thread, form: ComposeForm, *, allow_clear: bool = False, answering=None):
        """The draft proposal of a composed reply on a project thread (writes nothing).
        ``allow_clear``: the user chose to draft in clear a reply to an encrypted report."""
        from mailtriage.application.flows.reply import ReplyFlow  # why: loads on first use, not at start-up
        with self._lock:
            return ReplyFlow(self.opened, self.settings).propose(thread, form=form, allow_clear=allow_clear,
                                                                 answering=answering)

    def pending_drafts(self, thread_id: ThreadId):
        """The drafts already pending on a project thread and where they are (``PendingDrafts``:
        a reply composed now is blocked at its proposal while one is). Reads only."""
        from mailtriage.application.flows.reply import pending_drafts  # why: loads on first use, not at start-up
        with self._lock:
            return pending_drafts(self.opened.sources, thread_id)

    def compose_route(self, compose_kind: str, *, thread_id: ThreadId | None = None, thread: Thread | None = None,
                      account_id: str | None = None, message_id: str | None = None,
                      source: Message | None = None) -> ComposeRoute:
        """Where a compose on this row goes (``route_compose``): decided from the
        row (a project thread, or a personal message and what it answers), not from where
        it was found. ``source``: the personal message's content when the caller holds it
        (the reader's copy, issue 35), else it is read."""
        from mailtriage.application.flows.security_thread import OutgoingRule  # why: loads on first use
        from mailtriage.application.flows.compose import route_compose  # why: as above
        if source is None and account_id is not None and message_id and compose_kind != "new":
            with self._mailbox_lock:
                source = self._mailboxes.message(account_id, message_id).content
        with self._lock:
            return route_compose(OutgoingRule(self.opened), compose_kind, thread_id=thread_id, thread=thread,
                                 account_id=account_id, message_id=message_id, source=source)

    def personal_forms(self, account_id: str, message_id: str | None, what: str, *,
                       source: Message | None = None) -> dict[str, ComposeForm]:
        """The compose forms on a personal account's message (None: new mail); a forward
        has two, inline and as an attachment. ``source``: that message's content when the
        caller holds it, else it is read."""
        from mailtriage.application.flows.compose import ComposeFlow  # why: loads on first use, not at start-up
        from mailtriage.application.flows.compose import FORWARD_ATTACHED, FORWARD_INLINE  # why: as above
        with self._mailbox_lock:
            flow = ComposeFlow(self._mailboxes.get(account_id), self.settings)
            if source is None and message_id:
                source = self._mailboxes.message(account_id, message_id).content
            first = flow.form(what or "reply", source)
            if not first.is_forward:
                return {what or "reply": first}
            return {f"forward-{how}": flow.form("forward", source, forward_as=how)
                    for how in (FORWARD_INLINE, FORWARD_ATTACHED)}

    def propose_personal(self, account_id: str, form: ComposeForm, source_id: str | None):
        """Send (access = "send"), draft ("draft") or blocked ("read", or a message that answers
        a thread of the security list: the outgoing rule); writes nothing."""
        from mailtriage.application.flows.compose import ComposeFlow  # why: loads on first use
        from mailtriage.application.flows.security_thread import OutgoingRule  # why: as above
        with self._lock, self._mailbox_lock:  # the rule asks the project's sources: both, in apply's order
            flow = ComposeFlow(self._mailboxes.get(account_id), self.settings,
                                           rule=OutgoingRule(self.opened))
            return flow.propose(form, source_id=source_id)

    def compose_where(self, account_id: str | None) -> str:
        """Where a compose goes, for the dialog's title line."""
        from mailtriage.application.flows.compose import ComposeFlow  # why: loads on first use, not at start-up
        if account_id is None:
            return "a draft, after you confirm it (security CC kept)"
        with self._mailbox_lock:
            access = ComposeFlow(self._mailboxes.get(account_id), self.settings).access
        if self.demo:
            return (f"DEMO: nothing is ever sent. Saved as a draft in account {account_id}, a local Maildir "
                    f"in the demo workspace ({account_id} has access = \"{access}\")")
        return {"send": f"sent from account {account_id} after you confirm it (a copy goes to Sent)",
                "draft": f"saved as a draft in account {account_id} (access = \"draft\")"}.get(
                    access, f"nothing: account {account_id} is read-only")

    # -- the triage overview (blocking) ------------------------------------------
    def thread_statuses(self, thread_ids: list[ThreadId]):
        """Filed / draft pending / replied of a screen of threads, asked of the backends at
        once (the tracker only once it is open). Each lock is held per backend call or chunk
        of tracker lookups, not for the screen: a read the user waits on goes in between."""
        from mailtriage.application.overview import thread_statuses  # why: loads on first use, not at start-up
        since = self.since()
        with self._lock:  # the gate: waits for the project to open
            project = self.opened
        return thread_statuses(project, thread_ids, since, backend_lock=self._lock, tracker_lock=self._tracker_lock,
                               current_tracker=lambda: self.tracker)

    def close_waits_for(self) -> str | None:
        """What :meth:`close` would wait for now, in the user's words (None: it ends at once)."""
        if self._opened_mailboxes is not None and self._opened_mailboxes.sending_text():
            return "the mail is being sent…"
        return "waiting for the confirmed write to finish…" if self._lock.writes > 0 else None

    def close(self) -> None:
        self._lock.open_gate()  # never opened (the app ended first): nothing waits for it
        # A call waiting on a server (a slow or silent one) does not hold the quit back until
        # its timeout: its connections are ended under it, so it fails and lets go. A confirmed
        # write (apply) holds every lock: the tracker's and the mailboxes' connections may be its.
        finish, tracker = self._lock.writes > 0, self.project and self.project.tracker
        if take_or_abort(self._lock.lock, Parts(self.sources, tracker, self._opened_mailboxes), finish=finish):
            try:
                if self.sources is not None:
                    self.sources.close()
            finally:
                self._lock.lock.release()
        # Else a backend with nothing to end still waits: its sockets go with the process.
        if take_or_abort(self._tracker_lock, tracker, finish=finish):
            try:
                if self.project is not None:
                    self.project.close_tracker()
            except Exception:  # closing must never fail the app's exit
                pass
            finally:
                self._tracker_lock.release()
        self.close_mailboxes()
        self.close_lone_tracker()  # the tracker command's (opened from project.md alone)

    # -- personal accounts (blocking; one adapter per account, one call at a time) ----
    @property
    def _mailboxes(self) -> "Mailboxes":
        from mailtriage.application.accounts import Mailboxes  # why: loads on first use, not at start-up
        if self._opened_mailboxes is None:
            self._opened_mailboxes = Mailboxes(self.settings)
        return self._opened_mailboxes

    def mailbox(self, account_id: str):
        """The account's mailbox adapter (``[accounts.<id>]``), opened once per run.

        Raises:
            ConfigError: the account's settings are invalid (names file and key).
            NotSupported: the account's kind has no mailbox adapter here.
        """
        with self._mailbox_lock:
            return self._mailboxes.get(account_id)

    def account_folders(self, account_id: str):
        """The account's folders (role, unread, total)."""
        with self._mailbox_lock:
            return self._mailboxes.folders(account_id)

    def account_page(self, account_id: str, folder_id: str, page: int, page_size: int):
        """One page (newest first) of a folder: a MailPage."""
        with self._mailbox_lock:
            return self._mailboxes.page(account_id, folder_id, page, page_size)

    def account_order(self, account_id: str, folder_id: str, sort: str | None, reverse: bool, threads: bool):
        """Every message ID of a folder in the server's order (issue 35): a FolderOrder.
        Raises NotSupported where the server cannot sort or thread."""
        with self._mailbox_lock:
            return self._mailboxes.order(account_id, folder_id, sort, reverse, threads)

    def account_unread_ids(self, account_id: str, folder_id: str):
        """The IDs of a folder's unread messages (the server's search): a FolderOrder."""
        with self._mailbox_lock:
            return self._mailboxes.unread_ids(account_id, folder_id)

    def account_headers(self, account_id: str, message_ids):
        """The headers of ``message_ids``, in that order (one page of an order)."""
        with self._mailbox_lock:
            return self._mailboxes.headers(account_id, message_ids)

    def account_message(self, account_id: str, message_id: str):
        """One message, read without setting \\Seen (the adapter fetches BODY.PEEK)."""
        with self._mailbox_lock:
            return self._mailboxes.message(account_id, message_id)

    def attachments(self, thread: Thread, *, backend: str | None = None, account_id: str | None = None):
        """The attachments of ``thread`` as ``backend`` read it (or, with ``account_id``, as that
        personal account's mailbox did): an AttachmentSet whose backend calls take this
        service's lock. No network call here; the bytes are read when asked for.

        Raises:
            NotSupported: the backend cannot read message parts (its declared features).
        """
        from mailtriage.application import attachments as found_in  # why: loads on first use, not at start-up
        if account_id is not None:  # the account's own connection, under the mailboxes' lock
            with self._mailbox_lock:
                found = found_in.for_mailbox(self._mailboxes, account_id, thread)
            found.guard = self._mailbox_lock
            return found
        with self._lock:
            found = found_in.for_source(self.project, thread, backend)
        found.guard = self._lock
        return found

    def raw_message(self, message, *, backend: str | None = None, account_id: str | None = None) -> bytes:
        """``message`` as its bytes came (full headers, undecoded body), read through ``backend``
        (a project source) or the personal account ``account_id``; held in memory only.

        Raises:
            NotSupported: the backend keeps no raw message, or none read this one.
        """
        from mailtriage.application import raw_message  # why: loads on first use, not at start-up
        if account_id is not None:
            with self._mailbox_lock:
                return raw_message.for_mailbox(self._mailboxes, account_id, message.backend_ref or "")
        with self._lock:
            return raw_message.for_source(self.opened, backend, message.backend_ref)

    def attachment_settings(self) -> tuple[str | list | None, str]:
        """``attachment_command`` and the save dialog's first folder (``attachments.attachment_settings``)."""
        from mailtriage.application.attachments import attachment_settings  # why: loads on first use, not at start-up
        return attachment_settings(self.settings)

    def propose_organize(self, account_id: str, headers, action: str, folder_id: str | None = None):
        """A flag/move proposal for ``headers``, one message or a tagged batch (writes nothing)."""
        from mailtriage.application.flows.organize import OrganizeFlow  # why: loads on first use, not at start-up
        with self._mailbox_lock:
            return OrganizeFlow(self._mailboxes.get(account_id)).propose(headers, action, folder_id=folder_id)

    # -- search (blocking) ----------------------------------------------------------
    def can_search_sources(self) -> bool:
        """True when the backend that lists the threads declares a server search."""
        from mailtriage.application.search import source_can_search  # why: loads on first use, not at start-up
        with self._lock:
            return self.project is not None and source_can_search(self.project)

    def can_search_account(self, account_id: str) -> bool:
        with self._mailbox_lock:
            return bool(self._mailboxes.get(account_id).server_search)

    def search_sources(self, query: str, list_name: str | None, *, field: str = "text", since: datetime | None = None,
                       folder: str | None = None, all_folders: bool = False, backend: str | None = None,
                       page: int = 0, page_size: int = 50):
        """One page of the server search of the listed backend (or ``backend``): a SearchResult of
        thread rows.

        Raises:
            UsageError: the query cannot be searched (empty, a NUL, too long; a field unknown).
            MandatoryBackendUnavailable, NotSupported, and the backend's errors.
        """
        from mailtriage.application.search import search_project, search_request  # why: loads on first use
        request = search_request(query, field=field, list_name=list_name, folder=folder, all_folders=all_folders,
                                 since=since, page=page, page_size=page_size)
        with self._lock:
            return search_project(self.project, request, backend=backend)

    def search_account(self, account_id: str, folder_id: str | None, query: str, *, field: str = "text",
                       since: datetime | None = None, all_folders: bool = False, page: int = 0, page_size: int = 50):
        """One page of the server search of an account's folder (or all its folders): a
        SearchResult of MailHeaders. Needs no opened project. Raises UsageError as :meth:`search_sources`."""
        from mailtriage.application.search import search_mailbox, search_request  # why: loads on first use
        request = search_request(query, field=field, folder=folder_id, all_folders=all_folders, since=since,
                                 page=page, page_size=page_size)
        with self._mailbox_lock:
            return search_mailbox(self._mailboxes.get(account_id), request)

    def close_mailboxes(self) -> None:
        if not take_or_abort(self._mailbox_lock, self._opened_mailboxes, finish=self._lock.writes > 0):  # as close()
            return
        try:
            if self._opened_mailboxes is not None:
                self._opened_mailboxes.close()
        finally:
            self._mailbox_lock.release()

