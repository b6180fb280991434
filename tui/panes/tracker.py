"""The tracker pane: issues of the configured tracker, an issue's fields and status rollup.

The tracker is opened the first time the pane is shown (``t``), never at start-up, so a
GitHub or Jira tracker costs nothing until asked for. Everything shown is issue
content (which often quotes mail), so it is rendered inert. ``### Heading`` sections
are the issue's fields; the status rollup is listed entry by entry.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option, OptionDoesNotExist

from mailtriage.core.lean_dataclass import lean_dataclass  # @dataclass(eq=False), none of its exec'd code
from mailtriage.application import trackers_installed
from mailtriage.tui import bindings
from mailtriage.tui.sanitize import inert_text


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


class TrackerList(OptionList, inherit_bindings=False):
    BINDINGS = bindings.TRACKER

    def action_jump_thread(self) -> None:
        """``s``: to the thread of the highlighted issue (the pane posts the request)."""
        if self.highlighted is None:
            return
        option_id = self.get_option_at_index(self.highlighted).id or ""
        if option_id.startswith("issue:"):
            self.post_message(TrackerPane.ThreadRequested(option_id.partition(":")[2]))


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

    def compose(self) -> ComposeResult:
        yield TrackerList(id="tracker-list")
        with VerticalScroll(id="issue-view"):
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
        self.query_one(TrackerList).set_options([Option(inert_text(why, style="italic"), disabled=True)])
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
