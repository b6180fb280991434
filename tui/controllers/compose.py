"""Compose controller: r (reply), A (reply to all), F (forward) and C (new mail).

On a thread of a project source every one of them becomes a *draft* proposal with the
security CC (``r`` starts with the receipt template on a fresh report and a quoted reply
otherwise; the other is Ctrl+r away in the compose dialog). So does a personal account's
message that answers a thread of the security list (the outgoing rule, decided from the
message: ``Service.compose_route``), or it is refused. Any other personal
message's reply is sent after confirmation (``access = "send"``, through the send policy,
with a copy in Sent), saved as a draft (``"draft"``) or blocked (``"read"``); ``C`` is for
personal accounts only. The order is always: compose dialog → proposal dialog → write.

A component the main screen holds (issue 36 §2), as the proposals are: a hidden widget that runs its
workers on itself and takes their answers (``ComposeReady``, ``DraftBuiltAhead``). It owns what is
composed: the reply built ahead for the message in the reading pane and its dialog mounted ahead, the
empty dialog kept ready, the last composed mail (kept after a refusal, drafted again in clear). Its work
is in the screen's groups: preparing and proposing are "reply" work (Esc cancels it, a later proposal
supersedes it), the reply built ahead is "reply-ahead" (for the row read ahead, before Enter, it is
built on that read's own worker: ``row_reply``). What it asks of the reading controller goes through
:class:`ReadingView`; it takes r, A, F and C (``ReplyRequested``: the screen hands them on), and
the proposals it builds (``ProposalReady``, ``ProposalFailed``) go to the proposals, which call :meth:`Compose.after_write`,
:meth:`Compose.compose_kept` and :meth:`Compose.compose_again_in_clear`. What a compose answers and
what it builds (``ComposeTarget``, ``Built``, ``DraftAhead``) are in tui/compose_target.py.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Callable, Protocol

from textual.worker import get_current_worker

from mailtriage.tui.controllers.component import Component
from mailtriage.tui.compose_target import Built, ComposeTarget, DraftAhead, pending_words
from mailtriage.tui.mailbox_rows import MailboxRow
from mailtriage.tui.messages import ComposeReady, DraftBuiltAhead, ProposalFailed, ProposalReady
from mailtriage.tui.panes.reader import ThreadView
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.sanitize import inert
from mailtriage.tui.textual_private import start_screen

if TYPE_CHECKING:
    from mailtriage.tui.controllers.base import ControllerBase
    from mailtriage.tui.dialogs.compose import ComposeDialog
    from mailtriage.application import ApplyReport, ComposeForm, Proposal, Thread, ThreadSummary

#: The request kind and worker group of compose work (Esc cancels it like a reply).
GROUP = "reply"


#: Seconds an r waits for the reply being built ahead before it builds it itself.
AHEAD_WAIT = 30.0
#: Seconds between looks at a cancel while r waits for the reply built ahead.
AHEAD_POLL = 0.05
#: Whether r's reply is built and filled for the row read ahead, before Enter (off: a test hook).
ROWS_AHEAD = True


class ReadingView(Protocol):
    """What compose asks of the reading controller: the personal account's message in the
    reading pane (r, A and F there answer it) and the messages of personal accounts kept read
    (what r answers, not read again)."""

    open_mailbox_row: MailboxRow | None
    kept_messages: dict[tuple[str, str], Thread]


class Compose(Component):
    """r, A, F and C: the compose dialog (also built and mounted ahead), its proposal, and what follows its write."""

    def __init__(self, screen: ControllerBase, reading: ReadingView) -> None:
        #: The screen (``_screen``): the service, its "reply" requests (a later proposal
        #: supersedes this one), the reading pane's status, the accounts' folder.
        super().__init__(screen, id="compose")
        #: The reading controller: the personal message in the reader, the messages kept read.
        self._reading = reading
        #: The last composed reply, proposed again in clear when the user chooses that for
        #: an encrypted report whose reporter has no key to encrypt to (OpenPGP), and shown
        #: again after a refusal (what the user wrote is never lost).
        self._last_composed: tuple[ComposeTarget, ComposeForm] | None = None
        #: The forms and the "Goes to" line of the compose dialog last opened.
        self._compose_shown: tuple[dict[str, ComposeForm], str] | None = None
        #: The reply built ahead for the message in the reading pane (issue 35).
        self._draft_ahead: DraftAhead | None = None
        #: The reply built for the message read ahead under the list's cursor, before Enter.
        self._row_ahead: DraftAhead | None = None
        #: The one its read's worker is building (``row_reply``), until the read comes (``build_row_ahead``).
        self._row_made: DraftAhead | None = None
        #: The request of an r whose compose dialog is being prepared ("preparing the mail").
        self._awaited: int | None = None
        #: The compose dialog of the reply built ahead, composed and mounted but not shown
        #: (issue 35: r shows it rather than composing a screen of ~25 widgets on the key).
        self._dialog_ahead: tuple[DraftAhead, ComposeDialog] | None = None
        #: A compose dialog mounted ahead, hidden and empty: the next one shown is this one,
        #: filled (issue 35: no ~25 widgets composed, mounted and styled between r and the draft).
        self._blank: ComposeDialog | None = None

    # -- what the compose answers ------------------------------------------------------
    def _compose_target(self, summary: ThreadSummary | None, what: str) -> ComposeTarget | str:
        """The target, or what to tell the person when there is none."""
        thread = self._screen.reader.thread
        row = summary if isinstance(summary, MailboxRow) and summary.header is not None else None
        open_row = self._reading.open_mailbox_row
        if summary is None and thread is not None and open_row is not None and open_row.header is not None \
                and thread.thread_id.value == open_row.header.id:
            row = open_row
        if what == "new":
            folder = self._screen.accounts.open_folder_key
            account = row.account_id if row is not None else (folder[0] if folder else None)
            if account is None:
                return "New mail is written from a personal account: open one of its folders first (C there)."
            return ComposeTarget("new", account_id=account)
        if row is not None and row.header is not None:
            message_id = row.header.id
            kept = self._reading.kept_messages.get((row.account_id, message_id))
            return ComposeTarget(what, account_id=row.account_id, message_id=message_id,
                                 source=kept.messages[0] if kept is not None and kept.messages else None)
        if summary is not None and (thread is None or thread.thread_id != summary.thread_id):
            thread = None
        thread_id = summary.thread_id if summary is not None else (thread.thread_id if thread else None)
        if thread_id is None:
            return "Open a thread first (Enter), then reply with r, A or F."
        return ComposeTarget(what, thread=thread, thread_id=thread_id)

    def on_thread_list_reply_requested(self, message: ThreadList.ReplyRequested) -> None:
        self.compose_on(message.summary, message.kind)

    def on_thread_view_reply_requested(self, message: ThreadView.ReplyRequested) -> None:
        self.compose_on(None, message.kind)

    def compose_on(self, summary: ThreadSummary | None, kind: str) -> None:
        """Open the compose dialog of ``kind`` ("" = what r picks) on ``summary`` (None: the
        thread or message in the reading pane)."""
        if self._screen.when_open("compose", lambda: self.compose_on(summary, kind)):
            return
        target = self._compose_target(summary, kind)
        if isinstance(target, str):
            self._screen.notify(target, severity="warning", markup=False)
            return
        self._last_composed = None  # a refusal of this compose must not bring back an older one
        request = self._screen.new_request(GROUP)
        ahead = self._ahead_for(target)
        if ahead is not None and ahead.done.is_set() and ahead.built is not None:  # built ahead: shown now
            built = ahead.built
            ahead.taken = True
            self._open_compose(built.target, dict(built.forms), built.where, dialog=self._take_dialog_ahead(ahead),
                               pending=built.pending)
            return
        self._screen.reader.show_status("preparing the mail … (Esc cancels)")
        self._awaited = request
        self._start(self._prepare_compose, request, target, ahead, group=GROUP)

    def drop_reply_on_its_way(self) -> None:
        """q / Esc in the reader (issue 35): the compose dialog being prepared opens nothing,
        also when its preparation is done and the dialog is on its way (its answer is queued).
        A preparation still running is cancelled by the caller (``cancel_work``)."""
        request, self._awaited = self._awaited, None
        if request is not None and self._screen.is_current(GROUP, request):
            self._screen.new_request(GROUP)  # its answer is not current any more: dropped when it comes
            self._screen.reader.restore_status()

    def _build_compose(self, target: ComposeTarget, personal_only: bool = False) -> Built | Proposal | None:
        """The forms of the compose dialog for ``target`` and where the mail goes, or the
        proposal that refuses it (worker thread; writes nothing). None: its worker was cancelled
        (Esc, another message read), or (``personal_only``) it needs the project's thread read."""
        session = self._screen.session
        worker = get_current_worker()
        # The outgoing rule decides from the row, not from the pane, account or search it is in.
        source, account_id = target.source, target.account_id
        if source is None and account_id is not None and target.message_id:  # new mail answers none
            source = session.account_message(account_id, target.message_id).content  # read once
        route = session.compose_route(target.kind, thread_id=target.thread_id, thread=target.thread,
                                      account_id=target.account_id, message_id=target.message_id,
                                      source=source)
        if route.refused is not None:
            return route.refused
        if worker.is_cancelled or (personal_only and route.project):
            return None
        if route.project:
            thread = route.thread or session.read_thread(route.thread_id).value
            if worker.is_cancelled:
                return None
            where = session.compose_where(None)
            if target.personal:  # an account's message that answers a security-list thread: say so
                where += f" — {route.why}"
            target = ComposeTarget(target.kind, thread=thread, thread_id=thread.thread_id,
                                   answering=route.answering)
            forms = session.reply_forms(thread, target.kind, route.answering)
            # A draft pending on the thread blocks this one at its proposal: said as the dialog opens.
            try:
                pending = pending_words(session.pending_drafts(thread.thread_id))
            except Exception:  # noqa: BLE001 - never stops the compose: the proposal checks again, says why
                pending = None
            return Built(target, forms, where, pending)
        forms = session.personal_forms(target.account_id, target.message_id, target.kind, source=source)
        where = session.compose_where(target.account_id)
        return Built(target, forms, where)

    def _prepare_compose(self, request: int, target: ComposeTarget, ahead: DraftAhead | None = None) -> None:
        worker = get_current_worker()
        built: Built | Proposal | None = None
        if ahead is not None:  # r while the reply is built ahead: its result (Esc stops the wait)
            waited = 0.0
            while not ahead.done.wait(AHEAD_POLL) and not worker.is_cancelled and waited < AHEAD_WAIT:
                waited += AHEAD_POLL
            if worker.is_cancelled:
                return
            built = ahead.built
        try:
            if built is None:
                built = self._build_compose(target)
        except Exception as exc:
            self._screen.post_message(ProposalFailed(request, "Preparing the mail failed", exc))
            return
        if worker.is_cancelled or built is None:
            return
        if isinstance(built, Built):
            self.post_message(ComposeReady(request, built.target, built.forms, built.where, built.pending))
        else:
            self._screen.post_message(ProposalReady(request, built, "compose"))

    # -- the reply built ahead (issue 35): r shows it, no work between the key and the dialog --
    def build_reply_ahead(self) -> None:
        """The reading pane shows a personal account's message: build what r would show (the
        outgoing rule's route, the quoted draft, where it goes) now, on a worker. What is built
        belongs to the message as read: another message or a new read of it drops it."""
        target = self._compose_target(None, "")
        thread = self._screen.reader.thread
        row = self._row_ahead  # built (or being built) for this message as read: adopted (refused: built again)
        self._screen.cancel_group("reply-ahead")  # the one before is for another message
        key = None if isinstance(target, str) else target.key
        if row is not None and row.thread is thread and row.key == key and (row.built or not row.done.is_set()):
            self._draft_ahead, self._row_ahead = row, None  # its dialog too, or (given to the reader's) made now
            if row.built is not None and (self._dialog_ahead is None or self._dialog_ahead[0] is not row):
                self.post_message(DraftBuiltAhead(row))
            return
        self._draft_ahead = self._row_ahead = None
        self._drop_dialog_ahead()
        if not self._screen.session.is_open:
            return
        if isinstance(target, str) or not target.personal or target.source is None or thread is None:
            return  # a project thread is read for the reply again (its drafts, its thread): not ahead
        ahead = DraftAhead(target.key, thread)
        self._draft_ahead = ahead
        self._start(self._build_ahead, ahead, target, group="reply-ahead")

    def row_reply(self, account_id: str, message_id: str, thread: Thread,
                  post: Callable[[DraftBuiltAhead], object]) -> Callable[[], None] | None:
        """Worker thread: a message under the list's cursor just read ahead (issue 35). What builds
        r's reply to it, to run on that read's own worker right after it hands the read over (no
        worker of its own: started as the read landed, it began 1-17 ms later while Enter held the
        UI thread, reply14). ``post`` sends its DraftBuiltAhead after that read's message, in order.
        Only a reply that needs no other read; None: none (tags: a batch in the making)."""
        self._row_made = None
        if not ROWS_AHEAD or not thread.messages or self._screen.threads.thread_list.tags:
            return None
        target = ComposeTarget("", account_id=account_id, message_id=message_id, source=thread.messages[0])
        made = self._row_made = DraftAhead(target.key, thread)  # adopted by build_row_ahead
        return partial(self._build_ahead, made, target, True, post)

    def build_row_ahead(self, thread: Thread) -> None:
        """A message read ahead under the list's cursor came (issue 35): r's reply to it, built on
        the read's worker (``row_reply``), is adopted; its dialog is filled and prepared hidden
        once built, before Enter. For ``thread`` only, the message as read ahead."""
        kept = self._dialog_ahead
        if kept is not None and kept[0].thread is not self._screen.reader.thread:
            self._drop_dialog_ahead()  # the row's before: kept empty-handed, filled with this one's
        made, self._row_made = self._row_made, None
        self._row_ahead = None
        if made is None or made.thread is not thread or not self._screen.session.is_open \
                or self._screen.threads.thread_list.tags:
            return  # (tags since: its build is dropped when it comes)
        self._row_ahead = made

    def _build_ahead(self, ahead: DraftAhead, target: ComposeTarget, personal_only: bool = False,
                     post: Callable[[DraftBuiltAhead], object] | None = None) -> None:
        # The reader's: one at a time, the next message read cancels the build of the one before
        # (exclusive), which stops before its reads rather than race the new one for the server and
        # the GIL. The row's (``row_reply``) runs on its read's worker and reads nothing.
        worker = get_current_worker()
        try:
            built = None if worker.is_cancelled else self._build_compose(target, personal_only)
            ahead.built = built if isinstance(built, Built) and not worker.is_cancelled else None
        except Exception:  # noqa: BLE001 - not asked for: r builds it again and says why
            ahead.built = None
        finally:
            ahead.done.set()
        if ahead.built is not None and not worker.is_cancelled:
            (post or self.post_message)(DraftBuiltAhead(ahead))

    def on_draft_built_ahead(self, message: DraftBuiltAhead) -> None:
        message.stop()  # this widget's own answer: the screen does not see it
        # its hidden dialog's fill and paint wait for a thread Enter is opening (issue 35)
        self._screen.reading.after_open(partial(self.built_ahead, message))

    def built_ahead(self, message: DraftBuiltAhead) -> None:
        """The reply built ahead is ready: its compose dialog is composed and mounted now,
        hidden, so r only shows it. Not before the dialogs' stylesheet is loaded (its first
        push would restyle it), and only for the message the reader still shows."""
        from mailtriage.tui.dialogs import ahead as dialogs  # why: not on the first screen (test_startup_imports)

        ahead = message.ahead
        if ahead is not self._draft_ahead and ahead is not self._row_ahead or ahead.built is None or ahead.taken:
            return
        kept = self._dialog_ahead  # made already (built before Enter, adopted), or the reader's:
        reader = self._screen.reader.thread
        if kept is not None and (kept[0] is ahead or ahead is self._row_ahead and kept[0].thread is reader):
            return  # the reader's own reply keeps its dialog (this one is filled if Enter opens its row)
        if self._awaited is not None:  # an r waits for this build: it opens its own dialog now
            return  # (mounted, laid out and rendered hidden as well, it only took the UI thread from that one)
        if not dialogs.dialog_css_loaded(self._screen.app):  # Enter typed before the dialogs were ready
            dialogs.load_dialog_css(self._screen.app)  # what the push would do; the dialog in the next turn
            self.call_after_refresh(self.post_message, message)
            return
        from mailtriage.tui.dialogs.compose import ComposeDialog  # lazy, as in _open_compose

        self._drop_dialog_ahead()
        built = ahead.built
        dialog = self._take_blank(dict(built.forms), built.where)
        if dialog is None:
            dialog = ComposeDialog(dict(built.forms), where=built.where, cursor_blink=self._screen.shell.cursor_blink)
            dialog.hold = self._screen.reading.after_open  # its layout and frame wait for a thread Enter opens
            start_screen(self._screen.app, dialog)
        self._dialog_ahead = (ahead, dialog)

    def keep_compose_ready(self) -> None:
        """Mount an empty compose dialog, hidden, for the next compose to fill (issue 35): once
        the dialogs' stylesheet is loaded (tui/dialogs/ahead.py), while the person reads the list."""
        from mailtriage.tui.dialogs import ahead as dialogs  # why: not on the first screen (test_startup_imports)

        if self._blank is not None or not dialogs.dialog_css_loaded(self._screen.app):
            return
        from mailtriage.tui.dialogs.compose import ComposeDialog  # why: loaded by the dialogs ahead

        self._blank = ComposeDialog.blank(cursor_blink=self._screen.shell.cursor_blink)
        self._blank.hold = self._screen.reading.after_open  # its layout and frame wait for a thread Enter opens
        start_screen(self._screen.app, self._blank)

    def _take_blank(self, forms: dict[str, ComposeForm], where: str, note: str | None = None) -> ComposeDialog | None:
        """The empty dialog mounted ahead, filled with ``forms`` (None: there is none ready)."""
        blank = self._blank
        if blank is None or not blank.fillable:
            return None
        self._blank = None
        blank.fill(forms, where=where, note=note, cursor_blink=self._screen.shell.cursor_blink)
        return blank

    def _take_dialog_ahead(self, ahead: DraftAhead) -> ComposeDialog | None:
        """The hidden dialog of ``ahead``, once (a second r composes its own)."""
        kept = self._dialog_ahead
        if kept is not None and kept[0] is ahead:
            self._dialog_ahead = None
            return kept[1]
        self._drop_dialog_ahead()
        return None

    def _drop_dialog_ahead(self) -> None:
        """The hidden dialog of a reply no longer wanted: kept to be filled with the next one."""
        kept, self._dialog_ahead = self._dialog_ahead, None
        if kept is None or kept[1] in self._screen.app.screen_stack:
            return
        if self._blank is None and kept[1].fillable:
            self._blank = kept[1]
        else:
            kept[1].remove()

    def _ahead_for(self, target: ComposeTarget) -> DraftAhead | None:
        """The reply built ahead for ``target``: r on the message the reader shows as read, or on
        the row read ahead as read (r in the list, or before the reader's paint adopts it)."""
        for ahead in (self._draft_ahead, self._row_ahead):
            if ahead is None or ahead.key != target.key:
                continue
            as_read = ahead is self._row_ahead and ahead.thread.messages[0] is target.source
            if ahead.thread is self._screen.reader.thread or as_read:
                return ahead
        return None

    def on_compose_ready(self, message: ComposeReady) -> None:
        message.stop()  # this widget's own answer: the screen does not see it
        self.ready(message)

    def ready(self, message: ComposeReady) -> None:
        # Start-up: the dialog and the compose workflows (mime, the mailbox contract) load on
        # first use; imported with the app they were ~1 s of 6 (python -X importtime, loaded machine).
        if not self._screen.is_current(GROUP, message.request):
            return
        self._awaited = None
        self._screen.reader.restore_status()
        self._open_compose(message.target, dict(message.forms), message.where, pending=message.pending)

    def _open_compose(self, target: ComposeTarget, forms: dict[str, ComposeForm], where: str,
                      note: str | None = None, dialog: ComposeDialog | None = None,
                      pending: str | None = None) -> None:
        from mailtriage.tui.dialogs.compose import ComposeDialog  # lazy, as above

        self._compose_shown = (forms, where)

        def composed(form: ComposeForm | None) -> None:
            if form is None:
                self._screen.notify("Cancelled: nothing was written.", markup=False)
                return
            self._screen.reader.show_status("preparing the proposal … (Esc cancels)")
            self._start(self._propose_compose, self._screen.new_request(GROUP), target, form, group=GROUP)

        if dialog is None:
            dialog = self._take_blank(forms, where, note)
        if dialog is None:
            dialog = ComposeDialog(forms, where=where, note=note, cursor_blink=self._screen.shell.cursor_blink)
        self._screen.app.push_screen(dialog, composed)
        if pending is not None:
            self._screen.notify(pending, title="Draft pending", severity="warning", markup=False, timeout=10)

    def compose_kept(self, why: str, body: str | None = None) -> bool:
        """After a refusal (a blocked proposal, a send refused at confirm time): the compose
        dialog again with what the user wrote (``body``: as edited in the proposal), saying
        why. False when there is no composed mail to bring back."""
        if self._last_composed is None or self._compose_shown is None:
            return False
        target, form = self._last_composed
        forms, where = self._compose_shown
        if body is not None:
            form = replace(form, body=body)
        others = {k: v for k, v in forms.items() if (v.kind, v.forward_as) != (form.kind, form.forward_as)}
        self._open_compose(target, {"kept": form, **others}, where, note=f"{why} — what you wrote is kept")
        return True

    def compose_again_in_clear(self) -> None:
        """The user chose to draft the last composed reply in clear (an encrypted report)."""
        if self._last_composed is None:
            return
        target, form = self._last_composed
        self._screen.reader.show_status("preparing the proposal (in clear) … (Esc cancels)")
        self._start(self._propose_compose, self._screen.new_request(GROUP), target, form, group=GROUP,
                    allow_clear=True)

    def _propose_compose(self, request: int, target: ComposeTarget, form: ComposeForm, *,
                         allow_clear: bool = False) -> None:
        worker = get_current_worker()
        self._last_composed = (target, form)
        try:
            if target.personal:
                proposal = self._screen.session.propose_personal(target.account_id, form, target.message_id)
            else:
                proposal = self._screen.session.propose_compose(target.thread, form, allow_clear=allow_clear,
                                                        answering=target.answering)
        except Exception as exc:
            self._screen.post_message(ProposalFailed(request, "Preparing the mail failed", exc))
            return
        if not worker.is_cancelled:
            self._screen.post_message(ProposalReady(request, proposal, "compose"))

    def after_write(self, report: ApplyReport) -> None:
        """After a confirmed compose (the proposals' after-write hook): say where the draft is
        (a local Maildir draft's file, a server draft's reference), and list a personal folder
        again (Sent, Drafts, answered)."""
        from mailtriage.application import Draft  # loaded by the write already; not at start-up (see above)

        reader, accounts = self._screen.reader, self._screen.accounts
        for summary, result in report.written:
            if isinstance(result, Draft):
                reader.show_status(f"✉ draft written: {inert(result.subject)} → {inert(', '.join(result.to))} "
                                   f"· {inert(result.draft_ref)}")
            else:
                reader.show_status(f"✉ {inert(summary)}")
        if report.written and accounts.open_folder_key is not None:
            accounts.after_organize()

    #: The requests this component takes, each with its handler (the screen hands them on).
    TAKES = {
        ThreadList.ReplyRequested: on_thread_list_reply_requested,
        ThreadView.ReplyRequested: on_thread_view_reply_requested,
    }
