"""The tracker pane: issues of the configured tracker, an issue's fields and status rollup.

The tracker is opened the first time the pane is shown (``t``), never at start-up, so a
GitHub or Jira tracker costs nothing until asked for. Everything shown is issue
content (which often quotes mail), so it is rendered inert. ``### Heading`` sections
are the issue's fields; the status rollup is listed entry by entry.

The pane is an area that owns its work (tui/panes/area.py): it lists the issues, reads
one, and answers ``s`` both ways (the issue that holds a thread, the thread an issue's
rollup names) in workers of its own. What the screen must route bubbles on to it: the
issues listed (the unpublished-changes mark), an issue found for a thread (the pane is
shown), a thread found for an issue (the list and the reading pane).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option, OptionDoesNotExist

from mailtriage.core.lean_dataclass import lean_dataclass  # @dataclass(eq=False), none of its exec'd code
from mailtriage.application import trackers_installed
from mailtriage.tui import bindings
from mailtriage.tui.messages import (IssueFailed, IssueOfThreadFound, JumpFailed, ThreadOfIssueFound, TrackerFailed,
                                     TrackerIssueLoaded, TrackerLoaded)
from mailtriage.tui.panes.area import Requests, drop_stale, failure_text, service
from mailtriage.tui.row_keys import RowKeys
from mailtriage.tui.sanitize import inert, inert_text
from mailtriage.tui.scroll_keys import OwnScrollKeys

if TYPE_CHECKING:
    from mailtriage.application import ThreadId


def tracker_support() -> str | None:
    """None when the tracker backends are part of this build, else why not (asked without
    loading them: the pane asks when mounted, at start-up)."""
    if trackers_installed():
        return None
    return "No tracker is available in this build of mailtriage (the tracker backends are not installed)."


def issue_fields(body: str) -> list[tuple[str, str]]:
    """(heading, value) of every ``### Heading`` section, in order."""
    # lazy: the tracker modules load when the tracker pane is first opened
    from mailtriage.application import get_field, sections, split_lines

    lines = split_lines(body or "")
    return [(s.heading, get_field(body, s.heading) or "") for s in sections(lines)]


def rollup_entries(issue: dict) -> list:
    # lazy: as in issue_fields
    from mailtriage.application import rollup

    for comment in issue.get("comments") or []:
        if comment.get("kind") == "rollup":
            try:
                return rollup.entries(comment.get("body") or "")
            except rollup.RollupError:
                return []
    return []


def issue_text(issue: dict) -> Text:
    out = Text()
    out.append_text(inert_text(f"{issue.get('id', '?')} · {issue.get('state', '?')}", style="bold"))
    out.append("\n")
    out.append_text(inert_text(issue.get("title") or "(no title)", style="bold"))
    out.append("\n")
    for label, key in (("labels", "labels"), ("assignees", "assignees")):
        values = issue.get(key) or []
        if values:
            out.append(f"{label}: ", "dim")
            out.append_text(inert_text(", ".join(values)))
            out.append("\n")
    if issue.get("milestone"):
        out.append("milestone: ", "dim")
        out.append_text(inert_text(str(issue["milestone"])))
        out.append("\n")
    fields = issue_fields(issue.get("body") or "")
    if fields:
        out.append("\nFields\n", "bold underline")
        for heading, value in fields:
            out.append_text(inert_text(heading, style="bold"))
            out.append(": ")
            out.append_text(inert_text(value, multiline=True) if value else Text("—", "dim"))
            out.append("\n")
    entries = rollup_entries(issue)
    if entries:
        out.append("\nStatus rollup\n", "bold underline")
        for entry in entries:
            out.append_text(inert_text(f"{entry.date} · @{entry.user} · {entry.action}", style="bold"))
            out.append("\n")
            out.append_text(inert_text(entry.body, multiline=True))
            out.append("\n")
    if issue.get("url"):
        out.append("\n")
        out.append_text(inert_text(str(issue["url"]), style="dim"))
    out.rstrip()
    return out


class TrackerList(RowKeys, OptionList, inherit_bindings=False):
    BINDINGS = bindings.TRACKER
    ROW_ACTIONS = ("select", "jump_thread")  # not offered while no issue is listed (a note, "loading …")

    def action_jump_thread(self) -> None:
        """``s``: to the thread of the highlighted issue (the pane posts the request)."""
        if self.highlighted is None:
            return
        option_id = self.get_option_at_index(self.highlighted).id or ""
        if option_id.startswith("issue:"):
            self.post_message(TrackerPane.ThreadRequested(option_id.partition(":")[2]))


