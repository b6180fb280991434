"""One object per triage flow: each builds its proposal and writes nothing.

A flow wraps the functions of ``mailtriage.workflows`` with what a front end has at hand
(the open :class:`~mailtriage.application.project.Project`, a tracker, a mailbox) and
returns a :class:`~mailtriage.workflows.proposals.Proposal`. The front end shows it, asks
for confirmation and applies it; a new flow is a class here and a command or pane there.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Sequence

from mailtriage.application.errors import UsageError
from mailtriage.application.project import Project
from mailtriage.backends.contract import MESSAGE_ID_KIND, Message, Thread, ThreadId
from mailtriage.backends.errors import MailError, NotSupported, ThreadNotFound
from mailtriage.backends.mailbox_contract import MailHeader
from mailtriage.backends.registry import SourceSet
from mailtriage.backends.security_cc import configured_address
from mailtriage.core.projectconfig import ConfigError, ProjectConfig, load_project
from mailtriage.trackers.contract import Tracker
from mailtriage.workflows import sweep as sweep_flow
from mailtriage.workflows.alerts import NewReportPoller, PollOutcome, poll_seconds, run_poll_loop
from mailtriage.workflows.importer import propose_import
from mailtriage.workflows.organize import propose_organize
from mailtriage.workflows.proposals import BlockedBy, Proposal, WriteKind
from mailtriage.workflows.publish import propose_publish
from mailtriage.workflows.compose import (NEW, ComposeForm, default_reply_kind, personal_form, propose_personal,
                                          refused_personal)
from mailtriage.workflows.security_thread import ThreadCheckFailed, Verdict, judge, project_addresses
from mailtriage.workflows.reply import propose_reply, reply_form
from mailtriage.workflows.templates import identity
from mailtriage.workflows.sync import Picks, collect_sync, propose_sync


#: The trackers' own write guards that can tell before a write whether every write will be
#: refused (local files: the descriptor's access_restricted; GitHub: a private repository;
#: Jira: a configured security level). Named here until the tracker contract offers one.
_TRACKER_GUARDS = ("require_access_restricted", "require_private", "_configured_level")


def tracker_write_refusal(tracker: Tracker) -> str | None:
    """Why ``tracker`` will refuse the proposal's tracker writes, when its guard can tell
    now, else None: shown in the proposal, not after the confirmation (issue 30 §6). The
    writes still check again under the tracker's lock."""
    from mailtriage.trackers.errors import Refused  # the trackers load with the tracker

    for name in _TRACKER_GUARDS:
        guard = getattr(tracker, name, None)
        if callable(guard):
            try:
                guard()
            except Refused as exc:
                return str(exc)
    return None


def _block_refused_tracker_writes(proposal: Proposal, tracker: Tracker) -> Proposal:
    if proposal.blocked or not any(w.kind is WriteKind.TRACKER for w in proposal.writes):
        return proposal
    refusal = tracker_write_refusal(tracker)
    if refusal:
        proposal.block(BlockedBy.TRACKER_RESTRICTION, f"the tracker refuses these writes: {refusal}")
    return proposal


