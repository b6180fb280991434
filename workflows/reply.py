"""Propose a reply *draft* on a thread, with the security CC resolved.

The proposal shows To, Cc (the resolved security CC marked, any fallback warning
prominent), Subject, In-Reply-To, the body and the backend that will write the draft.
Before proposing it checks ``list_drafts`` and ``list_sent_since`` where a backend
serves them: a pending draft is shown instead of a new one, and a reply already sent
says the ball is in the reporter's court. Nothing is written until the proposal is
applied with ``confirmed=True``.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Callable

from mailtriage.backends.contract import DraftRequest, Message, Op, Thread, reply_subject
from mailtriage.backends.errors import MailError, MandatoryBackendUnavailable, NoBackendAvailable
from mailtriage.backends.mime_header_text import is_plain_address
from mailtriage.backends.registry import SourceSet
from mailtriage.backends.security_cc import merge_cc, resolve_security_cc
from mailtriage.workflows.compose import (FORWARD, KIND_TITLES, RECEIPT, REPLY, REPLY_ALL, REPLY_LIST, ComposeForm,
                                          forward_body, form_problems, list_address, quoted_body, read_attachments,
                                          reply_form_subject)
from mailtriage.workflows.pgp_reply import EncryptionPlan
from mailtriage.workflows.proposals import Field, Proposal, Write, WriteKind
from mailtriage.workflows.templates import Identity, receipt_body
from mailtriage.workflows.text import spoof_warning

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
        # The list only (its List-Post, else the project's security list); the security CC
        # stays in Cc like every project draft's (the one outgoing rule).
        address = list_address(target) or config.get("security_list")
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
    """
    config = sources.config
    if form is not None:
        body = form.body
        if title == "Reply draft" and form.kind != RECEIPT:
            title = f"{KIND_TITLES.get(form.kind, 'Reply')} draft"
    proposal = Proposal(title)
    abort = sources.mandatory_abort(Op.CREATE_DRAFT)
    if abort is not None:
        # The mandatory rule: while a mandatory backend is unavailable nothing is proposed.
        proposal.recap.append(abort)
        proposal.blocked = abort.aborted
        proposal.facts["blocked_by"] = "mandatory"
        return proposal
    cc = resolve_security_cc(config)
    proposal.warnings += list(cc.warnings)
    proposal.facts["security_cc"] = cc.security_cc
    proposal.facts["cc_fallback"] = cc.cc_fallback
    for res_op in (Op.LIST_DRAFTS, Op.LIST_SENT_SINCE, Op.CREATE_DRAFT):
        proposal.recap.append(sources.resolve(res_op))
    if cc.blocked:
        # Blocked means blocked: no draft, no preview, no text to copy (CLI and app alike).
        proposal.blocked = "no security CC can be resolved; drafts are blocked until configuration is corrected"
        proposal.facts["blocked_by"] = "security_cc"
        return proposal

    draft_res = sources.resolve(Op.CREATE_DRAFT)
    if draft_res.aborted:
        proposal.blocked = draft_res.aborted
        proposal.facts["blocked_by"] = "mandatory"
        return proposal

    own = {a.lower() for a in filter(None, [cc.security_cc, config.get("security_list")]) if isinstance(a, str)}
    # Idempotency: a pending draft is shown instead of a new one. A check that cannot run
    # is said, and then no draft is offered (it could duplicate one we cannot see).
    pending_unknown: str | None = None
    try:
        pending = sources.dispatch(Op.LIST_DRAFTS, lambda b: b.list_drafts(thread.thread_id)).value
    except (NoBackendAvailable, MandatoryBackendUnavailable, MailError) as exc:
        pending = []
        pending_unknown = str(exc)
        proposal.notes.append(f"could not check pending drafts: {exc}")
    proposal.facts["pending_drafts"] = None if pending_unknown else len(pending)
    # A pending draft may be this very request's, written by a run that crashed before it
    # said so: the backend that names drafts by the request (IMAP) tells, once it is built.
    derive = getattr(sources.backends.get(draft_res.chosen), "draft_message_id", None) if draft_res.chosen else None
    own_check = bool(pending and not allow_second_draft and callable(derive) and any(d.message_id for d in pending))
    if pending and not allow_second_draft and not own_check:
        return _pending_blocks(proposal, pending)

    window = since or (datetime.now(timezone.utc) - timedelta(days=90))
    try:
        sent = sources.dispatch(Op.LIST_SENT_SINCE, lambda b: b.list_sent_since(thread.thread_id, window)).value
    except (NoBackendAvailable, MandatoryBackendUnavailable, MailError) as exc:
        sent = []
        proposal.notes.append(f"could not check sent replies: {exc}")
    last_inbound = max((m.date for m in thread.messages if m.date and m.sender.email.lower() not in own), default=None)
    already = bool(sent and (last_inbound is None or any(m.date and m.date >= last_inbound for m in sent)))
    proposal.facts["already_replied"] = already
    if already:
        proposal.notes.append(ALREADY_REPLIED)

    target = reply_to if reply_to is not None else _reply_target(thread, own)
    spoof = spoof_warning(target.sender.name, target.sender.email)
    if spoof:
        proposal.warnings.append(spoof)
    if not is_plain_address(target.sender.email):
        proposal.blocked = (f"the sender address {target.sender.email!r} is not one plain address; "
                            "write this reply by hand")
        proposal.facts["blocked_by"] = "recipient"
        return proposal
    to = (target.sender.email,)
    cc_list = tuple(merge_cc([], cc.security_cc, exclude=to))
    subject = reply_subject(target.subject)
    attach: tuple[str, ...] = ()
    if form is not None:
        proposal.facts["compose_kind"] = form.kind
        problems = form_problems(form, security_cc=cc.security_cc)
        if problems:
            proposal.blocked = "; ".join(problems)
            proposal.facts["blocked_by"] = "compose"
            return proposal
        to, cc_list, subject, attach = form.to, form.cc, form.subject or subject, form.attach
    references = tuple(dict.fromkeys([*target.references, target.message_id]))
    request = DraftRequest(
        thread_id=thread.thread_id,
        body=body,
        to=to,
        cc=cc_list,
        subject=subject,
        in_reply_to=target.message_id,
        references=references,
        allow_second_draft=allow_second_draft,
        from_name=from_name,
    )
    if own_check:
        own = [d for d in pending if d.message_id and d.message_id == derive(request)]
        if not own:
            return _pending_blocks(proposal, pending)
        proposal.existing += pending_draft_fields(own[0])
        proposal.notes.append("this reply is already written as a draft (same recipients, subject and text, "
                              f"found by the Message-ID it is given; e.g. a rerun after a crash): {own[0].subject} → "
                              f"{', '.join(own[0].to)}; nothing is written again")
        proposal.facts["already_written"] = own[0].draft_ref
        return proposal
    fields = [Field("To", ", ".join(request.to),
                    "the sender's name is another address; this is the real one" if spoof else None)]
    for addr in request.cc:
        marker = None
        if cc.security_cc and addr.lower() == cc.security_cc.lower():
            marker = "security CC (fallback)" if cc.cc_fallback else "security CC"
        fields.append(Field("Cc", addr, marker))
    fields += [
        Field("Subject", request.subject or ""),
        Field("In-Reply-To", request.in_reply_to or ""),
    ]
    fields += [Field("Attach", path, "read when you confirm") for path in attach]
    fields.append(Field("Body", body, multiline=True))
    # A reply to an encrypted report is encrypted in kind (workflows/pgp_reply.py).
    # To every actual recipient (a forward or a reply-all is not encrypted to the reporter alone).
    plan = encryption(thread, target, (*request.to, *request.cc)) if encryption is not None else EncryptionPlan()
    fields[-1:-1] = plan.fields
    proposal.notes += plan.notes
    proposal.facts.update(plan.facts)
    if plan.blocked:
        proposal.blocked = plan.blocked
        proposal.facts["blocked_by"] = "encryption"
        return proposal
    if plan.encrypt is not None and attach:
        # The reply is encrypted inline; attached files could not be, and must not leave in clear.
        proposal.blocked = ("a reply to an encrypted report is encrypted inline and files cannot be attached "
                            "to it: remove the attachments")
        proposal.facts["blocked_by"] = "compose"
        return proposal

    if not draft_res.chosen:
        proposal.preview = fields
        proposal.notes.append(
            "no backend available for create_draft — reply proposal omitted, "
            "please draft the receipt-of-confirmation reply by hand"
        )
        return proposal
    if pending_unknown is not None:
        proposal.blocked = ("could not check for a pending draft on this thread, so no draft is offered "
                            f"(it could duplicate one): {pending_unknown}")
        proposal.facts["blocked_by"] = "pending_check"
        return proposal
    if attach and not sources.backends[draft_res.chosen].features.draft_attachments:
        proposal.blocked = (f"backend {draft_res.chosen} cannot attach files to a draft; "
                            "leave Attach empty and attach them in your mail client")
        proposal.facts["blocked_by"] = "attachments"
        return proposal
    problem = _thread_problem(sources.backends[draft_res.chosen], thread, target)
    if problem:
        # Never offer a write the chosen backend cannot do for this thread.
        proposal.blocked = f"backend {draft_res.chosen} cannot draft on this thread: {problem}"
        proposal.facts["blocked_by"] = "thread"
        return proposal

    def apply(write: Write):
        # Files are read now, when the user confirmed, within the size limits.
        final = replace(request, body=write.body if write.body is not None else request.body,
                        attachments=read_attachments(attach))
        if plan.encrypt is not None:
            final = replace(final, body=plan.encrypt(final.body))
        return sources.dispatch(Op.CREATE_DRAFT, lambda b: b.create_draft(final), backend=draft_res.chosen).value

    proposal.writes.append(
        Write(WriteKind.DRAFT, draft_res.chosen, f"draft reply on {thread.thread_id}", fields, apply,
              editable_body=True, body=body)
    )
    return proposal


def _pending_blocks(proposal: Proposal, pending) -> Proposal:
    """The proposal blocked by drafts already pending on the thread, shown instead."""
    for draft in pending:
        proposal.notes.append(f"a draft is already pending on this thread: {draft.subject} → {', '.join(draft.to)}")
        proposal.existing += pending_draft_fields(draft)
    proposal.blocked = "a draft is already pending on this thread"
    proposal.facts["blocked_by"] = "pending_draft"
    return proposal


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
