"""Proposals: the unit of every write.

A :class:`Proposal` shows exactly what would be written — each :class:`Write` names
the backend that will write it and carries display fields (To, Cc with the resolved
security CC marked, Subject, In-Reply-To, body; tracker fields; files and commit
message) — and is applied only after an explicit confirm. The TUI and the CLI
(``--yes`` or an interactive prompt) show and apply the same objects.

Applying runs the writes in order and stops at the first failure; the
:class:`ApplyReport` says exactly what was written, what failed and what was not
attempted, so a re-run can complete the rest without duplicates.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable

from mailtriage.core.inert import terminal_line, terminal_text
from mailtriage.core.lean_dataclass import frozen_dataclass


class WriteKind(str, enum.Enum):
    DRAFT = "draft"
    FLAG = "flag"
    MOVE = "move"
    TRACKER = "tracker"
    PUBLISH = "publish"
    SEND = "send"
    SAVE = "save"  # a file written to a folder the user chose (attachments)
    KEY = "key"  # an OpenPGP key imported into the user's keyring (application/flows/pgp_keys.py)


class BlockedBy(str, enum.Enum):
    """Why nothing of a proposal may be written. The value is the documented ``blocked_by``
    code of the proposal's JSON (``facts.blocked_by``, docs/workflows.md): scripts read it."""

    MANDATORY = "mandatory"  # a mandatory backend is unavailable (the run aborts)
    SECURITY_CC = "security_cc"  # no security CC can be resolved
    RECIPIENT = "recipient"  # the reply's recipient is not one plain address
    COMPOSE = "compose"  # what the person composed cannot be written as it is
    ENCRYPTION = "encryption"  # a reply to an encrypted report cannot be encrypted
    PENDING_CHECK = "pending_check"  # the pending-draft check could not run
    PENDING_DRAFT = "pending_draft"  # a draft is already pending on the thread
    ATTACHMENTS = "attachments"  # the chosen backend cannot attach files to a draft
    THREAD = "thread"  # the chosen backend cannot draft on this thread
    SECURITY_THREAD = "security_thread"  # a personal reply on a thread of the security list
    ACCESS = "access"  # the account's access level does not allow the write
    SENDER = "sender"  # the account has no From address (no ``address``, a username that is not one)
    SEND_POLICY = "send_policy"  # the send policy (Principle 10) refuses the send
    GNUPG = "gnupg"  # gpg cannot be run
    TRACKER_RESTRICTION = "tracker_restriction"  # the tracker refuses the writes (access restriction)
    NO_MESSAGES = "no_messages"  # the thread has no messages to import
    FOLDER = "folder"  # the target folder is missing, or already holds every message
    SAVE_TARGET = "save_target"  # the attachments cannot be saved there as asked
    HELD_BY_OTHER = "held_by_other"  # the issue a claim names is held (assigned) by another triager
    UNPUSHED_COMMITS = "unpushed_commits"  # a claim's push would publish commits of the user's it never showed


@frozen_dataclass
class Blocked:
    """Why nothing of a proposal may be written: the reason a front end branches on, and the
    sentence a person reads (``str()`` of it)."""

    reason: BlockedBy
    text: str

    def __str__(self) -> str:
        return self.text


@frozen_dataclass
class Field:
    """One labelled value shown in the confirmation (``marker`` e.g. "security CC")."""

    label: str
    value: str
    marker: str | None = None
    multiline: bool = False

    def to_json(self) -> dict:
        return {"label": self.label, "value": self.value, "marker": self.marker}


@dataclass
class Write:
    """One write: what it is, which backend writes it, and how to apply it."""

    kind: WriteKind
    backend: str
    summary: str
    fields: list[Field]
    apply: Callable[["Write"], Any]
    editable_body: bool = False
    # Set when the proposal author lets the user edit a text (draft body) before confirming.
    body: str | None = None
    # The user's words for the change ("Mark unread", "Send") and for where it lands
    # ("into the folder /home/me/x", "from account work"); the dialog falls back to the
    # kind and "will be written by <backend>" when a flow sets neither.
    label: str | None = None
    where: str | None = None

    @property
    def heading(self) -> str:
        return self.label or self.kind.value.upper()

    @property
    def destination(self) -> str:
        return self.where or f"will be written by backend {self.backend}"

    def to_json(self) -> dict:
        return {
            "kind": self.kind.value,
            "backend": self.backend,
            "summary": self.summary,
            "fields": [f.to_json() for f in self.fields],
            "body": self.body,
        }


@dataclass
class ApplyReport:
    written: list[tuple[str, Any]] = field(default_factory=list)
    failed: tuple[str, str] | None = None
    not_attempted: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failed is None

    def describe(self) -> str:
        # Summaries and errors quote subjects and server text: one inert line each.
        lines = [f"written: {terminal_line(summary)}" for summary, _ in self.written]
        if self.failed:
            lines.append(f"FAILED: {terminal_line(self.failed[0])}: {terminal_line(self.failed[1])}")
        lines += [f"not attempted: {terminal_line(s)}" for s in self.not_attempted]
        return "\n".join(lines) or "nothing to write"

    def to_json(self) -> dict:
        return {
            "ok": self.ok,
            "written": [s for s, _ in self.written],
            "failed": {"write": self.failed[0], "error": self.failed[1]} if self.failed else None,
            "not_attempted": list(self.not_attempted),
        }


