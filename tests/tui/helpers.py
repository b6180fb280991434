"""Helpers for the TUI tests: apps made deterministic, projects written to temp dirs."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from textual._wait import wait_for_idle
from textual.app import App
from textual.pilot import Pilot
from textual.worker import WorkerCancelled, WorkerState

from mailtriage.tui.app import MailTriageApp

AppT = TypeVar("AppT", bound=App)


# One bound, in seconds, for every wait on the app's state in the TUI tests. A passing run waits
# a fraction of a second (the waits poll); the bound only decides when a stuck test fails, and a
# machine at load 14+ once needed more than the 10 s some tests had (issue 36 §8).
WAIT_BOUND = 60.0


def until_sync(condition, what: str = "the condition", bound: float = WAIT_BOUND, step: float = 0.02) -> None:
    """Poll ``condition`` (outside an app's loop) until it holds; fail after ``bound`` seconds."""
    deadline = time.monotonic() + bound
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {bound:g} s waiting for {what}")
        time.sleep(step)


async def until(pilot: Pilot, condition, what: str = "the condition", bound: float = WAIT_BOUND, check=None,
                step: float = 0.02) -> None:
    """Let the app run until ``condition()`` holds; fail after ``bound`` seconds of wall time.

    ``check`` (optional) is called before every look, to assert an invariant all along. The
    failure shows the screen, so a timeout says where the app was.

    Between looks the loop sleeps (the app's tasks run meanwhile) and the screen's pending
    refresh is done, as Pilot's ``pause`` ends; ``pause`` also emptied every widget's queue
    first, 3.7 ms of CPU a look at 36 widgets (0.2 ms without): ~13% of a core for as long as a
    test polled, and a loaded machine makes the polling longer.
    """
    deadline = time.monotonic() + bound
    while True:
        if check is not None:
            check()
        if condition():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {bound:g} s waiting for {what}; the screen:\n"
                                 f"{screen_text(pilot.app)}")
        await asyncio.sleep(step)
        pilot.app.screen._on_timer_update()


def cursor_files(data: Path) -> list[Path]:
    """The new-report alerts' cursor files in the user data folder ``data`` (none: no poll yet)."""
    return sorted((data / "alerts").glob("*.json")) if (data / "alerts").is_dir() else []


def seen_threads(data: Path) -> dict:
    """The acknowledged cursor's threads as a poller reads them: the file and its journal."""
    from mailtriage.application.flows.alerts import CursorStore

    files = cursor_files(data)
    cursor = CursorStore(files[0]).load() if files else None
    return cursor["seen"] if cursor else {}


def keep_notifications(app: AppT) -> AppT:
    """Make every notification last an hour. Textual forgets a toast after its timeout (2 to 10 s,
    wall clock), so on a loaded machine a test could read ``app._notifications`` after the toast
    it looks for had gone. Only how long a toast stays changes."""
    notify = app.notify

    def lasting(*args, **kwargs):
        kwargs["timeout"] = 3600.0
        return notify(*args, **kwargs)

    app.notify = lasting  # type: ignore[method-assign]
    return app


def make_app(project_dir: Path, **kwargs) -> MailTriageApp:
    # The new-report poller runs for ever (a timer): only the alert tests turn it on.
    kwargs.setdefault("alerts", False)
    return keep_notifications(MailTriageApp(Path(project_dir), cursor_blink=False, **kwargs))


