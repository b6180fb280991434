"""Composing a reply, reply-all, forward or new mail: the form a person edits, its editor
file, and the checks made when it comes back (UI-free).

A :class:`ComposeForm` holds what the compose dialog and ``$EDITOR`` show: the kind, the
recipients, the subject, the files to attach and the body. :func:`editor_text` writes it
as a mail-like file (``To:``, ``Cc:``, ``Subject:``, ``Attach:`` at the top, a blank line,
the body, ending with a newline) and :func:`read_editor_text` reads it back and says what
is wrong: an address that does not parse as one plain address, a header folded onto a
second line or holding a control character (CR/LF injection), an unknown header. The
flows turn the problems into a blocked proposal; files are read only when the user
confirms (:func:`read_attachments`, size-limited).

How ``r`` chooses (:func:`default_reply_kind`): the receipt template answers a fresh report
(no one but the reporter has written in the thread yet); any later message gets a free
quoted reply. The other is one key away in the compose dialog.
"""

from __future__ import annotations

import mimetypes
import re
from dataclasses import field, replace
from email.utils import getaddresses
from pathlib import Path
from typing import Any

from mailtriage.backends.contract import Message, OutgoingAttachment, Thread, ThreadId, reply_subject
from mailtriage.backends.mailbox_contract import Compose
from mailtriage.backends.mime_header_text import is_plain_address
from mailtriage.backends.send_ledger import SendLedger
from mailtriage.backends.send_policy import (ANSWERING_KINDS, DEFAULT_SEND_CAP, SendRefused,
                                             check_before_confirm, refusal_hint)
from mailtriage.core.inert import header_text
from mailtriage.application.flows.errors import ApplicationError
from mailtriage.application.flows.proposals import BlockedBy, Field, Proposal, Write, WriteKind
from mailtriage.application.flows.text import one_line, plain_lines
from mailtriage.application.flows.errors import NoListToReplyTo, UsageError
from mailtriage.application.flows.security_thread import OutgoingRule, Verdict
from mailtriage.application.flows.templates import identity
from mailtriage.core.lean_dataclass import frozen_dataclass

RECEIPT, REPLY, REPLY_ALL, FORWARD, NEW = "receipt", "reply", "reply_all", "forward", "new"
#: A reply to the mailing list only (mutt's list-reply, ``L``): asked for by this kind, its
#: form is a REPLY addressed to the list, so drafts, sends and the send policy treat it as one.
REPLY_LIST = "reply_list"
KINDS = (RECEIPT, REPLY, REPLY_ALL, FORWARD, NEW)
KIND_TITLES = {RECEIPT: "Receipt (template)", REPLY: "Reply (quoted)", REPLY_ALL: "Reply all",
               FORWARD: "Forward", NEW: "New mail", REPLY_LIST: "Reply to the list"}
FORWARD_INLINE, FORWARD_ATTACHED = "inline", "attachment"

#: One attached file at most, and all of them together (read when the user confirms).
MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024
MAX_TOTAL_ATTACHMENT_BYTES = 20 * 1024 * 1024
EDITOR_HEADERS = ("To", "Cc", "Subject", "Attach")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


@frozen_dataclass
class ComposeForm:
    """What a person edits before a proposal is made. ``attach`` holds host paths, read
    when the write is confirmed; ``forward_as`` is inline or attachment (forwards)."""

    kind: str
    to: tuple[str, ...] = ()
    cc: tuple[str, ...] = ()
    subject: str = ""
    body: str = ""
    attach: tuple[str, ...] = ()
    forward_as: str = FORWARD_INLINE
    #: What the last editor round found wrong (the proposal blocks while any remain).
    problems: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_forward(self) -> bool:
        return self.kind == FORWARD

    @property
    def is_reply(self) -> bool:
        """The receipt template or a quoted reply (the two ``r`` switches between)."""
        return self.kind in (RECEIPT, REPLY)

    @property
    def title(self) -> str:
        text = KIND_TITLES.get(self.kind, "Mail")
        if self.is_forward:
            text += " · " + ("inline" if self.forward_as == FORWARD_INLINE else "as an attachment")
        return text


