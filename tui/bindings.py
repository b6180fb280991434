"""Every key binding of the app, each with an ``id`` a user can remap.

The binding lists here *are* the ``BINDINGS`` of the app, its screens and panes (each
class imports its list), and the help screen and the command palette are generated
from :data:`CONTEXTS`, so the documentation of a key can never drift from the key.

Remapping: the user settings TOML has a ``[keys]`` table of ``binding-id = "keys"``,
e.g. ``"threads.down" = "n,down"``; :func:`validate_keymap` checks it at start-up and
the app applies it with :meth:`textual.app.App.set_keymap`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import ClassVar

from textual.binding import Binding


def _b(keys: str, action: str, description: str, id: str, *, show: bool = True, priority: bool = False,
       key_display: str | None = None, tooltip: str = "") -> Binding:
    return Binding(keys, action, description, show=show, priority=priority, key_display=key_display,
                   tooltip=tooltip, id=id)


def scroll_keys(context: str) -> list[Binding]:
    """The reading pane's scroll keys for a screen that scrolls one container of text
    (:class:`mailtriage.tui.scroll_keys.ScrollKeys`), with ids ``<context>.down`` … ``.bottom``."""
    return [
        _b("j,down", "scroll(1)", "Scroll down", f"{context}.down", show=False),
        _b("k,up", "scroll(-1)", "Scroll up", f"{context}.up", show=False),
        _b("space,pagedown", "page(1)", "Page down", f"{context}.page_down", show=False),
        _b("minus,pageup", "page(-1)", "Page up", f"{context}.page_up", show=False),
        _b("g,home", "top", "Top", f"{context}.top", show=False),
        _b("G,end", "bottom", "Bottom", f"{context}.bottom", show=False),
    ]


APP = [
    _b("q", "quit", "Quit", "app.quit"),
    _b("ctrl+q", "quit_now", "Quit now", "app.quit_now", show=False, priority=True),
    _b("question_mark,f1", "help", "Help", "app.help", key_display="?"),
    _b("ctrl+p", "command_palette", "Commands", "app.command_palette", priority=True, show=False),
    # aerc's command line; not priority (Ctrl+p is): a : typed into a field stays in the field
    _b("colon", "command_palette", "Commands (aerc's :)", "app.command_line", show=False, key_display=":"),
    _b("tab", "app.focus_next", "Next pane", "app.focus_next", show=False),
    _b("shift+tab", "app.focus_previous", "Previous pane", "app.focus_previous", show=False),
    _b("b", "console", "Backends", "app.console", show=False),
    _b("ctrl+t", "pick_theme", "Theme", "app.theme", show=False),
    _b("exclamation_mark", "show_errors", "Error details", "app.errors", show=False, key_display="!"),
    _b("R", "refresh", "Refresh / reconnect", "app.refresh", show=False),
    _b("t", "toggle_tracker", "Tracker pane", "app.tracker", show=False),
    _b("P", "publish", "Publish tracker changes", "app.publish", show=False),
    _b("S", "sync", "Sync tracker with threads", "app.sync", show=False),
    _b("ctrl+n", "poll_now", "Check for new reports now", "app.poll_now", show=False),
    _b("ctrl+c", "help_quit", "Copy / how to quit", "app.help_quit", show=False),
]

MAIN = [
    _b("escape", "cancel_work", "Cancel loading", "main.cancel", show=False),
    _b("1", "focus_pane('sources')", "Go to sources", "main.go_sources", show=False),
    _b("2", "focus_pane('folders')", "Go to lists", "main.go_folders", show=False),
    _b("3", "focus_pane('threads')", "Go to threads", "main.go_threads", show=False),
    _b("4", "focus_pane('reader')", "Go to reading pane", "main.go_reader", show=False),
    _b("5", "focus_pane('tracker')", "Go to tracker", "main.go_tracker", show=False),
    _b("c", "change_folder", "Change folder / list…", "main.change_folder", show=False),
    _b("ctrl+w", "zoom", "Zoom the focused pane / back", "main.zoom", show=False),
    _b("Q", "queue", "Triage queue (every report: state, owner, deadlines)", "main.queue", show=False),
]

THREAD_LIST = [
    _b("j,down", "cursor_down", "Down", "threads.down", show=False),
    _b("k,up", "cursor_up", "Up", "threads.up", show=False),
    _b("g,home", "cursor_first", "First", "threads.first", show=False),
    _b("G,end", "cursor_last", "Last", "threads.last", show=False),
    _b("pagedown,ctrl+f,space", "page_down", "Page down", "threads.page_down", show=False),
    _b("pageup,ctrl+b", "page_up", "Page up", "threads.page_up", show=False),
    _b("ctrl+d", "half_page(1)", "Half a page down", "threads.half_down", show=False),
    _b("ctrl+u", "half_page(-1)", "Half a page up", "threads.half_up", show=False),
    _b("enter", "open", "Open", "threads.open"),
    _b("r", "reply", "Reply", "threads.reply"),
    _b("A", "compose('reply_all')", "Reply to all", "threads.reply_all", show=False),
    _b("F", "compose('forward')", "Forward", "threads.forward", show=False),
    _b("L", "compose('reply_list')", "Reply to the list only", "threads.reply_list", show=False),
    _b("C", "compose('new')", "New mail (personal account)", "threads.compose", show=False),
    _b("i", "import_thread", "Import to tracker", "threads.import"),
    _b("slash", "search", "Search", "threads.search", key_display="/"),
    _b("escape", "clear_search", "Clear search", "threads.clear_search"),
    _b("n", "next_match", "Next search match", "threads.next_match"),
    _b("N", "previous_match", "Previous search match", "threads.previous_match"),
    _b("m", "organize('toggle_read')", "Mark read / unread", "threads.toggle_read", show=False),
    _b("f", "organize('toggle_flag')", "Flag / unflag", "threads.toggle_flag", show=False),
    _b("a", "organize('archive')", "Archive", "threads.archive", show=False),
    _b("d", "organize('trash')", "Move to trash", "threads.trash", show=False),
    _b("v", "tag_toggle", "Tag / untag and move down", "threads.tag", show=False),
    _b("V", "tags_clear", "Clear all tags", "threads.untag_all", show=False),
    _b("T", "tag_all", "Tag all listed", "threads.tag_all", show=False),
    _b("semicolon", "tag_prefix", "Next action on the tagged rows (tag prefix)", "threads.tag_prefix", show=False,
       key_display=";"),
    _b("M", "move", "Move to folder", "threads.move", show=False),
    _b("u", "next_unread", "Next unread", "threads.next_unread", show=False),
    _b("o", "sort_next", "Sort by the next key", "threads.sort", show=False),
    _b("O", "sort_reverse", "Reverse the sort", "threads.sort_reverse", show=False),
    _b("z", "tree_toggle", "Thread tree / collapse thread", "threads.tree_toggle", show=False),
    _b("Z", "tree_all", "Collapse / expand all threads", "threads.tree_all", show=False),
    _b("s", "jump_issue", "Tracker issue of this thread", "threads.issue", show=False),
]

SEARCH_BOX = [
    _b("escape", "close_search", "Close search", "search.close"),
]

READER = [
    _b("q,escape", "back", "Back to list", "reader.back"),  # first: the footer shows it first
    _b("j,down", "scroll_down", "Scroll down", "reader.down", show=False),
    _b("k,up", "scroll_up", "Scroll up", "reader.up", show=False),
    _b("space,pagedown", "page_down", "Page down; at the end, the next message", "reader.page_down", show=False),
    _b("minus,pageup", "page_up", "Page up", "reader.page_up", show=False),
    _b("ctrl+d", "half_page(1)", "Half a page down", "reader.half_down", show=False),
    _b("ctrl+u", "half_page(-1)", "Half a page up", "reader.half_up", show=False),
    _b("g,home", "scroll_home", "Top", "reader.top", show=False),
    _b("G,end", "scroll_end", "Bottom", "reader.bottom", show=False),
    # While a search is shown, n / N open the next / previous match; otherwise n is the
    # next message of the thread (the first binding of a key that applies wins).
    _b("n", "next_match", "Next search match", "reader.next_match", show=False),
    _b("N", "previous_match", "Previous search match", "reader.previous_match", show=False),
    _b("n", "next_message", "Next message", "reader.next_message"),
    _b("p", "previous_message", "Previous message", "reader.previous_message"),
    # The compose keys act on the App's own handling of the key (priority: the view holds no
    # input, so nothing typed is taken from one): an r typed right after Enter otherwise passed
    # the view, its pane and the screen, back to the App and down again, a frame able to run
    # between any two of them (issue 35).
    _b("r", "reply", "Reply", "reader.reply", priority=True),
    _b("A", "compose('reply_all')", "Reply to all", "reader.reply_all", show=False, priority=True),
    _b("F", "compose('forward')", "Forward", "reader.forward", show=False, priority=True),
    _b("L", "compose('reply_list')", "Reply to the list only", "reader.reply_list", show=False, priority=True),
    _b("C", "compose('new')", "New mail (personal account)", "reader.compose", show=False, priority=True),
    # So do the keys that open a dialog: the keys typed after one wait for it (tui/typeahead.py),
    # and a key read after it would otherwise pass it on its way back to the App (|grep: r replied).
    _b("i", "import_thread", "Import to tracker", "reader.import", priority=True),
    _b("u", "thread_url", "Thread URL", "reader.url"),
    _b("e", "attachments", "Attachments", "reader.attachments", priority=True),
    _b("h", "full_headers", "Full headers (Received, Authentication-Results…)", "reader.headers", show=False,
       priority=True),
    _b("vertical_line", "pipe", "Pipe the message to a command…", "reader.pipe", show=False, key_display="|",
       priority=True),
    _b("K", "import_key", "Import offered key", "reader.import_key", priority=True),
    _b("s", "jump_issue", "Tracker issue of this thread", "reader.issue", show=False),
]

SOURCES = [
    # q goes back from every pane but the list (issue 35), as in the reader; q in the list quits.
    _b("q", "screen.focus_pane('threads')", "Back to list", "sources.back"),  # first: the footer shows it first
    _b("j,down", "cursor_down", "Down", "sources.down", show=False),
    _b("k,up", "cursor_up", "Up", "sources.up", show=False),
    _b("g,home", "first", "First", "sources.first", show=False),
    _b("G,end", "last", "Last", "sources.last", show=False),
    _b("enter", "select", "Inspect backend / open account", "sources.open"),
]

FOLDERS = [
    _b("q", "screen.focus_pane('threads')", "Back to list", "folders.back"),  # first: the footer shows it first
    _b("j,down", "cursor_down", "Down", "folders.down", show=False),
    _b("k,up", "cursor_up", "Up", "folders.up", show=False),
    _b("g,home", "first", "First", "folders.first", show=False),
    _b("G,end", "last", "Last", "folders.last", show=False),
    _b("enter", "select", "Open list / folder", "folders.open"),
]

TRACKER = [
    _b("q", "screen.focus_pane('threads')", "Back to list", "tracker.back"),  # first: the footer shows it first
    _b("j,down", "cursor_down", "Down", "tracker.down", show=False),
    _b("k,up", "cursor_up", "Up", "tracker.up", show=False),
    _b("g,home", "first", "First", "tracker.first", show=False),
    _b("G,end", "last", "Last", "tracker.last", show=False),
    _b("enter", "select", "Open issue", "tracker.open"),
    _b("s", "jump_thread", "Thread of this issue", "tracker.thread", show=False),
]

ISSUE_VIEW = [
    # The tracker pane's issue (fields and rollup), reached with Tab: scrolled as the reader is, q back
    _b("q,escape", "back", "Back to the issues", "issue.back"),  # first: the footer shows it first
    _b("j,down", "scroll_down", "Scroll down", "issue.down", show=False),
    _b("k,up", "scroll_up", "Scroll up", "issue.up", show=False),
    _b("space,pagedown", "page_down", "Page down", "issue.page_down", show=False),
    _b("minus,pageup", "page_up", "Page up", "issue.page_up", show=False),
    _b("g,home", "scroll_home", "Top", "issue.top", show=False),
    _b("G,end", "scroll_end", "Bottom", "issue.bottom", show=False),
]

CONSOLE = [
    _b("q,escape", "back", "Back", "console.back"),
    _b("f2", "show_tab('backends')", "Backends", "console.tab_backends"),
    _b("f3", "show_tab('operations')", "Operations", "console.tab_operations"),
    _b("f4", "show_tab('trace')", "Trace", "console.tab_trace"),
    _b("f5", "show_tab('run')", "Run an op", "console.tab_run"),
    _b("ctrl+l", "clear_logs", "Clear logs", "console.clear"),
    _b("ctrl+r", "run_op", "Run", "console.run"),
]

QUEUE = [
    _b("q,escape", "back", "Back", "queue.back"),
    # priority: the table's own (hidden) Enter would take the key in the footer once it has the focus
    _b("enter", "read", "Read", "queue.read", priority=True),
    _b("s", "filter_state", "By state", "queue.filter_state"),
    _b("o", "filter_owner", "By owner", "queue.filter_owner"),
    _b("a", "filter_clear", "All", "queue.filter_clear"),
    _b("c", "claim", "Claim", "queue.claim"),
    _b("u", "release", "Release", "queue.release"),
    _b("R", "reload", "Read the queue again", "queue.reload", show=False),
    _b("p", "pull", "Pull the colleagues' claims (local files), then read again", "queue.pull", show=False),
    _b("j,down", "cursor_down", "Down", "queue.down", show=False),
    _b("k,up", "cursor_up", "Up", "queue.up", show=False),
    _b("g,home", "cursor_first", "First", "queue.first", show=False),
    _b("G,end", "cursor_last", "Last", "queue.last", show=False),
]

HELP = [
    _b("q,escape,question_mark,f1", "back", "Close help", "help.close", key_display="q"),
    *scroll_keys("help"),  # a pager: j k, space -, g G
]

PROPOSAL = [
    _b("ctrl+s", "confirm", "Confirm and write", "proposal.confirm", priority=True),
    _b("ctrl+s", "send", "Send", "proposal.send", priority=True),  # the same key when the proposal sends
    _b("escape", "cancel", "Cancel (write nothing)", "proposal.cancel", priority=True),
    _b("ctrl+o", "edit_in_editor", "Edit in $EDITOR", "proposal.editor", priority=True),
]

ATTACHMENTS = [
    _b("escape,q", "close", "Close / cancel saving", "attachments.close"),
    _b("j,down", "cursor(1)", "Next attachment", "attachments.down", show=False),
    _b("k,up", "cursor(-1)", "Previous attachment", "attachments.up", show=False),
    _b("enter,v", "view", "View", "attachments.view"),
    _b("x", "toggle_hex", "Hex / text", "attachments.hex"),
    _b("right_square_bracket,pagedown", "page(1)", "Next page", "attachments.next_page", key_display="]"),
    _b("left_square_bracket,pageup", "page(-1)", "Previous page", "attachments.previous_page", key_display="["),
    _b("s", "save", "Save…", "attachments.save"),
    _b("A", "save_all", "Save all…", "attachments.save_all"),
    _b("o", "open_command", "Open with attachment_command", "attachments.open", show=False),
]

FOLDER_PICKER = [
    _b("escape", "cancel", "Cancel (move nothing)", "folder_picker.cancel"),
    # priority: the filter field's own (hidden) Enter would take the key in the footer; on the Cancel button it presses it
    _b("enter", "pick", "Move here", "folder_picker.pick", priority=True),
    # letters type into the filter (as in the change-folder picker): j k g G narrow, arrows move
    _b("down", "cursor(1)", "Next match", "folder_picker.down", show=False),
    _b("up", "cursor(-1)", "Previous match", "folder_picker.up", show=False),
]

HEADERS_DIALOG = [
    _b("escape,q,h", "close", "Close", "headers.close", key_display="esc"),
    _b("x", "toggle_raw", "Raw source / headers", "headers.raw"),
    *scroll_keys("headers"),
]

PIPE_DIALOG = [
    _b("escape", "cancel", "Cancel / close (nothing runs before Ctrl+s)", "pipe.cancel"),
    _b("ctrl+s", "run_command", "Run the command", "pipe.run", priority=True),
]

FOLDER_JUMP = [
    _b("escape", "cancel", "Cancel (stay here)", "folder_jump.cancel"),
    # priority: the filter field's own (hidden) Enter would take the key, and the footer would not show it
    _b("enter", "open", "Open", "folder_jump.open", priority=True),
    _b("down", "cursor(1)", "Next match", "folder_jump.down", show=False),
    _b("up", "cursor(-1)", "Previous match", "folder_jump.up", show=False),
]

PROPOSAL_BODY = [
    _b("j,down", "scroll_down", "Scroll down", "proposal.down", show=False),
    _b("k,up", "scroll_up", "Scroll up", "proposal.up", show=False),
    _b("space,pagedown", "page_down", "Page down", "proposal.page_down", show=False),
    _b("pageup", "page_up", "Page up", "proposal.page_up", show=False),
    _b("g,home", "scroll_home", "Top", "proposal.top", show=False),
    _b("G,end", "scroll_end", "Bottom", "proposal.bottom", show=False),
    _b("q", "app.quit", "Quit (asks first: the proposal is not written)", "proposal.quit", show=False),
]

QUIT_DIALOG = [
    _b("y", "quit_anyway", "Quit anyway", "quit.confirm"),
    _b("n,escape", "stay", "Stay", "quit.cancel"),
]

COMPOSE = [
    _b("ctrl+s", "submit", "Review the proposal", "compose.submit", priority=True),
    _b("escape", "cancel", "Cancel (nothing is written)", "compose.cancel", priority=True),
    _b("ctrl+o", "edit_in_editor", "Edit headers and text in $EDITOR", "compose.editor", priority=True),
    _b("ctrl+r", "switch_kind", "Receipt template / quoted reply", "compose.switch_kind", priority=True),
    _b("ctrl+g", "switch_forward", "Forward inline / as attachment", "compose.switch_forward", priority=True),
]

CLEAR_REPLY = [
    _b("escape,q", "cancel", "Cancel (write nothing)", "clear_reply.cancel"),
    _b("c", "clear", "Draft in clear", "clear_reply.clear"),
]

PASSPHRASE = [
    _b("escape", "cancel", "Not now (leave it encrypted)", "passphrase.cancel"),
    _b("enter", "unlock", "Unlock", "passphrase.unlock"),
]

ERROR_DIALOG = [
    _b("escape,q,enter", "close", "Close", "error.close"),
    *scroll_keys("error"),
]

FIRST_RUN = [
    _b("d", "open_demo", "Open the demo", "first_run.demo"),
    _b("R", "retry", "Try again", "first_run.retry"),
    _b("q", "quit", "Quit", "first_run.quit"),
    *scroll_keys("first_run"),
]


def after_typed(app, callback) -> None:
    """Run ``callback`` once the focused widget has handled every key that came before.

    A priority binding (Ctrl+s in a dialog with a field) runs as the App reads its key, while
    the characters typed just before it still wait in the field's own queue: a burst (tmux
    send-keys, a fast typist) read an empty field (issue 35). Queued behind them, it reads
    what was typed."""
    (app.focused or app.screen).call_later(callback)


class KeymapHost:
    """The app as the palette and the help screen see it: the user's validated key map and
    mailtriage's own theme names (set when the app starts)."""

    user_keymap: dict[str, str]
    mailtriage_themes: list[str]


