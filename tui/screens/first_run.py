"""The first-run screen: no project found (or its configuration is broken).

It explains how to add a real project or account, and offers the bundled demo.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Markdown, Static

from mailtriage.tui import bindings
from mailtriage.tui.sanitize import inert_text
from mailtriage.tui.scroll_keys import ScrollKeys

GUIDE = """\
## Try it now

Press **d** to open the bundled demo: a small security-list archive, no account needed
(the same as `mailtriage --demo`).

## Add a project

mailtriage works on a *project folder* holding `project.md`. It lists the mail sources
and the project's configuration:

````markdown
# My project

## Mail sources

| Backend | Role | Mandatory | Notes |
|---|---|---|---|
| `mbox` | primary | no | the list archive on disk |

## Configuration

```yaml
security_list: security@myproject.example
mail_sources:
  mbox:
    path: archive.mbox
```
````

Then open it with `mailtriage --project FOLDER`, or set `MAILTRIAGE_PROJECT=FOLDER`, or
start mailtriage inside that folder.

## Add an account

Personal accounts, your theme and your key bindings live in the user settings file
shown below. Passwords and tokens never go in that file: they live in your system
keyring.
"""


class FirstRunScreen(Screen, bindings.KeyContext, ScrollKeys):
    key_context = "FirstRunScreen"
    BINDINGS = bindings.FIRST_RUN
    scroll_target = "#first-run"  # j k space g G scroll it (ScrollKeys)

    def __init__(self, project_dir: Path, problem: str | None, settings_path: Path, *, missing: bool) -> None:
        super().__init__()
        self.project_dir = project_dir
        self.problem = problem
        self.settings_path = settings_path
        self.missing = missing

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="first-run"):
            head = Text()
            if self.missing:
                head.append("Welcome to mailtriage\n", "bold")
                head.append("No project was found in ")
                head.append_text(inert_text(str(self.project_dir), style="bold"))
                head.append(" (there is no project.md).")
            else:
                head.append("The project could not be opened\n", "bold")
                head.append_text(inert_text(self.problem or "unknown problem"))
                head.append("\nFix project.md and press R to try again.")
            yield Static(head, id="first-run-head", classes="-error" if not self.missing else "")
            yield Markdown(GUIDE, id="first-run-guide")
            yield Static(Text.assemble(("User settings file: ", "bold"), inert_text(str(self.settings_path))),
                         id="first-run-settings")
        yield Footer()

    def action_open_demo(self) -> None:
        self.app.open_demo()

    def action_retry(self) -> None:
        self.app.reopen()

    def action_quit(self) -> None:
        self.app.exit(0)