# -- how r chooses ------------------------------------------------------------------------

def list_address(message: Message) -> str | None:
    """The address a list reply goes to: the first ``mailto:`` of ``List-Post`` (RFC 2369),
    a plain address only; None when the message has none (or the list says ``NO``)."""
    value = message.header("List-Post") or ""
    for part in value.split(","):
        part = part.strip().strip("<>").strip()
        if part.lower().startswith("mailto:"):
            address = part[len("mailto:"):].split("?", 1)[0].strip()
            if address and is_plain_address(address):
                return address
    return None


def default_reply_kind(thread: Thread) -> str:
    """``receipt`` for a fresh report (only the reporter has written), else ``reply``."""
    if not thread.messages:
        return REPLY
    reporter = thread.messages[0].sender.email.lower()
    fresh = bool(reporter) and all(m.sender.email.lower() == reporter for m in thread.messages)
    return RECEIPT if fresh else REPLY


# -- bodies ---------------------------------------------------------------------------------

def _who(message: Message) -> str:
    name = one_line(message.sender.name, 120)
    email = one_line(message.sender.email, 200)
    return f"{name} <{email}>" if name and email and name.lower() != email.lower() else (email or name or "someone")


def quoted_body(message: Message, signature: str | None = None) -> str:
    """A free reply: an attribution line and the message quoted with ``> `` (the mail's
    text made inert: controls and invisible characters removed)."""
    when = message.date.strftime("%a, %d %b %Y %H:%M %z").strip() if message.date else "an unknown date"
    lines = plain_lines(message.body_text).rstrip("\n").split("\n")
    quoted = "\n".join(("> " + line) if line else ">" for line in lines)
    text = f"\n\nOn {when}, {_who(message)} wrote:\n{quoted}\n"
    return _signed(text, signature)


def forward_body(message: Message, signature: str | None = None, *, inline: bool = True) -> str:
    """A forward's body: the original's headers and text below a marker (inline), or only
    a line saying it is attached."""
    if not inline:
        return _signed("\n\nThe forwarded message is attached.\n", signature)
    head = [
        "---------- Forwarded message ----------",
        f"From: {_who(message)}",
        f"Date: {message.date.strftime('%a, %d %b %Y %H:%M %z').strip() if message.date else 'unknown'}",
        f"Subject: {one_line(message.subject, 300)}",
    ]
    to = ", ".join(one_line(str(a), 200) for a in message.to)
    if to:
        head.append(f"To: {to}")
    text = "\n\n" + "\n".join(head) + "\n\n" + plain_lines(message.body_text).rstrip("\n") + "\n"
    return _signed(text, signature)


def _signed(text: str, signature: str | None) -> str:
    if signature:
        text = text.rstrip("\n") + "\n\n-- \n" + signature.strip("\n") + "\n"
    return text


def forward_subject(subject: str | None) -> str:
    text = header_text(subject or "")
    return text if text.lower().startswith("fwd:") else f"Fwd: {text}".strip()


# -- the editor file ------------------------------------------------------------------------

def editor_text(form: ComposeForm) -> str:
    """The file ``$EDITOR`` opens: headers, a blank line, the body; ends with a newline."""
    head = [
        f"To: {', '.join(form.to)}",
        f"Cc: {', '.join(form.cc)}",
        f"Subject: {form.subject}",
        f"Attach: {', '.join(form.attach)}",
    ]
    body = form.body if form.body.endswith("\n") else form.body + "\n"
    return "\n".join(head) + "\n\n" + body


def split_addresses(value: str) -> tuple[tuple[str, ...], list[str]]:
    """Plain addresses of a ``To:``/``Cc:`` value, and what could not be read as one."""
    problems: list[str] = []
    out: list[str] = []
    if not value.strip():
        return (), problems
    for part in [p.strip() for p in value.split(",")]:
        if not part:
            continue
        parsed = getaddresses([part])
        addr = parsed[0][1] if len(parsed) == 1 else ""
        if not addr or not is_plain_address(addr):
            problems.append(f"{one_line(part, 120)!r} is not one plain address")
            continue
        out.append(addr)
    return tuple(dict.fromkeys(out)), problems