def keymap_of(app: object) -> dict[str, str]:
    """The user's key map of ``app`` (empty for an app that is not mailtriage's, e.g. in a test)."""
    return dict(app.user_keymap) if isinstance(app, KeymapHost) else {}


def themes_of(app: object) -> list[str]:
    """mailtriage's theme names of ``app``, first in the theme picker."""
    return list(app.mailtriage_themes) if isinstance(app, KeymapHost) else []


class KeyContext:
    """A screen of mailtriage: ``key_context`` is the ``Context.screen`` its bindings belong to
    (the command palette offers a context's bindings only on its screen)."""

    key_context: ClassVar[str] = ""


@dataclass(frozen=True)
class Context:
    """Where a group of bindings applies, for the help screen and the palette.

    ``target`` names what runs the action: ``"app"``, ``"screen"``, or a CSS selector
    of a widget on the screen. ``screen`` is the screen class name it belongs to
    (``None``: every screen).
    """

    title: str
    bindings: list[Binding]
    target: str
    screen: str | None = None


CONTEXTS: tuple[Context, ...] = (
    Context("Everywhere", APP, "app"),
    Context("Main screen", MAIN, "screen", "MainScreen"),
    Context("Thread list", THREAD_LIST, "ThreadList", "MainScreen"),
    Context("Thread search box", SEARCH_BOX, "SearchBox", "MainScreen"),
    Context("Reading pane", READER, "ThreadView", "MainScreen"),
    Context("Sources pane", SOURCES, "SourceList", "MainScreen"),
    Context("Lists pane", FOLDERS, "FolderList", "MainScreen"),
    Context("Tracker pane", TRACKER, "TrackerList", "MainScreen"),
    Context("Tracker issue", ISSUE_VIEW, "IssueView", "MainScreen"),
    Context("Backend console", CONSOLE, "screen", "ConsoleScreen"),
    Context("Triage queue", QUEUE, "screen", "QueueScreen"),
    Context("Help", HELP, "screen", "HelpScreen"),
    Context("Compose dialog", COMPOSE, "screen", "ComposeDialog"),
    Context("Proposal dialog", PROPOSAL, "screen", "ProposalDialog"),
    Context("Attachments dialog", ATTACHMENTS, "screen", "AttachmentsDialog"),
    Context("Folder picker (move)", FOLDER_PICKER, "screen", "FolderPicker"),
    Context("Change folder", FOLDER_JUMP, "screen", "FolderJump"),
    Context("Full headers", HEADERS_DIALOG, "screen", "HeadersDialog"),
    Context("Pipe to a command", PIPE_DIALOG, "screen", "PipeDialog"),
    Context("Proposal content", PROPOSAL_BODY, "ProposalBody", "ProposalDialog"),
    Context("Quit with work pending", QUIT_DIALOG, "screen", "QuitDialog"),
    Context("Error details", ERROR_DIALOG, "screen", "ErrorDialog"),
    Context("Clear reply choice", CLEAR_REPLY, "screen", "ClearReplyDialog"),
    Context("Passphrase", PASSPHRASE, "screen", "PassphraseDialog"),
    Context("First run", FIRST_RUN, "screen", "FirstRunScreen"),
)


