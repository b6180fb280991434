"""Import a report: one proposal from a thread on the security list.

The proposal holds, in the order they are written:

(a) a tracker issue — title from the subject, a body with the ``### Heading`` fields the
    project declares (``tracker.fields``): the thread URL from ``thread_url`` (the key that
    finds the issue again), the reporter, the received date, affected versions left blank
    for the triager — and the labels of ``import.labels`` that the project declares;
(b) a status-rollup entry ``Import``;
(c) a receipt-of-confirmation reply as a *draft* on the thread (the project's
    ``templates.receipt``), with the security CC resolved and any fallback warning shown,
    through :func:`mailtriage.application.flows.reply.propose_reply`: a pending draft is shown
    instead of a new one, and a thread the team already answered gets no receipt;
(d) the recap of which backend serves each operation.

Nothing is written until the proposal is applied with ``confirmed=True``. Every write
checks again, when it runs, whether its part already exists, so running the import a
second time after a failure part-way completes it without duplicates: the thread URL in
the tracker is the key.
"""

from __future__ import annotations

from datetime import timezone
from typing import Any, Callable

from mailtriage.backends.contract import Message, Op, Thread, ThreadId
from mailtriage.backends.errors import MandatoryBackendUnavailable, NoBackendAvailable
from mailtriage.backends.registry import SourceSet
from mailtriage.trackers.contract import Tracker
from mailtriage.trackers.values import Created, Existing, WriteResult
from mailtriage.application.flows import linking
from mailtriage.application.flows.pgp_reply import ENCRYPTED_IMPORT, thread_was_encrypted
from mailtriage.application.flows.proposals import BlockedBy, Field, Proposal, Write, WriteKind, in_tracker
from mailtriage.application.flows.reply import propose_reply
from mailtriage.application.flows.templates import identity, receipt_body
from mailtriage.application.flows.text import display_address, markdown_inert, one_line, spoof_warning
from dataclasses import replace
from typing import Sequence
from mailtriage.application.flows.open_project import OpenProject

DEFAULT_IMPORT_LABELS = ("needs triage", "needs-triage")


def import_labels(config, tracker: Tracker, warnings: list[str]) -> list[str]:
    """``import.labels`` that the project declares; undeclared ones are left out with a
    warning (a flow never invents a label). Without ``import.labels``: "needs triage" (or
    "needs-triage") when declared, else none."""
    declared = tracker.policy.labels or ()
    wanted = config.get("import.labels")
    if wanted is None:
        return [next(label for label in DEFAULT_IMPORT_LABELS if label in declared)] \
            if any(label in declared for label in DEFAULT_IMPORT_LABELS) else []
    if isinstance(wanted, str):
        wanted = [wanted]
    out = []
    for label in wanted if isinstance(wanted, list) else []:
        label = str(label)
        if label in declared:
            out.append(label)
        else:
            warnings.append(f"import.labels names {label!r}, which tracker.labels does not declare; left out")
    return out


def issue_title(thread: Thread) -> str:
    """The subject as one visible line (the tracker refuses control and bidi characters)."""
    title = one_line(thread.subject, 200)
    return title or f"Report from {display_address(thread.messages[0].sender.name, thread.messages[0].sender.email)}"


def _when(message: Message) -> str:
    if message.date is None:
        return "(no date)"
    return message.date.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def issue_body(config, thread: Thread, link: str) -> str:
    """The new issue's body: one line of context, then every declared field."""
    root = thread.messages[0]
    values = {
        linking.THREAD_FIELD.lower(): link,
        "reporter": markdown_inert(display_address(root.sender.name, root.sender.email)),
        "received": _when(root),
    }
    parts = ["Report received on the security list; imported by mailtriage."]
    for name in linking.declared_fields(config):
        value = values.get(name.lower(), "")
        parts.append(f"### {name}\n\n{value}".rstrip() + "\n")
    return "\n\n".join(p.rstrip("\n") for p in parts) + "\n"


def import_entry(thread: Thread, thread_id: ThreadId, link: str) -> str:
    root = thread.messages[0]
    newest = max((m.date for m in thread.messages if m.date), default=None)
    lines = [
        f"Imported from the security list: {link}",
        linking.thread_line(thread_id),
        f"Reported by {markdown_inert(display_address(root.sender.name, root.sender.email))} on {_when(root)}; "
        f"{len(thread.messages)} message{'s' if len(thread.messages) != 1 else ''} in the thread.",
    ]
    if newest:
        lines.append(linking.covers_line(newest))
    lines.append(linking.seen_line(m.message_id for m in thread.messages))  # what a sync takes as seen
    return "\n".join(lines)