def read_editor_text(text: str, form: ComposeForm) -> ComposeForm:
    """The form as the person left it in the editor, with ``problems`` saying what is wrong.

    The header block ends at the first empty line. Each line is ``Name: value`` for one of
    To, Cc, Subject, Attach; a folded line, a control character or an unknown name is a
    problem (nothing a person types can add a header to the draft)."""
    text = text.replace("\r\n", "\n")
    head, sep, body = text.partition("\n\n")
    if not sep:
        head, body = text, ""
    problems: list[str] = []
    values: dict[str, str] = {}
    for number, line in enumerate(head.split("\n"), 1):
        if not line.strip():
            continue
        if line[:1] in (" ", "\t"):
            problems.append(f"line {number}: a header folded onto a second line is not accepted")
            continue
        name, colon, value = line.partition(":")
        name = name.strip()
        canonical = next((h for h in EDITOR_HEADERS if h.lower() == name.lower()), None)
        if not colon or canonical is None:
            problems.append(f"line {number}: {one_line(name, 40)!r} is not one of {', '.join(EDITOR_HEADERS)} "
                            "(leave an empty line between the headers and the text)")
            continue
        if _CONTROL.search(value.replace("\t", " ")) or "\r" in value:
            problems.append(f"line {number}: {canonical} holds a control character")
            continue
        if canonical in values:
            problems.append(f"line {number}: {canonical} is given twice")
            continue
        values[canonical] = value.strip()
    to, bad_to = split_addresses(values.get("To", ""))
    cc, bad_cc = split_addresses(values.get("Cc", ""))
    problems += [f"To: {p}" for p in bad_to] + [f"Cc: {p}" for p in bad_cc]
    attach = tuple(p.strip() for p in values.get("Attach", "").split(",") if p.strip())
    if not body.endswith("\n"):
        body += "\n"
    return replace(form, to=to, cc=cc, subject=values.get("Subject", ""), attach=attach, body=body,
                   problems=tuple(problems))


def form_problems(form: ComposeForm, *, security_cc: str | None = None) -> list[str]:
    """What keeps ``form`` from being proposed: the editor's problems, no recipient, and
    on a project source a security CC that was removed."""
    problems = list(form.problems)
    if not form.to:
        problems.append("the mail has no recipient (To:)")
    for label, values in (("To", form.to), ("Cc", form.cc)):
        for addr in values:
            if not is_plain_address(addr):
                problems.append(f"{label}: {one_line(addr, 120)!r} is not one plain address")
    if _CONTROL.search(form.subject):
        problems.append("Subject: holds a control character")
    if security_cc and security_cc.lower() not in {a.lower() for a in (*form.to, *form.cc)}:
        problems.append(f"the security CC {security_cc} was removed; put it back in Cc: "
                        "(project replies always copy the security list)")
    return problems


# -- attachments ------------------------------------------------------------------------

class DraftAttachmentError(ApplicationError, ValueError):
    """A file to attach cannot be read or is too large (nothing is written)."""


def read_attachments(paths, *, limit: int = MAX_ATTACHMENT_BYTES,
                     total_limit: int = MAX_TOTAL_ATTACHMENT_BYTES) -> tuple[OutgoingAttachment, ...]:
    """Read the files to attach, when the user confirms. Raises DraftAttachmentError naming the
    file (a missing file, a folder, one over ``limit`` or all over ``total_limit``)."""
    out: list[OutgoingAttachment] = []
    total = 0
    for raw in paths:
        path = Path(str(raw)).expanduser()
        try:
            size = path.stat().st_size
            if not path.is_file():
                raise DraftAttachmentError(f"{path} is not a file")
            if size > limit:
                raise DraftAttachmentError(f"{path} is {size} bytes; the limit is {limit} bytes per file")
            total += size
            if total > total_limit:
                raise DraftAttachmentError(f"the attachments are over {total_limit} bytes together")
            data = path.read_bytes()
        except OSError as exc:
            raise DraftAttachmentError(f"{path} cannot be read: {exc.strerror or exc}") from exc
        if len(data) > limit:  # it grew since it was measured
            raise DraftAttachmentError(f"{path} is over {limit} bytes")
        content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        out.append(OutgoingAttachment(header_text(path.name, 200) or "attachment", content_type, data))
    return tuple(out)