class IssueView(OwnScrollKeys, VerticalScroll, inherit_bindings=False):
    """The issue's fields and rollup (Tab reaches it): j k g G space scroll it as the reader's, q
    goes back to the issues."""

    BINDINGS = bindings.ISSUE_VIEW  # type: ignore[assignment]  # a list of Binding, which the base declares wider

    def action_back(self) -> None:
        if isinstance(self.parent, TrackerPane):
            self.parent.query_one(TrackerList).focus()


class TrackerPane(Vertical):
    @lean_dataclass
    class IssueChosen(Message):
        issue_id: str

    @lean_dataclass
    class ThreadRequested(Message):
        """``s`` on an issue: show the thread its rollup names."""

        issue_id: str

    def __init__(self, **kwargs) -> None:
        super().__init__(classes="pane", **kwargs)
        self.border_title = "Tracker"
        self.loaded = False
        self.requests = Requests()
        #: The issue ``s`` jumped to, selected in the list once it is listed.
        self.pending_issue: str | None = None

    def compose(self) -> ComposeResult:
        yield TrackerList(id="tracker-list")
        with IssueView(id="issue-view"):
            yield Static(Text("Enter on an issue shows its fields and rollup here.", "italic"), id="issue-detail")
        yield Static(id="tracker-status", classes="pane-status")

    def on_mount(self) -> None:
        why = tracker_support()
        if why:
            self.show_unavailable(why)
        else:
            self.query_one(TrackerList).set_options([Option(Text("press t to load the tracker", "italic"),
                                                            disabled=True)])

    def _status(self, text: str, *, error: bool = False) -> None:
        status = self.query_one("#tracker-status", Static)
        status.update(Text(text))
        status.set_class(error, "-error")

    def show_unavailable(self, why: str) -> None:
        # Why, in the view below (it wraps): a list row cut it after the project file's path,
        # before the words that say what is missing.
        self.query_one(TrackerList).set_options([Option(Text("no tracker (why: below)", "italic"), disabled=True)])
        self.query_one("#issue-detail", Static).update(inert_text(why, multiline=True))
        self._status("tracker: not available", error=True)

    def show_loading(self) -> None:
        self.query_one(TrackerList).set_options([Option(Text("loading issues …", "italic"), disabled=True)])
        self._status("loading …")

    def show_issues(self, issues: list[dict], description: str, problems: list[str]) -> None:
        self.loaded = True
        options = []
        for issue in issues:
            text = Text(no_wrap=True, overflow="ellipsis")
            text.append_text(inert_text(str(issue.get("id", "?")), style="bold"))
            text.append(" ")
            state = str(issue.get("state", "?"))
            text.append(state, "dim" if state == "closed" else "bold")
            text.append(" ")
            text.append_text(inert_text(issue.get("title") or "(no title)"))
            options.append(Option(text, id=f"issue:{issue.get('id')}"))
        if not options:
            options.append(Option(Text("no issues", "italic"), disabled=True))
        tracker_list = self.query_one(TrackerList)
        tracker_list.set_options(options)
        if issues:
            tracker_list.highlighted = 0
        count = f"{len(issues)} issue{'s' if len(issues) != 1 else ''}"
        extra = f" · {len(problems)} unreadable" if problems else ""
        self._status(f"{count} · {description}{extra}", error=bool(problems))

    def select_issue(self, issue_id: str) -> bool:
        """Put the cursor on ``issue_id``'s row; False when it is not listed."""
        tracker_list = self.query_one(TrackerList)
        try:
            index = tracker_list.get_option_index(f"issue:{issue_id}")
        except OptionDoesNotExist:  # not listed (yet)
            return False
        tracker_list.highlighted = index
        return True

    def show_issue(self, issue: dict) -> None:
        self.query_one("#issue-detail", Static).update(issue_text(issue))
        self.query_one("#issue-view", VerticalScroll).scroll_home(animate=False)

    def show_failure(self, text: str) -> None:
        self._status(f"⚠ {text}", error=True)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option_id = event.option.id or ""
        if option_id.startswith("issue:"):
            self.post_message(self.IssueChosen(option_id.partition(":")[2]))

    # -- the pane's work ------------------------------------------------------------------
    def on_tracker_pane_issue_chosen(self, message: IssueChosen) -> None:
        message.stop()
        self.open_issue(message.issue_id)

    def load_once(self) -> None:
        if not self.loaded:
            self.load()

    def load(self) -> None:
        """List the tracker's issues (in a worker); not before the project is open."""
        if not service(self).is_open or tracker_support():
            return
        self.show_loading()
        self._list_issues(self.requests.new("tracker"))

    @work(thread=True, exclusive=True, group="tracker", exit_on_error=False)
    def _list_issues(self, request: int) -> None:
        # a configuration error of the tracker is said in the pane (core.projectconfig is loaded by now)
        from mailtriage.core.projectconfig import ConfigError

        session = service(self)
        try:
            issues, problems = session.tracker_issues()
        except ConfigError as exc:
            # No usable tracker configuration: the pane says so; this is not an app error.
            self.post_message(TrackerLoaded(request, [], f"no tracker: {exc}", available=False))
            return
        except Exception as exc:
            self.post_message(TrackerFailed(request, "Listing the tracker failed", exc))
            return
        self.post_message(TrackerLoaded(request, issues, session.tracker_description, problems))

    def on_tracker_loaded(self, message: TrackerLoaded) -> None:
        """Shown here; a listing bubbles on to the screen (the unpublished-changes mark)."""
        if not self.requests.is_current("tracker", message.request) or not message.available:
            message.stop()
            if self.requests.is_current("tracker", message.request):
                self.show_unavailable(message.description)
            return
        self.show_issues(message.issues, message.description, message.problems)
        self.select_pending_issue()

    def on_tracker_failed(self, message: TrackerFailed) -> None:
        if not drop_stale(self.requests, message):
            self.show_failure(failure_text(message))

    def open_issue(self, issue_id: str) -> None:
        self._read_issue(self.requests.new("issue"), issue_id)

    @work(thread=True, exclusive=True, group="issue", exit_on_error=False)
    def _read_issue(self, request: int, issue_id: str) -> None:
        try:
            issue = service(self).tracker_issue(issue_id)
        except Exception as exc:
            self.post_message(IssueFailed(request, f"Reading {issue_id} failed", exc))
            return
        self.post_message(TrackerIssueLoaded(request, issue))

    def on_tracker_issue_loaded(self, message: TrackerIssueLoaded) -> None:
        message.stop()
        if self.requests.is_current("issue", message.request):
            self.show_issue(message.issue)

    def on_issue_failed(self, message: IssueFailed) -> None:
        if not drop_stale(self.requests, message):
            self.show_failure(failure_text(message))

    # -- s: thread -> issue, issue -> thread -------------------------------------------------
    def show_issue_of(self, issue_id: str) -> None:
        """``issue_id`` shown: its row selected (once listed) and its fields read."""
        self.pending_issue = issue_id
        if not self.loaded:
            self.load()  # the row is selected when the list arrives
        else:
            self.select_pending_issue()
        self.open_issue(issue_id)

    def select_pending_issue(self) -> None:
        if self.pending_issue is not None and self.select_issue(self.pending_issue):
            self.pending_issue = None

    def find_issue_of(self, thread_id: ThreadId) -> None:
        """Which issue holds ``thread_id`` (in a worker); found, it bubbles to the screen."""
        if service(self).is_open:
            self._find_issue(self.requests.new("jump"), thread_id)

    @work(thread=True, exclusive=True, group="jump", exit_on_error=False)
    def _find_issue(self, request: int, thread_id: ThreadId) -> None:
        try:
            issue_id = service(self).thread_issue(thread_id)
        except Exception as exc:
            self.post_message(JumpFailed(request, "Finding the thread's issue failed", exc))
            return
        self.post_message(IssueOfThreadFound(request, thread_id, issue_id))

    def on_issue_of_thread_found(self, message: IssueOfThreadFound) -> None:
        if not self.requests.is_current("jump", message.request) or message.issue_id is None:
            message.stop()
            if message.issue_id is None and self.requests.is_current("jump", message.request):
                self.notify("No tracker issue holds this thread (import it with i).", markup=False)

    def on_tracker_pane_thread_requested(self, message: ThreadRequested) -> None:
        message.stop()
        if service(self).is_open:
            self._find_thread(self.requests.new("jump"), message.issue_id)

    @work(thread=True, exclusive=True, group="jump", exit_on_error=False)
    def _find_thread(self, request: int, issue_id: str) -> None:
        try:
            thread_id = service(self).issue_thread(issue_id)
        except Exception as exc:
            self.post_message(JumpFailed(request, f"Finding the thread of {issue_id} failed", exc))
            return
        self.post_message(ThreadOfIssueFound(request, issue_id, thread_id))

    def on_thread_of_issue_found(self, message: ThreadOfIssueFound) -> None:
        if not self.requests.is_current("jump", message.request) or message.thread_id is None:
            message.stop()
            if message.thread_id is None and self.requests.is_current("jump", message.request):
                self.notify(f"{inert(message.issue_id)} names no thread in its status rollup.", markup=False)

    def on_jump_failed(self, message: JumpFailed) -> None:
        drop_stale(self.requests, message)