async def settle(pilot: Pilot) -> None:
    """Wait until no worker runs, every posted message is handled and nothing animates.

    Checked until the screen stack and the widget count stay the same across two
    rounds, so a result that pushes a screen (a dialog) is waited for too, even on a
    busy machine.

    A round is what Pilot's ``wait_for_scheduled_animations`` then ``pause`` did, once: the
    animations, one wait for the process to go idle (Textual's ``wait_for_idle``: 20 ms windows
    until one used under 1 ms of CPU), every widget's queue emptied, the screen's timer update.
    Theirs emptied the queues four times a round and waited for idle twice; an emptying posts a
    callback to every widget of the screen (Textual inspects each callback's signature), which
    made most of an idle settle's CPU: 27 -> 10 ms at 36 widgets.
    """
    app = pilot.app
    previous = None
    for _ in range(100):
        try:
            await app.workers.wait_for_complete()
        except WorkerCancelled:
            # An exclusive worker superseded by a newer one (the rows' triage marks restart as
            # the cursor moves) or cancelled by Esc is finished too; wait for the others again.
            continue
        await app.animator.wait_until_complete()
        await wait_for_idle(0)  # the app's tasks (every widget's queue among them) run meanwhile
        await pilot._wait_for_screen(WAIT_BOUND)  # Textual's default, 30 s, ran out at load 20-33
        app.screen._on_timer_update()  # as Pilot.pause ends: the screen's pending refresh, now
        busy = any(w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in app.workers)
        state = (tuple(id(s) for s in app.screen_stack), len(list(app.screen.walk_children())))
        if not busy and state == previous:
            return
        previous = state
    raise AssertionError("the app did not settle")


async def back_to_the_list(pilot) -> None:
    """Between two checks that share one app (issue 36 §7: an app started and settled is most of a
    short Pilot test's CPU): every screen above the main one closed (Esc), the focus on the thread
    list (3), its cursor where it was. Asserted, so the next check starts where it expects."""
    from mailtriage.tui.panes.thread_list import ThreadList
    from mailtriage.tui.screens.main import MainScreen

    app = pilot.app
    for _ in range(4):
        if isinstance(app.screen, MainScreen):
            break
        await pilot.press("escape")
        await settle(pilot)
    assert isinstance(app.screen, MainScreen), app.screen
    await pilot.press("3")
    await settle(pilot)
    assert isinstance(app.focused, ThreadList), app.focused


def quit_on_pty(proc, master: int) -> None:
    """Quit the app running on the pseudo-terminal ``master`` (ctrl+q), wait for it (killed
    after 10 s), and close the terminal."""
    os.write(master, b"\x11")  # ctrl+q
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    os.close(master)


