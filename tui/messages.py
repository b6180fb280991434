"""Messages between workers, panes and screens, as dataclasses with typed fields.

Workers run backend calls on threads; they never touch a widget. They post one of
these messages to the screen that owns them (``post_message`` is thread-safe) and the
handler, on the UI thread, updates the panes. ``request`` numbers let a handler drop
the answer to a request that a newer one superseded.

A failed call is a subclass of :class:`WorkFailed`, one per area (threads, reader,
proposals, tracker …): Textual calls the handler named after the class, so the type of
the message, not a string inside it, decides which pane shows the failure.

The domain types are imported for type checking only: the messages carry them, and
importing them here at run time would only slow the start-up.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, ClassVar, Mapping, TypedDict

from textual.message import Message

from mailtriage.core.lean_dataclass import lean_dataclass as message

if TYPE_CHECKING:
    from mailtriage.application import Op, Thread
    from mailtriage.application import MailFolder, MailHeader
    from mailtriage.application import Resolution
    from mailtriage.core.trace import OpRecord, TraceLine
    from mailtriage.tui.alerts import AlertLoop
    from mailtriage.tui.mailbox_rows import FolderRows
    from mailtriage.tui.rows import ThreadRows
    from mailtriage.application import PollOutcome
    from mailtriage.application.flows.alerts import Outage
    from mailtriage.application import ApplyReport, Proposal
    from mailtriage.application import ThreadId, ThreadStatus
    from mailtriage.application import ComposeForm
    from mailtriage.tui.controllers.compose import ComposeTarget, DraftAhead



@message
class Request(Message):
    """A pane's request or a component's news that exactly one component of the main screen
    takes (issue 36 §2). Panes import no controller and components are hidden siblings of
    the panes, so such a message bubbles to MainScreen, whose one handler hands it to the
    component that lists its class in ``TAKES``, under Textual's handler name
    (tui/controllers/component.py; tests/tui/test_component_messages.py)."""


class SourceRow(TypedDict):
    """One configured backend in the availability matrix (what ``SourceSet.matrix`` returns)."""

    backend: str
    kind: str
    role: str
    mandatory: bool
    thread_id_kind: str
    capabilities: dict[str, bool]
    available: bool
    reason: str | None
    problem: str | None
    notes: list[str]


#: A tracker issue as the tracker lists or shows it (JSON-shaped).
IssueDocument = Mapping[str, object]


@message
class SessionOpened(Message):
    """The project configuration loaded and the mail sources were built."""


@message
class SessionFailed(Message):
    """The project could not be opened (no project.md, or a configuration error)."""

    error: Exception
    missing_project: bool = False


@message
class CacheUnwritable(Message):
    """The caches cannot be written (a full disk): the app works without them (said once)."""

    text: str


@message
class SourcesChecked(Message):
    """Availability of every configured backend and the resolution of every op."""

    matrix: list[SourceRow]
    resolutions: dict[Op, Resolution]
    mandatory_problem: str | None = None


@message
class ThreadsLoaded(Message):
    """Rows of a listing. ``partial``: only the newest threads so far, the rest is coming.
    ``cached``: read from the summary cache, the server not asked yet (partial too)."""

    request: int
    list_name: str | None
    rows: ThreadRows
    resolution: Resolution | None
    partial: bool = False
    cached: bool = False


@message
class ThreadLoaded(Message):
    request: int
    thread: Thread
    resolution: Resolution | None
    account_id: str | None = None  # a personal account's message: the account that holds it


@message
class MessageReadAhead(Message):
    """A personal account's message read ahead for the row under the cursor (issue 35: Enter
    shows it without waiting for the server), as the one-message thread the reader shows."""

    account_id: str
    message_id: str
    thread: Thread


# -- failures, one type per area ------------------------------------------------
@message
class WorkFailed(Message):
    """A backend call failed. Never posted itself: each area posts its own subclass.

    ``area`` names the area in the error list (what the user reads under "where"), and
    is the request kind a newer request of the same area supersedes.
    """

    area: ClassVar[str] = ""

    request: int
    title: str
    error: BaseException
    resolution: Resolution | None = None
    details: str = ""


@message
class AreaFailed(WorkFailed):
    """A failure of work a pane runs itself (tui/panes/area.py): the pane shows it and lets
    it bubble; the screen reports it (the error list), once for every such area."""


@message
class ThreadsFailed(WorkFailed):
    area: ClassVar[str] = "threads"


@message
class ReaderFailed(WorkFailed):
    area: ClassVar[str] = "reader"


@message
class ProposalFailed(WorkFailed, Request):
    """Building a proposal (reply, import, publish, sync, organize) failed; nothing was written."""

    area: ClassVar[str] = "reply"


@message
class ApplyFailed(WorkFailed):
    area: ClassVar[str] = "apply"


@message
class UrlFailed(WorkFailed):
    area: ClassVar[str] = "url"


@message
class TrackerFailed(AreaFailed):
    area: ClassVar[str] = "tracker"


@message
class IssueFailed(AreaFailed):
    area: ClassVar[str] = "issue"


@message
class FoldersFailed(AreaFailed):
    area: ClassVar[str] = "folders"


# -- proposals --------------------------------------------------------------------
@message
class ProposalReady(Request):
    """A flow built its proposal (``flow``: reply, import, publish, sync, organize); nothing written yet."""

    request: int
    proposal: Proposal
    flow: str = "reply"


@message
class ComposeReady(Message):
    """The compose forms of r/A/F/C are filled in (first one shown); nothing written yet."""

    request: int
    target: ComposeTarget
    forms: Mapping[str, ComposeForm]
    where: str
    #: Said as the dialog opens (a draft already pending on the thread), or None.
    pending: str | None = None


@message
class DraftBuiltAhead(Message):
    """The reply to the message in the reading pane is built ahead (its compose dialog can be
    made ready, hidden); nothing written."""

    ahead: DraftAhead


@message
class ProposalApplied(Message):
    proposal: Proposal
    report: ApplyReport
    flow: str = "reply"


@message
class ThreadUrlReady(Message):
    url: str
    resolution: Resolution


@message
class OpRecorded(Message):
    """One backend operation finished (from the op log; posted from any thread)."""

    record: OpRecord


@message
class TraceRecorded(Message):
    line: TraceLine


@message
class ConsoleResult(Message):
    """The JSON result of an operation run by hand in the backend console."""

    request: int
    document: dict[str, object] = field(default_factory=dict)
    ok: bool = True


@message
class SettingsSaved(Message):
    what: str
    error: str | None = None


@message
class TrackerLoaded(Request):
    """The tracker's issues; ``available`` False when no tracker is configured (``description`` says why)."""

    request: int
    issues: list[IssueDocument]
    description: str
    problems: list[str] = field(default_factory=list)
    available: bool = True