def reply_form_subject(kind: str, subject: str | None) -> str:
    if kind == FORWARD:
        return forward_subject(subject)
    if kind == NEW:
        return header_text(subject or "")
    return reply_subject(subject)


# -- personal accounts ------------------------------------------------------------------

def personal_form(kind: str, source: Message | None, own_address: str, *, signature: str | None = None,
                  forward_as: str = FORWARD_INLINE) -> ComposeForm:
    """The compose form on a personal account's message (``source``; None for new mail):
    a reply answers Reply-To or the sender, reply-all adds the others but us, a forward
    leaves To to the user. No security CC here: this is the user's own mail."""
    own = own_address.lower()
    if kind in (NEW,) or source is None:
        return ComposeForm(NEW, body=_signed("\n", signature))
    sender = source.sender.email
    reply_to = source.header("Reply-To")
    to: tuple[str, ...]
    if reply_to:
        to = tuple(a for _n, a in getaddresses([reply_to]) if a and is_plain_address(a)) or (sender,)
    else:
        to = (sender,) if sender else ()
    if kind in (REPLY, RECEIPT):
        return ComposeForm(REPLY, to, (), reply_subject(source.subject), quoted_body(source, signature))
    if kind == REPLY_LIST:
        address = list_address(source)
        if address is None:
            raise NoListToReplyTo("this message has no List-Post address: it did not come through a mailing list "
                                  "(reply to the sender with r, to all with A)")
        return ComposeForm(REPLY, (address,), (), reply_subject(source.subject), quoted_body(source, signature))
    if kind == REPLY_ALL:
        others = [a.email for a in (*source.to, *source.cc)
                  if a.email and a.email.lower() != own and a.email not in to]
        return ComposeForm(REPLY_ALL, to, tuple(dict.fromkeys(others)), reply_subject(source.subject),
                           quoted_body(source, signature))
    if kind == FORWARD:
        return ComposeForm(FORWARD, (), (), forward_subject(source.subject),
                           forward_body(source, signature, inline=forward_as == FORWARD_INLINE),
                           forward_as=forward_as)
    raise ValueError(f"unknown compose kind {kind!r}")


def _send_refused_now(mailbox, kind: str, source_id: str | None, account_id: str) -> str | None:
    """Why the send policy (Principle 10) will refuse this send, as far as it is known now
    (the answered message's headers, the account's authserv_id, the send cap), or None."""
    account = getattr(mailbox, "account", None)
    try:
        original = list(mailbox.get(source_id).content.headers) if source_id and kind in ANSWERING_KINDS else None
        refusal = check_before_confirm(kind, original, authserv_id=getattr(account, "authserv_id", None),
                                       sent_recently=SendLedger().count(account_id),
                                       send_cap=getattr(account, "send_cap", DEFAULT_SEND_CAP))
    except SendRefused as exc:  # the send ledger cannot be read: the send would be refused too
        refusal = exc.refusal
    if refusal is None:
        return None
    text = f"the send policy (Principle 10) refuses this send ({refusal.reason}, {refusal.rule}): {refusal.detail}"
    hint = refusal_hint(refusal, account_id)
    return f"{text}; {hint}" if hint else text


def refused_personal(kind: str, *, account_id: str, verdict) -> Proposal:
    """A personal reply or forward the outgoing rule refuses (``verdict``: a
    :class:`~mailtriage.application.flows.security_thread.Verdict` that is not personal): the
    message answers a thread of the security list, or that could not be checked."""
    kind = REPLY if kind in (RECEIPT, "") else kind
    proposal = Proposal(f"{KIND_TITLES.get(kind, 'Mail')} — nothing from account {account_id}")
    proposal.facts.update({"account": account_id, "compose_kind": kind, "security_thread": verdict.security})
    return proposal.block(BlockedBy.SECURITY_THREAD, verdict.refused or (
        f"this message answers a thread of the security list ({verdict.why}): it is answered only as the "
        f"project's draft with the security CC, never sent from account {account_id}"))


