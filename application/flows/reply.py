"""Propose a reply *draft* on a thread, with the security CC resolved.

The proposal shows To, Cc (the resolved security CC marked, any fallback warning
prominent), Subject, In-Reply-To, the body and the backend that will write the draft.
Before proposing it checks ``list_drafts`` and ``list_sent_since`` where a backend
serves them: a pending draft is shown instead of a new one, and a reply already sent
says the ball is in the reporter's court. Nothing is written until the proposal is
applied with ``confirmed=True``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

from mailtriage.backends.contract import DraftRequest, Message, Op, Thread, reply_subject
from mailtriage.backends.errors import MailError, MandatoryBackendUnavailable, NoBackendAvailable
from mailtriage.core.errors import ConfigError
from mailtriage.backends.mime_header_text import is_plain_address
from mailtriage.backends.registry import SourceSet
from mailtriage.backends.resolution import Resolution
from mailtriage.backends.security_cc import CcResolution, merge_cc, resolve_security_cc
from mailtriage.application.flows.compose import (FORWARD, KIND_TITLES, RECEIPT, REPLY, REPLY_ALL, REPLY_LIST, ComposeForm,
                                          forward_body, form_problems, list_address, quoted_body, read_attachments,
                                          reply_form_subject)
from mailtriage.application.flows.pgp_reply import EncryptionPlan
from mailtriage.application.flows.proposals import Blocked, BlockedBy, Field, Proposal, Write, WriteKind
from mailtriage.application.flows.templates import Identity, receipt_body
from mailtriage.application.flows.text import spoof_warning
from mailtriage.application.flows.compose import default_reply_kind
from mailtriage.application.flows.templates import identity
from mailtriage.application.flows.open_project import OpenProject
from mailtriage.core.lean_dataclass import frozen_dataclass

ALREADY_REPLIED = "we already replied; the ball is in the reporter's court"


def _reply_target(thread: Thread, own_addresses: set[str]) -> Message:
    """The reporter's newest message; else the newest message not written by us; else the root.

    The reporter is whoever opened the thread. Team members write from their own
    addresses, which configuration does not list, so "not from the list" alone would
    answer a colleague instead of the reporter.
    """
    root = thread.messages[0]
    reporter = root.sender.email.lower()
    if reporter and reporter not in own_addresses:
        for message in reversed(thread.messages):
            if message.sender.email.lower() == reporter:
                return message
    for message in reversed(thread.messages):
        if message.sender.email.lower() not in own_addresses:
            return message
    return root


def own_addresses(config) -> set[str]:
    """The addresses that are us on a project: the security list and the resolved CC."""
    cc = resolve_security_cc(config)
    return {a.lower() for a in filter(None, [cc.security_cc, config.get("security_list")]) if isinstance(a, str)}


def reply_form(config, thread: Thread, kind: str, identity: Identity | None = None, *,
               forward_as: str = "inline", answering: Message | None = None) -> ComposeForm:
    """The compose form of a reply on a project source, filled in: the receipt template,
    a quoted reply to the reporter, a reply to all, or a forward (To left for the user).
    The security CC is in Cc of each; the signature and name come from settings.
    ``answering``: the message the user chose (found in an account, it may not be in the
    project's copy of the thread); else the reporter's newest message."""
    identity = identity or Identity()
    cc = resolve_security_cc(config)
    own = own_addresses(config)
    target = answering if answering is not None else _reply_target(thread, own)
    security = [cc.security_cc] if cc.security_cc else []
    to: tuple[str, ...] = (target.sender.email,) if target.sender.email else ()
    if kind == RECEIPT:
        body = receipt_body(config, thread, sender_name=identity.sender_name).text
        return ComposeForm(RECEIPT, to, tuple(merge_cc([], cc.security_cc, exclude=to)),
                           reply_subject(target.subject), body)
    if kind == REPLY:
        return ComposeForm(REPLY, to, tuple(merge_cc([], cc.security_cc, exclude=to)),
                           reply_subject(target.subject), quoted_body(target, identity.signature))
    if kind == REPLY_ALL:
        others = [a.email for a in (*target.to, *target.cc) if a.email and a.email.lower() not in own]
        return ComposeForm(REPLY_ALL, to, tuple(merge_cc(others, cc.security_cc, exclude=to)),
                           reply_subject(target.subject), quoted_body(target, identity.signature))
    if kind == REPLY_LIST:
        # The project's security list; the message's List-Post only when none is configured:
        # the reporter writes that header, so it must not choose where a security reply goes.
        # The security CC stays in Cc like every project draft's (the one outgoing rule).
        listed = config.get("security_list")
        address = listed if isinstance(listed, str) and listed else list_address(target)
        if not isinstance(address, str) or not is_plain_address(address):
            raise ValueError("no list to reply to: the message has no List-Post address and security_list is not set")
        to = (address,)
        return ComposeForm(REPLY, to, tuple(merge_cc([], cc.security_cc, exclude=to)),
                           reply_subject(target.subject), quoted_body(target, identity.signature))
    if kind == FORWARD:
        return ComposeForm(FORWARD, (), tuple(security), reply_form_subject(FORWARD, target.subject),
                           forward_body(target, identity.signature, inline=True), forward_as="inline")
    raise ValueError(f"a project source has no {kind!r} compose (new mail is for personal accounts)")


def propose_reply(
    sources: SourceSet,
    thread: Thread,
    body: str,
    *,
    title: str = "Reply draft",
    since: datetime | None = None,
    allow_second_draft: bool = False,
    reply_to: Message | None = None,
    form: ComposeForm | None = None,
    from_name: str | None = None,
    encryption: Callable[..., EncryptionPlan] | None = None,
) -> Proposal:
    """Build the reply-draft proposal for ``thread``; never writes anything.

    The reply answers ``reply_to`` when given (the import's receipt answers the
    reporter), else the newest message not written by us. ``form`` is what the person
    composed (kind, To, Cc, Subject, files to attach, body): its recipients replace the
    defaults after they are checked, and a removed security CC blocks the proposal.
    ``from_name`` is the configured display name put in ``From:``.

    Each step below reads what the earlier ones found and either adds to the proposal or
    says why nothing may be written (a :class:`Blocked`); the first block ends it.
    """
    if form is not None:
        body = form.body
        if title == "Reply draft" and form.kind != RECEIPT:
            title = f"{KIND_TITLES.get(form.kind, 'Reply')} draft"
    reply = _Reply(sources, thread, body, Proposal(title), form, allow_second_draft, from_name)
    steps: tuple[Callable[[], Blocked | None], ...] = (
        reply.gate, reply.pending_drafts, lambda: reply.sent_replies(since), lambda: reply.recipients(reply_to),
        reply.own_draft,
        lambda: reply.fields(encryption), reply.drafting_backend)
    for step in steps:
        blocked = step()
        if blocked is not None:
            reply.proposal.blocked = blocked
            return reply.proposal
        if reply.done:
            return reply.proposal
    reply.add_write()
    return reply.proposal


@dataclass
class _Reply:
    """What :func:`propose_reply` finds, step by step: each step reads the earlier ones' finds."""

    sources: SourceSet
    thread: Thread
    body: str
    proposal: Proposal
    form: ComposeForm | None
    allow_second_draft: bool
    from_name: str | None
    cc: CcResolution | None = None
    draft_res: Resolution | None = None
    own: set[str] = dc_field(default_factory=set)
    pending: list = dc_field(default_factory=list)
    pending_unknown: str | None = None  # why the pending-draft check could not run
    derive: Callable[[DraftRequest], str | None] | None = None  # the Message-ID the backend gives a request
    target: Message | None = None
    spoof: str | None = None
    request: DraftRequest | None = None
    attach: tuple[str, ...] = ()
    shown: list[Field] = dc_field(default_factory=list)
    plan: EncryptionPlan = dc_field(default_factory=EncryptionPlan)
    done: bool = False  # complete without a write: a preview, or the draft is already there

    def gate(self) -> Blocked | None:
        """The mandatory rule, the security CC and the backends that would serve the reply."""
        proposal, sources = self.proposal, self.sources
        abort = sources.mandatory_abort(Op.CREATE_DRAFT)
        if abort is not None:
            # The mandatory rule: while a mandatory backend is unavailable nothing is proposed.
            proposal.recap.append(abort)
            return Blocked(BlockedBy.MANDATORY, abort.aborted or "")
        cc = self.cc = resolve_security_cc(sources.config)
        proposal.warnings += list(cc.warnings)
        proposal.facts["security_cc"] = cc.security_cc
        proposal.facts["cc_fallback"] = cc.cc_fallback
        proposal.recap += [sources.resolve(op) for op in (Op.LIST_DRAFTS, Op.LIST_SENT_SINCE, Op.CREATE_DRAFT)]
        if cc.blocked:
            # Blocked means blocked: no draft, no preview, no text to copy (CLI and app alike).
            return Blocked(BlockedBy.SECURITY_CC,
                           "no security CC can be resolved; drafts are blocked until configuration is corrected")
        self.draft_res = sources.resolve(Op.CREATE_DRAFT)
        if self.draft_res.aborted:
            return Blocked(BlockedBy.MANDATORY, self.draft_res.aborted)
        self.own = {a.lower() for a in filter(None, [cc.security_cc, sources.config.get("security_list")])
                    if isinstance(a, str)}
        return None

    def pending_drafts(self) -> Blocked | None:
        """Drafts pending on the thread: shown instead of a new one."""
        proposal, sources, thread = self.proposal, self.sources, self.thread
        # Idempotency: a pending draft is shown instead of a new one. A check that cannot run
        # is said, and then no draft is offered (it could duplicate one we cannot see).
        try:
            self.pending = sources.dispatch(Op.LIST_DRAFTS, lambda b: b.list_drafts(thread.thread_id)).value
        except (NoBackendAvailable, MandatoryBackendUnavailable, MailError) as exc:
            self.pending_unknown = str(exc)
            proposal.notes.append(f"could not check pending drafts: {exc}")
        proposal.facts["pending_drafts"] = None if self.pending_unknown else len(self.pending)
        # A pending draft may be this very request's, written by a run that crashed before it
        # said so: the backend that names drafts by the request (IMAP) tells, once it is built.
        chosen = self.draft_res.chosen if self.draft_res is not None else None
        derive = getattr(sources.backends.get(chosen), "draft_message_id", None) if chosen else None
        self.derive = derive if callable(derive) else None
        if self.pending and not self.allow_second_draft and not self._may_be_own():
            return _pending_blocks(proposal, self.pending)
        return None

    def sent_replies(self, since: datetime | None) -> Blocked | None:
        """Whether we replied already (the ball is in the reporter's court): said, never blocking."""
        proposal, sources, thread = self.proposal, self.sources, self.thread
        window = since or (datetime.now(timezone.utc) - timedelta(days=90))
        try:
            sent = sources.dispatch(Op.LIST_SENT_SINCE, lambda b: b.list_sent_since(thread.thread_id, window)).value
        except (NoBackendAvailable, MandatoryBackendUnavailable, MailError) as exc:
            sent = []
            proposal.notes.append(f"could not check sent replies: {exc}")
        last_inbound = max((m.date for m in thread.messages if m.date and m.sender.email.lower() not in self.own),
                           default=None)
        already = bool(sent and (last_inbound is None or any(m.date and m.date >= last_inbound for m in sent)))
        proposal.facts["already_replied"] = already
        if already:
            proposal.notes.append(ALREADY_REPLIED)
        return None

    def _may_be_own(self) -> bool:
        """Whether a pending draft may be this request's own (told by its Message-ID)."""
        return bool(self.pending and not self.allow_second_draft and self.derive is not None
                    and any(d.message_id for d in self.pending))

    def recipients(self, reply_to: Message | None) -> Blocked | None:
        """Whom the reply answers, and what the person composed, checked; the draft request."""
        proposal, form, cc = self.proposal, self.form, self.cc
        assert cc is not None
        target = self.target = reply_to if reply_to is not None else _reply_target(self.thread, self.own)
        self.spoof = spoof_warning(target.sender.name, target.sender.email)
        if self.spoof:
            proposal.warnings.append(self.spoof)
        if not is_plain_address(target.sender.email):
            return self._unless_pending(Blocked(BlockedBy.RECIPIENT, f"the sender address {target.sender.email!r} "
                                                                     "is not one plain address; write this reply by hand"))
        to: tuple[str, ...] = (target.sender.email,)
        cc_list = tuple(merge_cc([], cc.security_cc, exclude=to))
        subject = reply_subject(target.subject)
        if form is not None:
            proposal.facts["compose_kind"] = form.kind
            problems = form_problems(form, security_cc=cc.security_cc)
            if problems:
                return self._unless_pending(Blocked(BlockedBy.COMPOSE, "; ".join(problems)))
            to, cc_list, subject, self.attach = form.to, form.cc, form.subject or subject, form.attach
        self.request = DraftRequest(
            thread_id=self.thread.thread_id,
            body=self.body,
            to=to,
            cc=cc_list,
            subject=subject,
            in_reply_to=target.message_id,
            references=tuple(dict.fromkeys([*target.references, target.message_id])),
            allow_second_draft=self.allow_second_draft,
            from_name=self.from_name,
        )
        return None

    def _unless_pending(self, blocked: Blocked) -> Blocked:
        """A block found before :meth:`own_draft` ran: drafts pending on the thread come first
        (no request is built, so none of them can be this request's own)."""
        return _pending_blocks(self.proposal, self.pending) if self._may_be_own() else blocked

    def own_draft(self) -> Blocked | None:
        """A pending draft that is this very request's (a rerun after a crash): shown, not written again."""
        if not self._may_be_own():
            return None
        assert self.derive is not None and self.request is not None
        own = [d for d in self.pending if d.message_id and d.message_id == self.derive(self.request)]
        if not own:
            return _pending_blocks(self.proposal, self.pending)
        proposal = self.proposal
        proposal.existing += pending_draft_fields(own[0])
        proposal.notes.append("this reply is already written as a draft (same recipients, subject and text, "
                              f"found by the Message-ID it is given; e.g. a rerun after a crash): {own[0].subject} → "
                              f"{', '.join(own[0].to)}; nothing is written again")
        proposal.facts["already_written"] = own[0].draft_ref
        self.done = True
        return None

    def fields(self, encryption: Callable[..., EncryptionPlan] | None) -> Blocked | None:
        """What the confirmation shows, and whether the reply can be encrypted as it must."""
        request, cc, target = self.request, self.cc, self.target
        assert request is not None and cc is not None and target is not None
        shown = [Field("To", ", ".join(request.to),
                       "the sender's name is another address; this is the real one" if self.spoof else None)]
        for addr in request.cc:
            marker = None
            if cc.security_cc and addr.lower() == cc.security_cc.lower():
                marker = "security CC (fallback)" if cc.cc_fallback else "security CC"
            shown.append(Field("Cc", addr, marker))
        shown += [
            Field("Subject", request.subject or ""),
            Field("In-Reply-To", request.in_reply_to or ""),
        ]
        shown += [Field("Attach", path, "read when you confirm") for path in self.attach]
        shown.append(Field("Body", self.body, multiline=True))
        # A reply to an encrypted report is encrypted in kind (application/flows/pgp_reply.py).
        # To every actual recipient (a forward or a reply-all is not encrypted to the reporter alone).
        plan = self.plan = (encryption(self.thread, target, (*request.to, *request.cc)) if encryption is not None
                            else EncryptionPlan())
        shown[-1:-1] = plan.fields
        self.shown = shown
        self.proposal.notes += plan.notes
        self.proposal.facts.update(plan.facts)
        if plan.blocked:
            return Blocked(BlockedBy.ENCRYPTION, plan.blocked)
        if plan.encrypt is not None and self.attach:
            # The reply is encrypted inline; attached files could not be, and must not leave in clear.
            return Blocked(BlockedBy.COMPOSE, "a reply to an encrypted report is encrypted inline and files cannot "
                                              "be attached to it: remove the attachments")
        return None

    def drafting_backend(self) -> Blocked | None:
        """The backend that would write the draft: there, it can, and nothing could double it."""
        proposal, draft_res = self.proposal, self.draft_res
        assert draft_res is not None and self.target is not None
        if not draft_res.chosen:
            proposal.preview = self.shown
            proposal.notes.append(
                "no backend available for create_draft — reply proposal omitted, "
                "please draft the receipt-of-confirmation reply by hand"
            )
            self.done = True
            return None
        if self.pending_unknown is not None:
            return Blocked(BlockedBy.PENDING_CHECK, "could not check for a pending draft on this thread, so no draft "
                                                    f"is offered (it could duplicate one): {self.pending_unknown}")
        backend = self.sources.backends[draft_res.chosen]
        if self.attach and not backend.features.draft_attachments:
            return Blocked(BlockedBy.ATTACHMENTS, f"backend {draft_res.chosen} cannot attach files to a draft; "
                                                  "leave Attach empty and attach them in your mail client")
        problem = _thread_problem(backend, self.thread, self.target)
        if problem:
            # Never offer a write the chosen backend cannot do for this thread.
            return Blocked(BlockedBy.THREAD, f"backend {draft_res.chosen} cannot draft on this thread: {problem}")
        return None

    def add_write(self) -> None:
        request, plan, attach, sources = self.request, self.plan, self.attach, self.sources
        assert request is not None and self.draft_res is not None and self.draft_res.chosen
        chosen = self.draft_res.chosen

        def apply(write: Write):
            # Files are read now, when the user confirmed, within the size limits.
            final = replace(request, body=write.body if write.body is not None else request.body,
                            attachments=read_attachments(attach))
            if plan.encrypt is not None:
                final = replace(final, body=plan.encrypt(final.body))
            return sources.dispatch(Op.CREATE_DRAFT, lambda b: b.create_draft(final), backend=chosen).value

        self.proposal.writes.append(
            Write(WriteKind.DRAFT, chosen, f"draft reply on {self.thread.thread_id}", self.shown, apply,
                  editable_body=True, body=self.body, label="Save draft",
                  where=drafts_where(sources.backends.get(chosen), chosen))
        )


def drafts_where(backend: object, name: str) -> str:
    """Where a draft lands, in the user's words, for every kind of drafts place: the account's
    Drafts when the source is an account ("into Drafts of account work"), the folder of a local
    Maildir ("into the local Maildir Mail/Drafts", relative to the project, or ~/…), else the
    named source's drafts ("into the drafts of mail source “drafts”", never "of source drafts")."""
    return f"into {drafts_place(backend, name)}"


def drafts_place(backend: object, name: str) -> str:
    """:func:`drafts_where` without its "into": where drafts are ("Drafts of account work")."""
    try:
        account_id = getattr(getattr(backend, "account", None), "id", None)
    except (ConfigError, MailError):  # an account source whose account is not configured
        account_id = None
    if isinstance(account_id, str):
        return f"Drafts of account {account_id}"
    folder = _local_drafts_folder(backend)
    if folder is not None:
        return f"the local Maildir {folder}"
    return f"the drafts of mail source “{name}”"


@frozen_dataclass
class PendingDrafts:
    """The drafts already pending on a thread (each blocks a new reply draft at its proposal,
    :func:`propose_reply`) and where they are, in the words of :func:`drafts_place`."""

    drafts: tuple[Any, ...]
    where: str


def pending_drafts(sources: SourceSet, thread_id) -> PendingDrafts:
    """What ``list_drafts`` finds on ``thread_id`` through the resolution rule, read only (issue
    35: said when the compose opens, before the person writes a reply the proposal would block).
    A check that cannot run finds none here: the proposal says so, and blocks."""
    try:
        listed = sources.dispatch(Op.LIST_DRAFTS, lambda b: b.list_drafts(thread_id))
    except (NoBackendAvailable, MandatoryBackendUnavailable, MailError):
        return PendingDrafts((), "")
    chosen = listed.resolution.chosen or ""
    return PendingDrafts(tuple(listed.value or ()), drafts_place(sources.backends.get(chosen), chosen))


def _local_drafts_folder(backend: object) -> str | None:
    """A local drafts folder as the user would type it: relative to the project directory when
    inside it, ``~/…`` when inside the home directory, else absolute (None: not a local folder)."""
    if getattr(backend, "root", None) is None:
        return None
    folder = getattr(backend, "drafts_folder", None)
    if not isinstance(folder, Path):
        return None
    project_dir = getattr(getattr(backend, "origin", None), "project_dir", None)
    absolute = folder.absolute()
    if isinstance(project_dir, Path) and absolute.is_relative_to(project_dir.absolute()):
        return absolute.relative_to(project_dir.absolute()).as_posix()
    home = Path.home()
    if absolute.is_relative_to(home):
        return "~/" + absolute.relative_to(home).as_posix()
    return str(absolute)


def _pending_blocks(proposal: Proposal, pending) -> Blocked:
    """Drafts already pending on the thread: shown instead, and they block a new one."""
    for draft in pending:
        proposal.notes.append(f"a draft is already pending on this thread: {draft.subject} → {', '.join(draft.to)}")
        proposal.existing += pending_draft_fields(draft)
    return Blocked(BlockedBy.PENDING_DRAFT, "a draft is already pending on this thread")


def _thread_problem(backend, thread: Thread, target: Message) -> str | None:
    """Why ``backend`` cannot draft a reply on ``thread`` (None when it can).

    The backend resolves the thread reference to its own thread (a thread keeps its
    identity across backends through its root Message-ID); a Message-ID backend must also hold the thread's root or
    the message answered, or the draft could not be threaded.
    """
    try:
        own_id = backend.own_thread_id(thread.thread_id)
        if own_id.is_message_id and backend.resolves_message_ids:
            wanted = [mid for mid in dict.fromkeys([own_id.value, target.message_id])
                      if mid and not mid.endswith("@mailtriage.invalid>")]
            if wanted and not any(backend.thread_for_message_id(mid) is not None for mid in wanted):
                return f"it holds no message of the thread {own_id.value}"
    except MailError as exc:
        return str(exc)
    return None


def pending_draft_fields(draft) -> list[Field]:
    """How a pending draft is shown instead of a new one: recipients, subject and text."""
    fields = [Field("Pending draft", f"{draft.subject} → {', '.join(draft.to)}")]
    if draft.cc:
        fields.append(Field("Pending draft Cc", ", ".join(draft.cc)))
    if draft.body:
        fields.append(Field("Pending draft body", draft.body, multiline=True))
    return fields


class ReplyFlow:
    """A reply draft on a thread of a project source, security CC resolved: the receipt
    template, a free quoted reply, a reply to all or a forward. Drafts only."""

    def __init__(self, project: OpenProject, user_settings: Any = None) -> None:
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
