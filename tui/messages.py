"""Messages between workers, panes and the app, as dataclasses.

Workers run backend calls on threads; they never touch a widget. They post one of
these messages to the app (``post_message`` is thread-safe) and the handler, on the
UI thread, updates the panes. ``request`` numbers let a handler drop the answer to a
request that a newer one superseded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message


@dataclass(eq=False)
class SessionOpened(Message):
    """The project configuration loaded and the mail sources were built."""


@dataclass(eq=False)
class SessionFailed(Message):
    """The project could not be opened (no project.md, or a configuration error)."""

    error: Exception
    missing_project: bool = False


@dataclass(eq=False)
class SourcesChecked(Message):
    """Availability of every configured backend and the resolution of every op."""

    matrix: list[dict]
    resolutions: dict  # Op -> Resolution
    mandatory_problem: str | None = None


@dataclass(eq=False)
class ThreadsLoaded(Message):
    """Rows of a listing. ``partial``: only the newest threads so far, the rest is coming."""

    request: int
    list_name: str | None
    rows: Any  # a ThreadRows
    resolution: Any  # Resolution
    partial: bool = False


@dataclass(eq=False)
class ThreadLoaded(Message):
    request: int
    thread: Any  # contract Thread
    resolution: Any


@dataclass(eq=False)
class WorkFailed(Message):
    """A backend call failed. ``where`` is the pane it was for (threads, reader, reply …)."""

    request: int
    where: str
    title: str
    error: BaseException
    resolution: Any = None
    details: str = ""


@dataclass(eq=False)
class ProposalReady(Message):
    """A flow built its proposal (``flow``: reply, import, publish, sync); nothing written yet."""

    request: int
    proposal: Any  # workflows Proposal
    flow: str = "reply"


@dataclass(eq=False)
class ProposalApplied(Message):
    proposal: Any
    report: Any  # ApplyReport
    flow: str = "reply"


@dataclass(eq=False)
class ThreadUrlReady(Message):
    url: str
    resolution: Any


@dataclass(eq=False)
class OpRecorded(Message):
    """One backend operation finished (from the op log; posted from any thread)."""

    record: Any  # core.trace.OpRecord


@dataclass(eq=False)
class TraceRecorded(Message):
    line: Any  # core.trace.TraceLine


@dataclass(eq=False)
class ConsoleResult(Message):
    """The JSON result of an operation run by hand in the backend console."""

    request: int
    document: dict = field(default_factory=dict)
    ok: bool = True


@dataclass(eq=False)
class SettingsSaved(Message):
    what: str
    error: str | None = None


@dataclass(eq=False)
class TrackerLoaded(Message):
    """The tracker's issues; ``available`` False when no tracker is configured (``description`` says why)."""

    request: int
    issues: list
    description: str
    problems: list = field(default_factory=list)
    available: bool = True


@dataclass(eq=False)
class TrackerIssueLoaded(Message):
    request: int
    issue: dict


@dataclass(eq=False)
class AccountFoldersLoaded(Message):
    """A personal account's folders (MailFolder list), for the folders pane."""

    request: int
    account_id: str
    folders: Any


@dataclass(eq=False)
class FolderListed(Message):
    """A personal account's folder, as rows; ``cursor``: the row to put the cursor on."""

    request: int
    label: str
    rows: Any  # a FolderRows
    cursor: int = 0


@dataclass(eq=False)
class AlertsFound(Message):
    """The new-report poll found new or updated threads (a workflows PollOutcome, not saved yet)."""

    outcome: Any
    list_name: str | None = None
    loop: Any = None  # the AlertLoop that polled (an answer from a stopped loop is dropped)


@dataclass(eq=False)
class AlertsFailed(Message):
    """One poll failed (the loop goes on and polls again later)."""

    error: BaseException


@dataclass(eq=False)
class CaseLoaded(Message):
    """The MAS case record of the thread being read (``Store.thread``), or an error reading it."""

    request: int
    thread: Any
    record: Any = None
    error: str | None = None