def all_bindings() -> list[Binding]:
    return [b for ctx in CONTEXTS for b in ctx.bindings]


def binding_ids() -> set[str]:
    return {b.id for b in all_bindings() if b.id}


def validate_keymap(keymap: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """Split a ``[keys]`` table into usable entries and problems (unknown ids, empty keys)."""
    known = binding_ids()
    good: dict[str, str] = {}
    problems: list[str] = []
    for binding_id, keys in keymap.items():
        if binding_id not in known:
            problems.append(f"[keys] {binding_id!r} is not a binding id (see the help screen or docs/tui.md)")
        elif not keys.strip() or any(not k.strip() for k in keys.split(",")):
            problems.append(f"[keys] {binding_id!r} has an empty key list")
        else:
            good[binding_id] = keys
    return good, problems


def effective_keys(binding: Binding, keymap: dict[str, str]) -> list[str]:
    """The keys that trigger ``binding`` once the user's keymap is applied."""
    keys = keymap.get(binding.id or "", binding.key)
    return [k.strip() for k in keys.split(",") if k.strip()]


def keys_of(app: object, binding_id: str) -> list[str]:
    """The keys that trigger the binding ``binding_id`` in ``app`` (its user's key map applied)."""
    keymap = app.user_keymap if isinstance(app, KeymapHost) else {}  # read, not copied: once a key
    return effective_keys(_by_id()[binding_id], keymap)


def key_label(app: object, binding_id: str) -> str:
    """The first key of the binding ``binding_id`` in ``app``, as the help shows it ("/", "Ctrl+s")."""
    return _display(keys_of(app, binding_id)[0])


@cache
def _by_id() -> dict[str, Binding]:
    return {b.id: b for b in all_bindings() if b.id}


def _display(key: str) -> str:
    names = {"question_mark": "?", "exclamation_mark": "!", "slash": "/", "minus": "-", "space": "space",
             "right_square_bracket": "]", "left_square_bracket": "[", "semicolon": ";", "vertical_line": "|",
             "equals_sign": "=", "asterisk": "*", "circumflex_accent": "^", "colon": ":", "plus": "+",
             "enter": "Enter", "escape": "Esc", "tab": "Tab", "shift+tab": "Shift+Tab", "pagedown": "PgDn",
             "pageup": "PgUp", "home": "Home", "end": "End", "down": "↓", "up": "↑"}
    if key in names:
        return names[key]
    if key.startswith("ctrl+"):
        return "Ctrl+" + key[5:]
    return key.upper() if key.startswith("f") and key[1:].isdigit() else key


def markdown_table() -> str:
    """Every binding as Markdown tables (docs/tui.md embeds this; a test keeps them equal)."""
    out: list[str] = []
    for context in CONTEXTS:
        out.append(f"### {context.title}\n")
        out.append("| keys | does | binding id |")
        out.append("|---|---|---|")
        for binding in context.bindings:
            keys = " ".join(f"`{_display(k.strip())}`" for k in binding.key.split(","))
            out.append(f"| {keys} | {binding.description} | `{binding.id}` |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":  # python -m mailtriage.tui.bindings  → the tables of docs/tui.md
    print(markdown_table(), end="")