@dataclass
class Proposal:
    """Everything a flow wants to write, shown before anything is written."""

    title: str
    writes: list[Write] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    recap: list[Any] = field(default_factory=list)  # Resolution values: which backend serves each op
    blocked: Blocked | None = None  # why nothing may be written (e.g. no security CC)
    # What a write would contain when no backend can write it: shown, never applied.
    preview: list[Field] = field(default_factory=list)
    # What already exists and is shown instead of being written again (a pending draft).
    existing: list[Field] = field(default_factory=list)
    # JSON-ready facts a flow found (the issue an import maps to, "already_replied"), so a
    # caller can branch on them without parsing the notes. Why it is blocked is ``blocked``;
    # the JSON adds its code as ``facts.blocked_by``.
    facts: dict[str, Any] = field(default_factory=dict)
    _applied: bool = False

    @property
    def empty(self) -> bool:
        return not self.writes

    @property
    def sends(self) -> bool:
        """Every write sends mail: the confirmation says "Send", not "Confirm and write"."""
        return bool(self.writes) and all(w.kind is WriteKind.SEND for w in self.writes)

    def block(self, reason: BlockedBy, text: str) -> "Proposal":
        """Mark the proposal blocked (nothing of it may be written) and return it."""
        self.blocked = Blocked(reason, text)
        return self

    def apply(self, *, confirmed: bool,
              progress: Callable[[int, "Write", Any], None] | None = None) -> ApplyReport:
        """Apply the writes in order. ``confirmed`` must be True: an explicit user decision.

        ``progress(index, write, result)`` is called after each write succeeded (the TUI
        shows progress with it); an exception it raises stops the run like a failed write.

        Raises:
            PermissionError: not confirmed, or the proposal is blocked.
            RuntimeError: the proposal was already applied.
        """
        if not confirmed:
            raise PermissionError("a proposal is applied only after the user confirms it")
        if self.blocked:
            raise PermissionError(f"proposal blocked: {self.blocked}")
        if self._applied:
            raise RuntimeError("this proposal was already applied")
        self._applied = True
        report = ApplyReport()
        for index, write in enumerate(self.writes):
            try:
                result = write.apply(write)
            except Exception as exc:  # report exactly what failed; keep what was written
                report.failed = (write.summary, f"{type(exc).__name__}: {exc}")
                report.not_attempted = [w.summary for w in self.writes[index + 1 :]]
                return report
            report.written.append((write.summary, result))
            if progress is not None:
                try:
                    progress(index, write, result)
                except Exception as exc:  # the caller stopped the run between two writes
                    report.failed = ("stopped by the caller after the write above", f"{type(exc).__name__}: {exc}")
                    report.not_attempted = [w.summary for w in self.writes[index + 1 :]]
                    return report
        return report

    def to_json(self) -> dict:
        return {
            "title": self.title,
            "writes": [w.to_json() for w in self.writes],
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "recap": [r.to_json() if hasattr(r, "to_json") else str(r) for r in self.recap],
            "blocked": self.blocked.text if self.blocked else None,
            "preview": [f.to_json() for f in self.preview],
            "existing": [f.to_json() for f in self.existing],
            "facts": {**self.facts, "blocked_by": self.blocked.reason.value} if self.blocked else dict(self.facts),
        }

    def render_text(self) -> str:
        """A plain-text rendering for the CLI's interactive confirmation.

        Every value passes through the terminal sinks of :mod:`mailtriage.core.inert`:
        a subject's escape sequence cannot retitle the terminal or write the clipboard,
        and a CR/LF decoded from it cannot forge a line of the recap.
        """
        line = terminal_line
        out = [f"== {line(self.title)} =="]
        for warning in self.warnings:
            out.append(f"!! {line(warning)}")
        if self.blocked:
            out.append(f"BLOCKED: {line(self.blocked.text)}")

        def fields(items: list[Field], *, marks: bool = True) -> None:
            for f in items:
                if f.multiline:
                    out.append(f"    {line(f.label)}:")
                    out.extend(f"      | {text}" for text in terminal_text(f.value).split("\n"))
                else:
                    mark = f"  <-- {line(f.marker)}" if f.marker and marks else ""
                    out.append(f"    {line(f.label)}: {line(f.value)}{mark}")

        for i, write in enumerate(self.writes, 1):
            where = line(write.where) if write.where else f"via {line(write.backend)}"
            out.append(f"[{i}] {line(write.heading)} {where}: {line(write.summary)}")  # the dialog's words
            fields(write.fields)
        if self.preview:
            out.append("would write (no backend can write it):")
            fields(self.preview)
        if self.existing:
            out.append("already there (shown, not written again):")
            fields(self.existing, marks=False)
        for note in self.notes:
            out.append(f"note: {line(note)}")
        if self.recap:
            out.append("backends:")
            out += [f"  {line(r.summary() if hasattr(r, 'summary') else r)}" for r in self.recap]
        return "\n".join(out)


def confirm_interactively(proposal: Proposal, *, yes: bool, ask: Callable[[str], str] | None = None) -> bool:
    """CLI confirmation: ``--yes`` confirms; otherwise ask on the terminal (default no)."""
    if proposal.blocked or proposal.empty:
        return False
    if yes:
        return True
    ask = ask or input
    try:
        answer = ask("Write this? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def in_tracker(tracker: Any) -> str:
    """Where a tracker write lands, in the user's words (a Write's ``where``): "in tracker
    local-files (git working copy /path)", "in tracker github (repository owner/name)"."""
    place = None
    working_copy = getattr(tracker, "working_copy", None)
    root = getattr(tracker, "root", None)
    if callable(working_copy):
        try:
            wc = working_copy()
        except OSError:
            wc = None
        place = f"{wc.kind} working copy {wc.root}" if wc is not None else (f"folder {root}" if root else None)
    elif isinstance(getattr(tracker, "repo", None), str):
        place = f"repository {tracker.repo}"
    elif isinstance(getattr(tracker, "project", None), str):
        place = f"project {tracker.project}" + (f" at {tracker.base}" if getattr(tracker, "base", None) else "")
    return f"in tracker {tracker.kind}" + (f" ({place})" if place else "")