def propose_import(sources: SourceSet, tracker: Tracker, thread_id: ThreadId, *,
                   user: str | None = None, sender_name: str | None = None,
                   thread: Thread | None = None, encryption: Callable | None = None,
                   bulk: bool = False) -> Proposal:
    """The import proposal for ``thread_id``; writes nothing.

    ``thread`` may be given when the caller already read it (the TUI has it open).
    ``bulk``: one of many tagged threads; a thread the team already answered on the list
    gets no receipt (alone, the import proposes it with a note, for the user to judge).
    ``facts`` of the result: ``issue`` (the existing issue, if any), ``imported``,
    ``thread_url``, ``already_replied``, ``pending_drafts``.

    Raises:
        the backend's errors when the thread cannot be read (BackendFailure,
        Unavailable, NoBackendAvailable), and the tracker's errors when the tracker
        cannot be searched (an import that cannot look for the existing issue would
        risk a duplicate).
    """
    config = sources.config
    proposal = Proposal(f"Import report {thread_id}")
    try:
        sources.preflight()
    except MandatoryBackendUnavailable as exc:
        return proposal.block(BlockedBy.MANDATORY, str(exc))

    if thread is None:
        read = linking.dispatch_thread_op(sources, Op.READ_THREAD, thread_id, lambda b: b.read_thread(thread_id))
        thread = read.value
        proposal.recap.append(read.resolution)
    else:
        proposal.recap.append(sources.resolve(Op.READ_THREAD))
    if not thread.messages:
        return proposal.block(BlockedBy.NO_MESSAGES, f"thread {thread_id} has no messages")
    proposal.title = f"Import report: {one_line(thread.subject, 100)}"
    if thread_was_encrypted(thread):
        # The tracker's own guard refuses every write to a tracker not shown access-restricted.
        proposal.warnings.append(ENCRYPTED_IMPORT)
        proposal.facts["from_encrypted_mail"] = True

    try:
        got = linking.dispatch_thread_op(sources, Op.THREAD_URL, thread_id, lambda b: b.thread_url(thread_id))
        link = str(got.value)
        proposal.recap.append(got.resolution)
    except NoBackendAvailable as exc:
        link = str(thread_id)
        proposal.recap.append(sources.resolve(Op.THREAD_URL))
        proposal.notes.append(f"{exc}: the thread ID {link} is recorded as the thread link instead")
    proposal.facts["thread_url"] = link

    user = user or config.get("tracker.user") or None
    state: dict[str, Any] = {"issue": linking.find_issue_for_thread(tracker, link, thread_id)}
    existing = state["issue"]
    imported = False
    if existing:
        rollup = linking.rollup_state(tracker, existing)
        if rollup.problem:
            proposal.warnings.append(rollup.problem)
        imported = rollup.imported
        proposal.notes.append(f"this thread is already in the tracker as {existing}"
                              + ("; its Import entry is there" if imported else "; its Import entry is missing"))
    proposal.facts.update(issue=existing, imported=imported)

    labels = import_labels(config, tracker, proposal.warnings)
    title = issue_title(thread)
    body = issue_body(config, thread, link)
    entry = import_entry(thread, thread_id, link)
    tracker_name = f"tracker:{tracker.kind}"

    if not existing:
        def create(write: Write) -> Existing | Created | linking.Folded:
            # Another run may have created it since the proposal was made, or be creating it
            # now: found or created once (under the tracker lock, or re-checked and folded).
            made = linking.find_or_create_issue(tracker, link, thread_id, title, body, labels)
            state["issue"] = made["id"]
            return made

        proposal.writes.append(Write(
            WriteKind.TRACKER, tracker_name, f"create the tracker issue \"{title}\"",
            [Field("Title", title), Field("Labels", ", ".join(labels) or "(none)"),
             Field("Body", body, multiline=True)],
            create, label="Create issue", where=in_tracker(tracker)))

    if not imported:
        def append_import(write: Write) -> WriteResult | Existing:
            issue = state["issue"]
            if issue is None:
                raise RuntimeError("no tracker issue to add the Import entry to")
            # checked again where the entry is written (under the lock on local files): one
            # Import entry, however many runs reach this point
            return tracker.rollup_append(issue, linking.IMPORT_ACTION, entry, user=user,
                                         unless_action=linking.IMPORT_ACTION)

        proposal.writes.append(Write(
            WriteKind.TRACKER, tracker_name,
            f"status rollup entry {linking.IMPORT_ACTION} on {existing or 'the new issue'}",
            [Field("Action", linking.IMPORT_ACTION), Field("User", user or tracker.default_user()),
             Field("Entry", entry, multiline=True)],
            append_import, label=f"Add {linking.IMPORT_ACTION} entry to {existing or 'the new issue'}",
            where=in_tracker(tracker)))

    answered = team_answers(thread, config) if bulk else []
    if answered:
        proposal.notes.append(f"already answered by the team ({', '.join(answered[:3])}"
                              + (" …" if len(answered) > 3 else "") + "): no receipt drafted in a bulk import; "
                              "import this thread alone to draft one anyway")
        proposal.facts["team_answered"] = True
    else:
        _add_receipt(proposal, sources, thread, sender_name, encryption)
    root = getattr(tracker, "root", None)
    proposal.recap.append(f"tracker → {tracker.kind}" + (f" ({root.resolve()})" if root is not None else ""))
    if proposal.empty and not proposal.blocked:
        proposal.notes.append("nothing left to write: this report is imported and its receipt is handled")
    if existing and imported:  # no tracker write: the title says what is left (issue 35: the words)
        subject = proposal.title.removeprefix("Import report: ")
        proposal.title = (f"Receipt draft ({existing} imported already): {subject}" if proposal.writes
                          else f"Imported already as {existing}: {subject}")
    return proposal