def propose_personal(mailbox, form: ComposeForm, *, account_id: str, access: str, source_id: str | None = None,
                     from_name: str | None = None, from_address: str = "", username: str = "") -> Proposal:
    """The proposal of a personal compose on ``mailbox`` (an adapter): with ``access =
    "send"`` a send (Principle 10 is checked by the adapter before anything leaves, and a
    copy is kept in Sent), with ``"draft"`` a draft in Drafts, with ``"read"`` blocked."""
    kind = REPLY if form.kind == RECEIPT else form.kind
    sending = access == "send"
    proposal = Proposal(f"{KIND_TITLES.get(kind, 'Mail')} — {'send' if sending else 'draft'} from account "
                        f"{account_id}")
    proposal.facts.update({"account": account_id, "compose_kind": kind, "access": access})
    if access not in ("draft", "send"):
        return proposal.block(BlockedBy.ACCESS, f"account {account_id} has access = {access!r}: nothing can be sent "
                                                f"or saved (set access = \"draft\" or \"send\" in [accounts.{account_id}])")
    if not from_address:
        # A draft or mail without From: cannot be sent (habits8 §3): refused, never written blank.
        why = f"its username {username!r} is not an address" if username else "it has no username that is one"
        return proposal.block(BlockedBy.SENDER, f"account {account_id} has no From address (no address is set and "
                                                f"{why}): set address = \"you@example.org\" in "
                                                f"[accounts.{account_id}]")
    problems = form_problems(form)
    if kind != NEW and not source_id:
        problems.append(f"a {kind} needs the message it answers")
    if problems:
        return proposal.block(BlockedBy.COMPOSE, "; ".join(problems))
    if sending:
        refused = _send_refused_now(mailbox, kind, source_id, account_id)
        if refused:
            # Known before the confirmation: said here, not after it (issue 30 §6).
            return proposal.block(BlockedBy.SEND_POLICY, refused)
    compose = Compose(kind=kind, to=form.to, cc=form.cc, subject=form.subject or None, body=form.body,
                      source_id=source_id if kind != NEW else None, from_name=from_name,
                      forward_inline=form.forward_as == FORWARD_INLINE)
    sender = f"{header_text(from_name or '', 200)} <{from_address}>" if from_name and from_address else from_address
    fields = [Field("From", sender)]
    fields += [Field("To", a) for a in form.to] + [Field("Cc", a) for a in form.cc]
    fields.append(Field("Subject", form.subject))
    if kind == FORWARD:
        fields.append(Field("Forward", "the original attached whole" if form.forward_as == FORWARD_ATTACHED
                            else "the original quoted in the text"))
    fields += [Field("Attach", path, "read when you confirm") for path in form.attach]
    fields.append(Field("Body", form.body, multiline=True))

    def final(write: Write) -> Compose:
        # Files are read now, when the user confirmed, within the size limits.
        return replace(compose, body=write.body if write.body is not None else compose.body,
                       attachments=read_attachments(form.attach))

    if sending:
        proposal.writes.append(Write(WriteKind.SEND, f"account {account_id}", f"send: {one_line(form.subject, 120)}",
                                     fields, lambda w: mailbox.send(final(w), confirmed=True),
                                     editable_body=True, body=form.body, label="Send",
                                     where=f"from account {account_id}, through its SMTP server"))
        proposal.notes.append("sent through the account's SMTP server after the send policy (Principle 10) "
                              "allows it; a copy is kept in Sent")
    else:
        proposal.writes.append(Write(WriteKind.DRAFT, f"account {account_id}", f"draft: {one_line(form.subject, 120)}",
                                     fields, lambda w: mailbox.save_draft(final(w)),
                                     editable_body=True, body=form.body, label="Save draft",
                                     where=f"into Drafts of account {account_id}"))
        proposal.notes.append(f"account {account_id} has access = \"draft\": saved to Drafts, not sent")
    return proposal


@frozen_dataclass
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
                                source_id=source_id, from_name=self.identity.name, from_address=self.from_address,
                                username=str(getattr(self.account, "username", "") or ""))