@message
class TrackerIssueLoaded(Message):
    request: int
    issue: IssueDocument


@message
class AccountFoldersLoaded(Message):
    """A personal account's folders, for the folders pane."""

    request: int
    account_id: str
    folders: list[MailFolder]


@message
class FolderListed(Message):
    """A personal account's folder, as rows; ``cursor``: the row to put the cursor on."""

    request: int
    label: str
    rows: FolderRows
    cursor: int = 0


# -- server search (tui/panes/threads.py) ---------------------------------------------
@message
class SearchLoaded(Message):
    """The first page of a server search as rows (the rest pages in on demand).

    ``backend`` names who answered, ``method`` what it was asked; ``failed`` the folders
    that could not be searched (folder, why); ``notes`` what the backend said beside."""

    request: int
    query: str
    rows: ThreadRows
    backend: str
    method: str
    failed: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    total_known: bool = True


@message
class SearchFailed(AreaFailed):
    area: ClassVar[str] = "search"


@message
class SearchUnsupported(Message):
    """The backend declares no server search: the listed rows are filtered locally instead."""

    request: int
    query: str
    why: str


@message
class AlertsFound(Message):
    """The new-report poll found new or updated threads (not acknowledged yet)."""

    outcome: PollOutcome
    list_name: str | None
    loop: AlertLoop  # the loop that polled (an answer from a stopped loop is dropped)


@message
class AlertsFailed(Message):
    """One poll failed (the loop goes on and polls again later)."""

    error: BaseException
    first: bool = False  # the first failure of an outage (the polls before it worked)


@message
class AlertsResumed(Message):
    """A poll worked again after an outage (``Outage``: how long, how many polls failed)."""

    outage: Outage


@message
class AlertsChecked(Message):
    """The poll Ctrl+n asked for is over: ``found`` news (its AlertsFound was posted before),
    or ``error`` (None: none, or ``said`` already by the outage's first toast)."""

    loop: AlertLoop
    found: bool
    error: BaseException | None
    said: bool


@message
class CaseLoaded(Message):
    """The MAS case record of the thread being read, or an error reading it."""

    request: int
    thread: Thread
    record: Mapping[str, object] | None = None
    error: str | None = None


@message
class AttachmentLoaded(Message):
    """The first bytes of an attachment, read for the attachments dialog's viewer."""

    request: int
    key: str
    data: bytes
    total: int  # the attachment's whole size
    is_text: bool


@message
class AttachmentFailed(WorkFailed):
    """Reading, saving or opening an attachment failed."""

    area: ClassVar[str] = "attachments"
# -- batches of tagged rows ---------------------------------------------------------
@message
class BatchReady(Message):
    """The one proposal over a batch (the tagged rows); nothing written yet."""

    request: int
    proposal: Proposal


@message
class BatchFoldersReady(Message):
    """The folders a batch may be moved to (``M``), for the folder picker."""

    request: int
    account_id: str
    headers: tuple[MailHeader, ...]
    folders: list[MailFolder]


# -- the triage overview (habits §6: row marks, thread ↔ issue, unpublished changes) ----
@message
class RowStatusLoaded(Message):
    """Filed / draft pending / replied of the threads on screen (asked for at once)."""

    request: int
    statuses: dict[ThreadId, ThreadStatus]


@message
class PublishPendingChecked(Message):
    """Whether the tracker keeps local changes that are not published."""

    pending: bool


@message
class IssueOfThreadFound(Request):
    """``s`` on a thread: the tracker issue that holds it (None: none found)."""

    request: int
    thread_id: ThreadId
    issue_id: str | None


@message
class ThreadOfIssueFound(Request):
    """``s`` on a tracker issue: the thread its rollup names (None: none)."""

    request: int
    issue_id: str
    thread_id: ThreadId | None


@message
class JumpFailed(AreaFailed):
    area: ClassVar[str] = "jump"