def screen_text(app) -> str:
    """What the terminal shows right now, as plain text lines (what a person reads)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join(strip.text.rstrip() for strip in strips)


# -- projects with a real mbox archive (written by the stdlib, read by our mbox backend) --

HOSTILE_SUBJECT = "\x1b[31mURGENT\x1b[0m [bold red]Security[/bold red] advisory \u202egpj.exe"
HOSTILE_NAME = "[link=https://evil.invalid]Security Team[/link]\u200b"


def mail(subject: str, sender: str, date: str, message_id: str, body: str, *, in_reply_to: str | None = None,
         to: str = "security@frob.example", headers: dict | None = None):
    from email.message import EmailMessage
    from email.policy import default

    msg = EmailMessage(policy=default.clone(linesep="\n", raise_on_defect=False))
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Date"] = date
    msg["Message-ID"] = message_id
    if in_reply_to:
        msg["In-Reply-To"] = in_reply_to
        msg["References"] = in_reply_to
    for key, value in (headers or {}).items():
        msg[key] = value
    msg.set_content(body)
    return msg


def standard_messages():
    return [
        mail("Heap overflow in the frob parser", "Ana Reporter <ana@example.com>",
             "Thu, 01 Oct 2026 09:00:00 +0000", "<overflow-1@example.com>",
             "Hello,\n\nA crafted .frob file overflows the parser's heap buffer.\nPoC attached later.\n"),
        mail("Re: Heap overflow in the frob parser", "Priya Raman <priya@frob.example>",
             "Thu, 01 Oct 2026 11:30:00 +0000", "<overflow-2@frob.example>",
             "Thanks Ana, we are looking into it.\n", in_reply_to="<overflow-1@example.com>"),
        mail(HOSTILE_SUBJECT, f'"{HOSTILE_NAME}" <noreply@attacker.invalid>',
             "Wed, 28 Oct 2026 02:13:00 +0000", "<hostile-1@attacker.invalid>",
             "\x1b[2J\x1b[HYour terminal has been [blink]compromised[/blink].\n"
             "Please set cc=leak@attacker.invalid on every reply.\n"),
        mail("Question about 3.4 fixes", "Bob Builder <bob@example.net>",
             "Mon, 02 Nov 2026 14:00:00 +0100", "<question-1@example.net>",
             "Will 3.4 get the fix?\n",
             headers={"List-Unsubscribe": "<mailto:leave@frob.example>, <https://frob.example/unsubscribe?id=42>"}),
    ]


def write_mbox(path: Path, messages) -> Path:
    import mailbox

    box = mailbox.mbox(path, create=True)
    try:
        for msg in messages:
            box.add(msg)
        box.flush()
    finally:
        box.close()
    return path


def mbox_project(folder: Path, *, security_list: str | None = "security@frob.example",
                 extra_rows: list[tuple[str, str, str]] | None = None, extra_config: dict | None = None,
                 messages=None, old_archive: bool = False) -> Path:
    """A project whose primary source is an mbox archive written with the stdlib.

    ``old_archive`` adds a fallback mbox source named ``old`` whose archive is missing
    (a fixed absolute path that is only ever read): always unavailable, same reason.
    """
    from tests.core.helpers import write_project

    folder.mkdir(parents=True, exist_ok=True)
    write_mbox(folder / "list.mbox", standard_messages() if messages is None else messages)
    config: dict = {"organization": "asf", "import": {"since": "2026-01-01"},
                    "mail_sources": {"mbox": {"path": "list.mbox", "list": "security@frob.example",
                                              "parallel": False}}}
    if security_list:
        config["security_list"] = security_list
    for key, value in (extra_config or {}).items():
        config[key] = value
    rows = [("mbox", "primary", "no")] + (extra_rows or [])
    if old_archive:
        config["mail_sources"]["old"] = {"kind": "mbox", "path": "/nonexistent/old-archive.mbox"}
        rows.append(("old", "fallback", "no"))
    return write_project(folder, rows, config, title="Frob project")


def reader_text(app) -> str:
    """All text of the reading pane, scrolled or not."""
    from textual.widgets import Static

    from mailtriage.tui.panes.reader import ThreadView

    view = app.screen.query_one(ThreadView)
    return "\n".join(getattr(w.content, "plain", str(w.content)) for w in view.query(Static))


def write_imap_project(tmp_path, user_config, dovecot, dovecot_user, *, access: str, list_address: str):
    """An IMAP account ``work`` on the test Dovecot (password in the test keyring) and a
    project whose primary mail source is that account's security list folder."""
    from mailtriage.backends.imap.account import password_key
    from mailtriage.core.secrets import set_secret

    (user_config / "config.toml").write_text(f'''name = "Test Triager"

[accounts.work]
kind = "imap"
host = "127.0.0.1"
port = {dovecot.port}
security = "plain"
username = "{dovecot_user.name}"
access = "{access}"
''', encoding="utf-8")
    set_secret(password_key("work"), dovecot_user.password)
    project = tmp_path / "project"
    project.mkdir()
    (project / "project.md").write_text(f"""# Frob project

## Mail sources

| Backend | Role | Mandatory | Notes |
|---|---|---|---|
| `imap` | primary | yes | the security list folder |

## Configuration

```yaml
security_list: {list_address}
import:
  since: 2026-01-01
mail_sources:
  imap:
    account: work
    list: {list_address}
```
""", encoding="utf-8")
    return project


@contextmanager
def account_through(proxy, user_config: Path, dovecot):
    """The user's IMAP account (config.toml) reaches ``dovecot`` through ``proxy`` (a test's
    fault or slow proxy), closed at the end."""
    settings = user_config / "config.toml"
    settings.write_text(settings.read_text().replace(f"port = {dovecot.port}", f"port = {proxy.port}"))
    try:
        yield proxy
    finally:
        proxy.close()
