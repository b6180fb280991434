"""The lists pane: the mailing lists (and, with personal accounts, folders) to read.

The security list comes from ``security_list`` in project.md; when it is not
configured the pane says so and nothing is listed (the contract skips a list read
with no configured list).

The pane is an area that owns its work (tui/panes/area.py): a personal account's folders
are listed by a worker of its own, and a failure is shown here before it bubbles to the
screen's error list. ``c`` picks an entry by name (:meth:`FoldersPane.choose_by_name`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from mailtriage.core.lean_dataclass import lean_dataclass  # @dataclass(eq=False), none of its exec'd code
from mailtriage.tui import bindings, layout
from mailtriage.tui.messages import AccountFoldersLoaded, FoldersFailed, Request
from mailtriage.tui.panes.area import Requests, drop_stale, failure_text, service, shell
from mailtriage.tui.row_keys import RowKeys
from mailtriage.tui.sanitize import inert_text

if TYPE_CHECKING:
    from mailtriage.application import MailFolder
    from mailtriage.tui.dialogs.folder_jump import FolderJump


class FolderList(RowKeys, OptionList, inherit_bindings=False):
    BINDINGS = bindings.FOLDERS


def folder_paths(folders: list[MailFolder]) -> list[tuple[MailFolder, str]]:
    """Each folder with its full path (``Lists/dev``, not ``dev``), the inbox first, then by path.

    The path is built from the folders' ``parent_id`` chain, so it is the same for every
    backend whatever its own delimiter; a parent that is not listed ends the chain.
    """
    by_id = {folder.id: folder for folder in folders}

    def path(folder) -> str:
        parts, seen = [folder.name], {folder.id}
        parent = by_id.get(folder.parent_id) if folder.parent_id else None
        while parent is not None and parent.id not in seen:
            seen.add(parent.id)
            parts.append(parent.name)
            parent = by_id.get(parent.parent_id) if parent.parent_id else None
        return "/".join(reversed(parts))

    paths = [(folder, path(folder)) for folder in folders]

    def order(item) -> tuple:
        folder, full = item
        inbox = folder.role == "inbox" or (folder.parent_id is None and folder.name.upper() == "INBOX")
        return (0 if inbox else 1, full.casefold())

    return sorted(paths, key=order)


class FoldersPane(layout.SidebarPane):
    @lean_dataclass
    class ListChosen(Request):
        list_name: str | None

    @lean_dataclass
    class FolderChosen(Request):
        account_id: str
        folder_id: str
        name: str

    def __init__(self, **kwargs) -> None:
        super().__init__(classes="pane", **kwargs)
        self.border_title = "Lists"
        self._entries: list = []
        self._since_text = ""
        self.account_id: str | None = None
        self._folders: list = []
        self._paths: list[str] = []
        self.requests = Requests()
        #: ``c``'s dialog, and the account folders it offers: key -> (account, its folders, folder ID).
        self._jump: FolderJump | None = None
        self._jump_folders: dict[str, tuple[str, list, str]] = {}

    def compose(self) -> ComposeResult:
        yield FolderList(id="folder-list")
        yield Static(id="folders-status", classes="pane-status")

    def show_lists(self, entries, since_text: str) -> None:
        self._entries = list(entries)
        self._since_text = since_text
        self.account_id = None
        self.border_title = "Lists"
        options = []
        for i, entry in enumerate(self._entries):
            text = inert_text(entry.label, style="bold" if entry.list_name else "italic")
            options.append(Option(text, id=f"list:{i}", disabled=entry.list_name is None))
        folder_list = self.query_one(FolderList)
        folder_list.set_class(False, "-paths")  # the addresses fold, never cut (app.tcss)
        folder_list.set_options(options)
        enabled = [i for i, option in enumerate(options) if not option.disabled]
        if enabled:
            folder_list.highlighted = enabled[0]
        # The lists' addresses in full (the security list's: a reply's Cc).
        self.addresses_shown(max((cell_len(option.prompt.plain) + 4 for option in options
                                  if not option.disabled and isinstance(option.prompt, Text)), default=0))
        notes = [e.note for e in self._entries if e.list_name is None and e.note]
        status = self.query_one("#folders-status", Static)
        status.update(Text(notes[0] if notes else f"since {since_text}"))
        status.set_class(bool(notes), "-warning")

    def start_list(self) -> str | None:
        """The list a start shows (the project's first), when the pane is as a start leaves
        it: the project's lists, that one highlighted. None otherwise."""
        first = next((i for i, entry in enumerate(self._entries) if entry.list_name), None)
        if self.account_id is not None or first is None or self.query_one(FolderList).highlighted != first:
            return None
        return self._entries[first].list_name

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option_id = event.option.id or ""
        if option_id.startswith("list:"):
            entry = self._entries[int(option_id.partition(":")[2])]
            self.post_message(self.ListChosen(entry.list_name))
        elif option_id.startswith("folder:") and self.account_id is not None:
            folder = self._folders[int(option_id.partition(":")[2])]
            index = int(option_id.partition(":")[2])
            self.post_message(self.FolderChosen(self.account_id, folder.id, self._paths[index]))
        elif option_id == "back-to-lists":
            self.show_lists(self._entries, self._since_text)

    # -- a personal account's folders --------------------------------------------
    def open_account(self, account_id: str, *, reload: bool = False) -> None:
        """List ``account_id``'s folders here (in a worker); ``reload``: after a write, the
        folders stay until the new counts arrive."""
        if not reload:
            self.show_account_loading(account_id)
        self._account_folders(self.requests.new("folders"), account_id)

    @work(thread=True, exclusive=True, group="folders", exit_on_error=False)
    def _account_folders(self, request: int, account_id: str) -> None:
        try:
            folders = service(self).account_folders(account_id)
        except Exception as exc:
            self.post_message(FoldersFailed(request, f"Listing the folders of {account_id} failed", exc))
            return
        self.post_message(AccountFoldersLoaded(request, account_id, folders))

    def on_account_folders_loaded(self, message: AccountFoldersLoaded) -> None:
        message.stop()
        if self._to_jump(message):
            return
        if self.requests.is_current("folders", message.request):
            self.show_folders(message.account_id, message.folders)

    def on_folders_failed(self, message: FoldersFailed) -> None:
        if self._to_jump(message):
            return  # bubbles on: the screen's error list
        if not drop_stale(self.requests, message):
            self.show_account_failure(failure_text(message))

    def show_account_loading(self, account_id: str) -> None:
        self.account_id = account_id
        self._folders = []
        self.border_title = Text.assemble("Folders · ", inert_text(account_id))
        self.query_one(FolderList).set_class(True, "-paths").set_options(
            [Option(Text("loading folders …", "italic"), disabled=True)])
        self.query_one("#folders-status", Static).update("")

    def show_folders(self, account_id: str, folders) -> None:
        """Folders with role and unread/total; the cursor stays on the folder it was on."""
        folder_list = self.query_one(FolderList)
        previous = None
        if self.account_id == account_id and folder_list.highlighted is not None and self._folders:
            option = folder_list.get_option_at_index(folder_list.highlighted)
            if option.id and option.id.startswith("folder:"):
                previous = self._folders[int(option.id.partition(":")[2])].id
        self.account_id = account_id
        ordered = folder_paths(list(folders))
        self._folders = [folder for folder, _path in ordered]
        self._paths = [path for _folder, path in ordered]
        self.border_title = Text.assemble("Folders · ", inert_text(account_id))
        options = [Option(Text("← project lists", "italic"), id="back-to-lists")]
        highlight = None
        for i, (folder, path) in enumerate(ordered):
            text = Text(no_wrap=True, overflow="ellipsis")
            text.append_text(inert_text(path, style="bold" if folder.unread else ""))
            if folder.role:
                text.append(f" {folder.role}", "dim")
            text.append(f" {folder.unread}/{folder.total}", "dim")
            options.append(Option(text, id=f"folder:{i}", disabled=not folder.selectable))
            if folder.id == previous or (previous is None and highlight is None and folder.role == "inbox"):
                highlight = len(options) - 1
        folder_list.set_class(True, "-paths").set_options(options)
        folder_list.highlighted = highlight if highlight is not None else (1 if len(options) > 1 else 0)
        status = self.query_one("#folders-status", Static)
        status.update(Text(f"{len(self._folders)} folders · unread/total"))
        status.set_class(False, "-warning")

    def show_account_failure(self, text: str) -> None:
        """The folders could not be listed: say why, keep the way back to the lists."""
        self._folders = []
        folder_list = self.query_one(FolderList)
        folder_list.set_options([Option(Text("← project lists", "italic"), id="back-to-lists")])
        folder_list.highlighted = 0
        status = self.query_one("#folders-status", Static)
        status.update(inert_text(f"⚠ {text}"))
        status.set_class(True, "-warning")

    # -- c: an entry by name ---------------------------------------------------------------
    def choose_by_name(self) -> None:
        """``c``: pick a list or folder of this pane by name and open it (as Enter here would);
        from the project's lists, every personal account's folders too (``account/folder``)."""
        folder_list = self.query_one(FolderList)
        choices: list[tuple[str, Text]] = []
        for index in range(folder_list.option_count):
            option = folder_list.get_option_at_index(index)
            if not option.disabled and isinstance(option.prompt, Text):  # the pane's labels are inert Text
                choices.append((f"option:{index}", option.prompt.copy()))
        accounts = _account_ids(self) if self.account_id is None else []
        if not choices and not accounts:
            self.notify("There is no list or folder to open yet.", severity="warning", markup=False)
            return
        title = (f"Change folder · account {self.account_id}" if self.account_id
                 else "Change list or folder" if accounts else "Change list")
        # lazy: dialogs are not on the first screen (tests/tui/test_startup_imports.py)
        from mailtriage.tui.dialogs.folder_jump import FolderJump

        self._jump_folders = {}
        request = self.requests.new("jump")

        def picked(key: str | None) -> None:
            self.requests.new("jump")  # what is still listed for the dialog is not wanted
            if key is not None and key.startswith("option:") and int(key[7:]) < folder_list.option_count:
                folder_list.highlighted = int(key[7:])
                folder_list.action_select()  # as Enter in the lists pane: the pane opens it
            elif key in self._jump_folders:
                self._open_account_folder(*self._jump_folders[key])

        more = "listing the accounts' folders …" if accounts else None
        self._jump = FolderJump(choices, title, cursor_blink=shell(self).cursor_blink, more=more)
        self.app.push_screen(self._jump, picked)
        if accounts:
            self._folders_for_jump(request, accounts)

    @work(thread=True, exclusive=True, group="jump", exit_on_error=False)
    def _folders_for_jump(self, request: int, accounts: list[str]) -> None:
        for account_id in accounts:
            try:
                folders = service(self).account_folders(account_id)
            except Exception as exc:
                self.post_message(FoldersFailed(request, f"Listing the folders of {account_id} failed", exc))
                continue
            self.post_message(AccountFoldersLoaded(request, account_id, folders))
        self.post_message(AccountFoldersLoaded(request, "", []))  # the last: nothing more is coming

    def _to_jump(self, message: AccountFoldersLoaded | FoldersFailed) -> bool:
        """Whether ``message`` answers the open change-folder dialog: then it is shown there."""
        if self._jump is None or not self.requests.is_current("jump", message.request):
            return False
        if isinstance(message, FoldersFailed):  # a line in the dialog; the error list has the details
            self._jump.add_choices([(f"failed:{message.request}", inert_text(message.title, style="italic"))],
                                   takes=False)
        elif not message.account_id:
            self._jump.add_choices([], done=True)
        else:
            choices = []
            for folder, path in folder_paths(list(message.folders)):
                if folder.selectable:
                    key = f"account:{len(self._jump_folders)}"
                    self._jump_folders[key] = (message.account_id, list(message.folders), folder.id)
                    choices.append((key, inert_text(f"{message.account_id}/{path}")))
            self._jump.add_choices(choices)
        return True

    def _open_account_folder(self, account_id: str, folders: list, folder_id: str) -> None:
        """A folder of another account picked by ``c``: the pane shows that account's folders (as
        listed for the dialog) with it highlighted, and opens it as Enter on it here would."""
        self.requests.new("folders")  # a listing still under way for the pane is superseded
        self.show_folders(account_id, folders)
        folder_list = self.query_one(FolderList)
        index = next(i for i, folder in enumerate(self._folders) if folder.id == folder_id)
        folder_list.highlighted = index + 1  # after "← project lists"
        folder_list.action_select()


def _account_ids(pane: FoldersPane) -> list[str]:
    """The personal accounts of the settings file (none when its accounts table is broken: that
    is reported at start-up)."""
    try:
        return list(service(pane).settings.accounts())
    except Exception:
        return []