class ImportFlow:
    """A report imported: tracker issue, Import rollup entry and receipt draft."""

    def __init__(self, project: Project) -> None:
        self.project = project

    def propose(self, thread_id: ThreadId, *, thread: Thread | None = None,
                sender_name: str | None = None) -> Proposal:
        """``thread`` may be given when the caller already read it."""
        tracker = self.project.open_tracker()
        proposal = propose_import(self.project.sources, tracker, thread_id, thread=thread, sender_name=sender_name,
                                  encryption=self.project.pgp.reply_encryption(self.project.config))
        return _block_refused_tracker_writes(proposal, tracker)

    def propose_many(self, thread_ids: Sequence[ThreadId], *, sender_name: str | None = None) -> Proposal:
        """ONE proposal importing every thread of ``thread_ids`` (the tagged rows): each thread's
        writes in order, numbered ``[k/n]``. A thread that cannot be imported (blocked, or its
        thread or the tracker cannot be read) is named in a warning and left out; the others
        are proposed. Applying stops at the first failed write like any proposal, and
        re-running completes the rest without duplicates (an import finds its issue again).
        ``facts["flow"]`` is ``"imports"`` and ``facts["threads"]`` lists what each thread got."""
        tracker = self.project.open_tracker()
        ids = list(dict.fromkeys(thread_ids))
        total = len(ids)
        merged = Proposal(f"Import {total} report{'s' if total != 1 else ''}")
        merged.facts.update(flow="imports", threads=[])
        seen_recap: set[str] = set()
        for number, thread_id in enumerate(ids, 1):
            tag = f"[{number}/{total}]"
            try:
                one = propose_import(self.project.sources, tracker, thread_id, sender_name=sender_name, bulk=True)
            except Exception as exc:  # reported for this thread; the others are still proposed
                merged.warnings.append(f"{tag} {thread_id}: not imported: {type(exc).__name__}: {exc}")
                merged.facts["threads"].append({"thread": str(thread_id), "error": str(exc)})
                continue
            title = one.title.removeprefix("Import report: ")
            merged.facts["threads"].append({"thread": str(thread_id), "title": title,
                                            "writes": len(one.writes),
                                            "blocked": one.blocked.text if one.blocked else None,
                                            "issue": one.facts.get("issue")})
            if one.blocked:
                if one.blocked.reason is BlockedBy.MANDATORY:
                    merged.blocked = one.blocked
                merged.warnings.append(f"{tag} {title}: not imported: {one.blocked.text}")
                continue
            merged.warnings += [f"{tag} {title}: {w}" for w in one.warnings if f"{tag} {title}: {w}" not in merged.warnings]
            merged.notes += [f"{tag} {title}: {n}" for n in one.notes]
            if one.empty:
                merged.notes.append(f"{tag} {title}: nothing to write (imported already)")
            for write in one.writes:
                write.summary = f"{tag} {write.summary}"
                merged.writes.append(write)
            merged.preview += [replace(f, label=f"{tag} {f.label}") for f in one.preview]
            merged.existing += [replace(f, label=f"{tag} {f.label}") for f in one.existing]
            for resolution in one.recap:
                key = resolution.summary() if hasattr(resolution, "summary") else str(resolution)
                if key not in seen_recap:
                    seen_recap.add(key)
                    merged.recap.append(resolution)
        return _block_refused_tracker_writes(merged, tracker)


class ReplyFlow:
    """A reply draft on a thread of a project source, security CC resolved: the receipt
    template, a free quoted reply, a reply to all or a forward. Drafts only."""

    def __init__(self, project: Project, user_settings: Any = None) -> None:
        self.project = project
        self.identity = identity(project.config, user_settings)

    def default_kind(self, thread: Thread) -> str:
        """What ``r`` starts with: the receipt on a fresh report, else a quoted reply."""
        return default_reply_kind(thread)

    def form(self, thread: Thread, kind: str, *, answering: Message | None = None) -> ComposeForm:
        """The compose form of ``kind`` on ``thread``, filled in (recipients, subject, body);
        ``answering``: the message chosen (else the reporter's newest)."""
        return reply_form(self.project.config, thread, kind, self.identity, answering=answering)

    def propose(self, thread: Thread, body: str | None = None, *, allow_second_draft: bool = False,
                form: ComposeForm | None = None, allow_clear: bool = False,
                answering: Message | None = None) -> Proposal:
        """``allow_clear``: the user chose to draft in clear a reply to an encrypted report.
        ``answering``: the message the draft answers (else the reporter's newest)."""
        if body is None and form is None:
            form = self.form(thread, self.default_kind(thread), answering=answering)
        return propose_reply(self.project.sources, thread, form.body if form else body, reply_to=answering,
                             allow_second_draft=allow_second_draft, form=form, from_name=self.identity.name,
                             encryption=self.project.pgp.reply_encryption(self.project.config,
                                                                          allow_clear=allow_clear))