def team_answers(thread: Thread, config) -> list[str]:
    """Addresses of the team that wrote in the thread after the report: a sender other than
    the reporter whose domain is the security list's domain or a parent of it (the list
    security@frob.example.org, a member sam@example.org or tara@frob.example.org)."""
    listed = config.get("security_list")
    domain = listed.rpartition("@")[2].lower() if isinstance(listed, str) and "@" in listed else ""
    if not domain or not thread.messages:
        return []
    reporter = thread.messages[0].sender.email.lower()
    out: list[str] = []
    for message in thread.messages[1:]:
        sender = message.sender.email.lower()
        own = sender.rpartition("@")[2]
        if sender != reporter and own and (own == domain or domain.endswith("." + own)) and sender not in out:
            out.append(sender)
    return out


# A receipt these block is left out with a warning and the tracker part goes on: no draft until
# configuration is corrected, for a sender we cannot answer, when the pending-draft check cannot
# run, when the drafting backend lacks the thread, or when the reply cannot be encrypted.
_RECEIPT_OMITTED = frozenset({BlockedBy.SECURITY_CC, BlockedBy.RECIPIENT, BlockedBy.PENDING_CHECK,
                              BlockedBy.THREAD, BlockedBy.ENCRYPTION})


def _add_receipt(proposal: Proposal, sources: SourceSet, thread: Thread, sender_name: str | None,
                 encryption: Callable | None = None) -> None:
    rendered = receipt_body(sources.config, thread, sender_name=sender_name)
    if rendered.note:
        proposal.notes.append(rendered.note)
    reporter = thread.messages[0].sender.email.lower()
    # The receipt answers the reporter: their newest message, not a team member's reply.
    target = next((m for m in reversed(thread.messages) if m.sender.email.lower() == reporter), thread.messages[0])
    others = sorted({m.sender.email for m in thread.messages[1:] if m.sender.email.lower() != reporter})
    spoof = spoof_warning(target.sender.name, target.sender.email)
    if spoof and spoof not in proposal.warnings:
        proposal.warnings.append(spoof)
    if others:
        proposal.notes.append(f"the thread already has replies from {', '.join(others[:5])}"
                              + (" …" if len(others) > 5 else "") + "; check whether the reporter was answered")
    reply = propose_reply(sources, thread, rendered.text, title="Receipt-of-confirmation draft", reply_to=target,
                          from_name=identity(sources.config).name,
                          encryption=encryption)
    proposal.warnings += [w for w in reply.warnings if w not in proposal.warnings]
    proposal.notes += reply.notes
    proposal.recap += reply.recap
    proposal.existing += reply.existing
    proposal.preview += reply.preview
    for key in ("pending_drafts", "already_replied", "security_cc", "cc_fallback"):
        if key in reply.facts:
            proposal.facts[key] = reply.facts[key]
    blocked = reply.blocked
    if blocked is not None and blocked.reason is BlockedBy.MANDATORY:
        proposal.blocked = blocked
        return
    if blocked is not None and blocked.reason in _RECEIPT_OMITTED:
        proposal.warnings.append(f"receipt draft omitted: {blocked.text}")
        return
    if blocked is not None and blocked.reason is BlockedBy.PENDING_DRAFT:
        return  # shown in `existing` instead of a new one
    if reply.facts.get("already_replied"):
        return  # the ball is in the reporter's court: no receipt on top of a reply
    for write in reply.writes:
        write.summary = f"receipt-of-confirmation {write.summary}"
    proposal.writes += reply.writes


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

    def __init__(self, project: OpenProject) -> None:
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
            title = one.title.partition(": ")[2] or one.title  # the thread's subject, after what is proposed
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