class OutgoingRule:
    """The one rule for outgoing mail over an open project (issue 30): whether answering a
    message means answering a thread of the security list, decided from the message and
    the project's sources (``workflows/security_thread.py``), whichever account, folder or
    search the message was found in."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.addresses = project_addresses(project.config)

    def judge(self, message: Message) -> Verdict:
        archived: list[Thread] = []  # the threads the list's own archive served
        return judge(message, self.addresses, lambda mid: self._thread_holding(mid, archived),
                     lambda thread: any(thread is t for t in archived))

    def _thread_holding(self, message_id: str, archived: list[Thread]) -> Thread | None:
        """Fails closed: only a definite "no such thread" (or a backend that cannot resolve
        a Message-ID) clears the message; a lookup that failed (a server's NO/BAD, an
        archive's 500, a dropped connection, no backend) cannot, so it refuses."""
        try:
            dispatch = self.project.read_thread(ThreadId(MESSAGE_ID_KIND, message_id))
            backend = self.project.sources.backends.get(dispatch.resolution.chosen or "")
            if dispatch.value is not None and backend is not None and backend.features.list_archive:
                archived.append(dispatch.value)
            return dispatch.value
        except (ThreadNotFound, NotSupported):
            return None
        except MailError as exc:  # ConnectionLost, any other BackendFailure, unavailable, no backend
            raise ThreadCheckFailed(str(exc)) from exc


@dataclass(frozen=True)
class ComposeRoute:
    """Where a compose on one row goes: the project's draft on ``thread`` (security CC), the
    personal account ``account_id`` (``message_id``: the message answered; None for new
    mail), or nowhere (``refused``: the blocked proposal that says why). ``why``: what decided."""

    kind: str
    thread: Thread | None = None
    thread_id: ThreadId | None = None
    account_id: str | None = None
    message_id: str | None = None
    why: str = ""
    refused: Proposal | None = None
    #: The account's message a project draft answers (the one chosen, not only the thread).
    answering: Message | None = None

    @property
    def project(self) -> bool:
        return self.account_id is None and self.refused is None


def route_compose(rule: OutgoingRule, kind: str, *, thread_id: ThreadId | None = None, thread: Thread | None = None,
                  account_id: str | None = None, message_id: str | None = None,
                  source: Message | None = None) -> ComposeRoute:
    """The one rule applied to the row a compose acts on (issue 30): a project thread
    (``thread_id`` / ``thread``) is the project's draft; a personal account's message
    (``account_id``, ``message_id``, its content ``source``) is the project's draft when it
    answers a thread of the security list, refused when that cannot be done or checked, and
    the account's own mail otherwise; new mail (``kind == "new"``) is the account's.
    Nothing here depends on the pane, folder or search the row was found in."""
    if account_id is None:
        if thread_id is None and thread is None:
            raise UsageError("a compose needs the thread or the message it answers")
        return ComposeRoute(kind, thread=thread, thread_id=thread_id or thread.thread_id,
                            why="a thread of the project's mail sources")
    if kind == NEW or not message_id:
        return ComposeRoute(NEW, account_id=account_id, why="new mail from the account")
    if source is None:
        raise UsageError("the message answered is needed to apply the outgoing rule")
    verdict = rule.judge(source)
    if verdict.thread is not None and verdict.refused is None:
        return ComposeRoute(kind, thread=verdict.thread, thread_id=verdict.thread.thread_id, why=verdict.why,
                            answering=source)
    if verdict.personal:
        return ComposeRoute(kind, account_id=account_id, message_id=message_id, why=verdict.why)
    return ComposeRoute(kind, account_id=account_id, message_id=message_id, why=verdict.why,
                        refused=refused_personal(kind, account_id=account_id, verdict=verdict))


class ComposeFlow:
    """Reply, reply-all, forward or new mail on a personal account: sent after
    confirmation with ``access = "send"`` (Principle 10, a copy in Sent), saved as a
    draft with ``"draft"``, blocked with ``"read"``.

    With ``rule`` (the open project's :class:`OutgoingRule`) a reply or forward of a
    message that answers a thread of the security list is refused here: it leaves only as
    the project's draft with the security CC (see :meth:`verdict`)."""

    def __init__(self, mailbox: Any, user_settings: Any = None, *, rule: OutgoingRule | None = None) -> None:
        self.mailbox = mailbox
        self.account = getattr(mailbox, "account", None)
        self.identity = identity(None, user_settings)
        self.rule = rule

    def verdict(self, source_id: str | None, source: Message | None = None) -> Verdict | None:
        """The rule's verdict on answering the message ``source_id`` (read when ``source``
        is not given); None for new mail or without a project."""
        if self.rule is None or not source_id:
            return None
        if source is None:
            source = self.mailbox.get(source_id).content
        return self.rule.judge(source)

    @property
    def account_id(self) -> str:
        return str(getattr(self.mailbox, "account_id", "") or getattr(self.account, "id", "account"))

    @property
    def access(self) -> str:
        return str(getattr(self.account, "access", "read"))

    @property
    def from_address(self) -> str:
        return str(getattr(self.account, "from_address", "") or "")

    def form(self, kind: str, source: Message | None = None, *, forward_as: str = "inline") -> ComposeForm:
        return personal_form(kind, source, self.from_address, signature=self.identity.signature,
                             forward_as=forward_as)

    def propose(self, form: ComposeForm, *, source_id: str | None = None) -> Proposal:
        verdict = self.verdict(source_id) if form.kind != NEW else None
        if verdict is not None and not verdict.personal:
            return refused_personal(form.kind, account_id=self.account_id, verdict=verdict)
        return propose_personal(self.mailbox, form, account_id=self.account_id, access=self.access,
                                source_id=source_id, from_name=self.identity.name, from_address=self.from_address)


class SyncFlow:
    """Sync rollup entries for tracker issues whose threads have new mail, with the label
    and state changes the user picked."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.picks: dict[str, Picks] = {}

    def pick(self, issue: str) -> Picks:
        """The picks of ``issue`` under its canonical id (3, SEC-3 and SEC-0003 name one issue)."""
        canonical = self.project.open_tracker().view(issue)["id"]
        return self.picks.setdefault(canonical, Picks())

    def propose(self, issue_ids: Sequence[str] | None = None) -> Proposal:
        """For ``issue_ids`` (all open issues linked to threads when None); picked issues take
        part even when they are closed (a reopen, say)."""
        tracker = self.project.open_tracker()
        ids = list(dict.fromkeys(issue_ids or [])) or None
        if ids is None and self.picks:
            open_ids = [i["id"] for i in tracker.list(state="open").items]
            ids = list(dict.fromkeys(open_ids + list(self.picks)))
        items = collect_sync(self.project.sources, tracker, ids)
        return propose_sync(tracker, items, self.picks)


class PublishFlow:
    """The review of a tracker that keeps changes to publish (a local-files tracker)."""

    def __init__(self, tracker: Tracker, config: ProjectConfig) -> None:
        self.tracker = tracker
        self.config = config

    @property
    def offered(self) -> bool:
        """Whether this tracker has changes to publish at all (declared by the tracker)."""
        return self.tracker.features.publishes_changes

    def why_not_offered(self) -> str:
        return f"the {self.tracker.kind} tracker writes straight to the server"

    def needs_publish(self) -> bool:
        return self.offered and bool(self.tracker.pending().get("needs_publish"))

    def propose(self, message: str | None = None, *, only: Sequence[str] | None = None) -> Proposal:
        """``only``: the paths one flow wrote (``tracker.written_paths()``): review those alone."""
        return propose_publish(self.tracker, self.config, message=message,
                               only=list(only) if only is not None else None)


class OrganizeFlow:
    """Flag or move messages of a personal mailbox: one message or a batch (tagged rows) of
    any size, written in bulk calls of at most ``MAX_BULK``; a toggle action
    (``toggle_read``, ``toggle_flag``) picks its direction from the whole set."""

    def __init__(self, mailbox: Any) -> None:
        self.mailbox = mailbox

    def propose(self, headers: Sequence[MailHeader], action: str, *, folder_id: str | None = None) -> Proposal:
        box = self.mailbox
        folders = box.list_folders() if action in ("archive", "trash", "move") else ()
        access = str(getattr(getattr(box, "account", None), "access", "read"))
        return propose_organize(box, headers, action, access=access, folders=folders, folder_id=folder_id)


@dataclass(frozen=True)
class SweepRequest:
    """A checked sweep request (see :meth:`SweepFlow.request`)."""

    source: Any
    cursor: datetime
    entry: str
    cap: int | None
    ack_keyword: str
    closeout_keyword: str


class SweepFlow:
    """The read-only feedback sweep of one mailbox or archive since a cursor."""

    DEFAULT_ACK_KEYWORD = sweep_flow.DEFAULT_ACK_KEYWORD
    DEFAULT_CLOSEOUT_KEYWORD = sweep_flow.DEFAULT_CLOSEOUT_KEYWORD

    @staticmethod
    def request(source: str, cursor: str, entry: str, *, cap: int | None = None, ack_keyword: str | None = None,
                closeout_keyword: str | None = None) -> SweepRequest:
        """Read the sweep's inputs.

        Raises:
            UsageError: a source, cursor, keyword, cap or entry that cannot be used.
        """
        try:
            parsed = sweep_flow.parse_source(source)
            when = sweep_flow.parse_sweep_cursor(cursor)  # ISO, or a truncated run's ISO#<message-id>
            ack = sweep_flow.check_keyword(ack_keyword or sweep_flow.DEFAULT_ACK_KEYWORD, "--ack-keyword")
            closeout = sweep_flow.check_keyword(closeout_keyword or sweep_flow.DEFAULT_CLOSEOUT_KEYWORD,
                                                "--closeout-keyword")
            if cap is not None and cap < 1:
                raise sweep_flow.SourceError("--cap must be at least 1")
            if not entry.strip():
                raise sweep_flow.SourceError("--entry is empty")
        except sweep_flow.SourceError as exc:
            raise UsageError(str(exc)) from exc
        return SweepRequest(parsed, when, entry.strip(), cap, ack, closeout)

    @staticmethod
    def internal_domains(directory: Path) -> frozenset[str]:
        """``sweep.internal_domains`` of project.md when there is one (optional for a sweep).

        Raises:
            ConfigError: the setting is not a list of domains.
        """
        try:
            config = load_project(directory)
        except ConfigError:
            return frozenset()
        value = config.get("sweep.internal_domains") or []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise ConfigError(config.file, "sweep.internal_domains", "must be a list of domains", "[example.org]")
        return frozenset(str(v).strip().lower().lstrip("@") for v in value if str(v).strip())

    @staticmethod
    def run(request: SweepRequest, internal_domains: frozenset[str] = frozenset()):
        """Probe the source, then map every message received at or after the cursor; reads only."""
        return sweep_flow.run_sweep(sweep_flow.open_reader(request.source), entry=request.entry,
                                    cursor=request.cursor, source=request.source.describe(), cap=request.cap,
                                    ack_keyword=request.ack_keyword, closeout_keyword=request.closeout_keyword,
                                    internal_domains=internal_domains)


class PollFlow:
    """New threads on the security list since the last acknowledged poll."""

    def __init__(self, sources: SourceSet, list_name: str | None = None) -> None:
        self.poller = NewReportPoller(sources, list_name=list_name)

    @classmethod
    def for_alerts(cls, config: ProjectConfig, user_settings: Any = None) -> "PollFlow | None":
        """A poll of the configured security list with mail sources of its own (it runs beside
        the front end's), or None when there is no security list."""
        list_name = configured_address(config.get("security_list"))
        if not list_name:
            return None
        return cls(SourceSet(config, user_settings), list_name=list_name)

    @property
    def list_name(self) -> str | None:
        return self.poller.list_name

    def interval(self, override: float | None = None) -> float:
        """Seconds between polls: ``override`` or ``alerts.poll_seconds``.

        Raises:
            UsageError: ``override`` is not a positive number of seconds.
            ConfigError: ``alerts.poll_seconds`` is invalid.
        """
        if override is None:
            return poll_seconds(self.poller.sources.config)
        if override < 0.01:
            raise UsageError("--interval must be a positive number of seconds")
        return override

    def poll(self) -> PollOutcome:
        return self.poller.poll()

    def acknowledge(self, outcome: PollOutcome) -> None:
        """The outcome was shown: only now the cursor moves."""
        self.poller.acknowledge(outcome)

    def watch(self, on_news: Callable[[PollOutcome], Any], *, interval: float, stop: threading.Event | None = None,
              on_error: Callable[[Exception], Any] | None = None,
              on_recovered: Callable[[Any], Any] | None = None) -> int:
        return run_poll_loop(self.poller, on_news, stop=stop or threading.Event(), interval=interval,
                             on_error=on_error, on_recovered=on_recovered)
