"""A cold start's first listing, done by start-up's helper process (tui/head_start.py).

With no summary cache yet, the child forked before Textual loads has no rows for the first
frame: it goes on to list the first list from the server (a real Dovecot behind the loopback
proxy of test_imap_network.py), first page then whole window, and the app shows what it
hands over, lists itself when the child fails, and ends it when the app ends first.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

from mailtriage.core.settings import load_settings
from mailtriage.core.trace import OPLOG, TRACE
from mailtriage.tui import head_start
from mailtriage.tui.head_start import STARTUP_CALLER, ForkedHeadStart
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.application.service import Service
from tests.tui.helpers import WAIT_BOUND, make_app, settle, until_sync
from tests.tui.test_imap_drafts import imap_project  # noqa: F401 (fixture)
from tests.tui.test_imap_network import listed_here, proxied_project, threads_status, wait_until  # noqa: F401 (fixture)

SUBJECTS = {"Heap overflow in the frob parser", "Second report"}


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def exited(pid: int) -> bool:
    """Whether our child ``pid`` has ended, reaped or not. Not ``gone``: an ended child nobody has
    reaped yet is a zombie, which ``kill(pid, 0)`` still finds. ``WNOWAIT`` leaves it to be reaped
    by its owner (``ForkedHeadStart``)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # reaped already
        return True


@pytest.fixture
def one_thread_pages(monkeypatch):
    """A first page of one thread, so two threads make a page and then the whole window."""
    monkeypatch.setattr(head_start, "FIRST_PAGE", 1)


def add_oauth_account(user_config, dovecot, dovecot_user) -> None:
    """An account that signs in with OAuth tokens (xoauth2), in the user's settings."""
    settings = user_config / "config.toml"
    settings.write_text(settings.read_text() + f'''
[accounts.oauth]
kind = "imap"
host = "127.0.0.1"
port = {dovecot.port}
security = "plain"
username = "{dovecot_user.name}"
auth = "xoauth2"
''')


def test_the_child_of_a_cold_start_lists_the_first_page_then_the_whole_window(proxied_project, one_thread_pages,
                                                                              dovecot_user):
    project, _proxy = proxied_project
    child = ForkedHeadStart.start(project, demo=False)
    head = child.result()
    assert head.listing is None and head.listing_follows and head.list_name == "security@frob.example"
    page = child.next_listing()
    assert not page.whole and [t.subject for t in page.listing()] == ["Second report"]
    whole = child.next_listing()
    assert whole.whole and {t.subject for t in whole.listing()} == SUBJECTS
    assert whole.resolution.chosen == "imap"
    child.finish()  # it writes the summary cache and ends
    # What the child recorded comes along, as the start-up's, for the console.
    listings = [r for r in page.operations + whole.operations if r.op == "list_recent_threads"]
    assert [(r.backend, r.caller, r.error) for r in listings] == [("imap", STARTUP_CALLER, None)] * 2
    assert any("FETCH" in line.text for line in page.trace + whole.trace)
    assert dovecot_user.password not in " ".join(line.text for line in page.trace + whole.trace)
    assert gone(child.pid) and child.ended.is_set()  # ended, and reaped
    # Built back field for field, and its summary cache is on disk for this process.
    assert list(whole.listing()) == listed_here(project)
    session = Service(project, demo=False, settings=load_settings())
    session.open()
    dispatch, stale = session.offline_threads("security@frob.example")
    assert stale and {t.subject for t in dispatch.value} == SUBJECTS
    session.close()


def test_with_a_summary_cache_the_head_start_has_rows_and_the_child_lists_nothing(proxied_project):
    project, _proxy = proxied_project
    listed_here(project)  # fills the cache
    child = ForkedHeadStart.start(project, demo=False)
    head = child.result()
    assert head.stale and {t.subject for t in head.listing.value} == SUBJECTS
    assert not head.listing_follows
    child.receive_read_ahead()  # it reads the first row's thread ahead, then ends (test_head_start_read_ahead.py)
    assert gone(child.pid)


def test_a_child_that_cannot_list_hands_over_nothing(proxied_project):
    project, proxy = proxied_project
    proxy.go_down()
    child = ForkedHeadStart.start(project, demo=False)
    head = child.result()
    assert head.listing_follows  # decided without the server
    started = time.monotonic()
    assert child.next_listing() is None
    assert time.monotonic() - started < head_start.LISTING_TIMEOUT / 2  # it did not wait for the listing's timeout
    assert gone(child.pid)


async def test_the_app_shows_the_childs_listing_and_does_not_list_again(proxied_project, one_thread_pages):
    project, _proxy = proxied_project
    OPLOG.clear()
    app = make_app(project)
    app.first_page = 1
    child = ForkedHeadStart.start(project, demo=False)
    assert child.ready(WAIT_BOUND)  # its head start is there before the first frame (not late, on a busy machine)
    app.prepare_first_screen(child)
    assert app.head_start is not None and app.head_start.listing_follows
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: "2 threads · via list_recent_threads → imap" in threads_status(app))
        await settle(pilot)
        assert len(app.screen.query_one(ThreadList).rows) == 2
        listings = [r for r in OPLOG.items() if r.op == "list_recent_threads"]
        assert [r.caller for r in listings] == [STARTUP_CALLER, STARTUP_CALLER]  # none by this process
        assert any(line.channel.startswith("imap") for line in TRACE.items())
        assert app.errors == []


async def test_the_app_lists_itself_when_its_child_could_not(proxied_project):
    project, proxy = proxied_project
    proxy.go_down()  # the child finds no server; by the time the app lists, it is back
    child = ForkedHeadStart.start(project, demo=False)
    app = make_app(project)
    assert child.ready(WAIT_BOUND)  # its head start is there before the first frame (not late, on a busy machine)
    app.prepare_first_screen(child)
    assert app.head_start.listing_follows
    assert child.ready(WAIT_BOUND)  # the pipe's end: the child's listing failed, and it ended
    proxy.come_back()
    OPLOG.clear()
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: "2 threads · via list_recent_threads → imap" in threads_status(app))
        await settle(pilot)
        listings = [r for r in OPLOG.items() if r.op == "list_recent_threads"]
        assert listings and all(r.caller == "you" for r in listings)


#: The quit's own waits in the quit test (the close's for a call, the reap of the child): a quit that
#: waited for one takes this long, and one for the server the account's 30-s timeout; one that ended
#: the calls takes milliseconds to seconds, which a loaded machine cannot blur with 30 s.
WAITS = 30.0


async def test_quitting_while_the_child_waits_on_the_server_ends_the_child(proxied_project, monkeypatch):
    from mailtriage.application import service_lock

    for module, name in ((service_lock, "CLOSE_WAIT"), (service_lock, "ABORT_WAIT"), (head_start, "REAP_WAIT")):
        monkeypatch.setattr(module, name, WAITS)
    project, proxy = proxied_project
    proxy.hold()  # the child's login waits on the server (its head start needs none)
    child = ForkedHeadStart.start(project, demo=False)
    app = make_app(project)
    assert child.ready(WAIT_BOUND)  # its head start is there before the first frame (not late, on a busy machine)
    app.prepare_first_screen(child)
    assert app.head_start is not None and app.head_start.listing_follows
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.pause(0.5)
            assert "loading threads" in threads_status(app)
            assert not gone(child.pid)
            started = time.monotonic()
        took = time.monotonic() - started
        assert took < WAITS, f"the quit took {took:.2f} s: it waited for the server or the child"
        until_sync(lambda: gone(child.pid), "the child to be gone after the app ended")
    finally:
        proxy.release()


async def test_a_late_head_start_still_hands_over_its_listing(proxied_project, monkeypatch):
    from tests.tui.test_first_frame import _slow_head_start

    project, _proxy = proxied_project
    go = project.parent / "go"
    _slow_head_start(monkeypatch, until=go)  # answers once told to (a loaded machine cannot make it early)
    OPLOG.clear()
    app = make_app(project)
    app.prepare_first_screen(ForkedHeadStart.start(project, demo=False))
    assert app.head_start is None and app._late_head_start is not None  # late: the first frame does not wait for it
    async with app.run_test(size=(140, 40)) as pilot:
        go.touch()
        await wait_until(pilot, lambda: "2 threads · via list_recent_threads → imap" in threads_status(app))
        await settle(pilot)
        assert app.head_start is not None and app.head_start.listing_follows
        listings = [r for r in OPLOG.items() if r.op == "list_recent_threads"]
        assert listings and all(r.caller == STARTUP_CALLER for r in listings)


def test_no_listing_follows_for_an_account_that_signs_in_with_tokens(imap_project, user_config):
    """OAuth: the child would refresh and store a token the app refreshes too, so the app lists."""
    settings = user_config / "config.toml"
    settings.write_text(settings.read_text().replace('access = "draft"', 'access = "draft"\nauth = "xoauth2"'))
    head = ForkedHeadStart.start(imap_project, demo=False).result()
    assert head is not None and head.list_name == "security@frob.example"
    assert head.listing is None and not head.listing_follows


def test_no_listing_follows_for_a_local_archive(tmp_path, user_config):
    from tests.tui.helpers import mbox_project

    head = ForkedHeadStart.start(mbox_project(tmp_path / "p"), demo=False).result()
    assert head.listing is not None and not head.listing_follows
    assert head.read_follows == head.listing.value[0].thread_id  # its first row's thread is read ahead


def test_no_read_ahead_on_a_local_archive_when_another_backend_signs_in_with_tokens(tmp_path, user_config, dovecot,
                                                                                   dovecot_user):
    """The first row's thread may resolve to any backend: one OAuth account among the project's
    sources (a fallback) keeps the read in the app, as it keeps the listing."""
    from tests.tui.helpers import mbox_project

    add_oauth_account(user_config, dovecot, dovecot_user)
    project = mbox_project(tmp_path / "p", extra_rows=[("mirror", "fallback", "no")], extra_config={"mail_sources": {
        "mbox": {"path": "list.mbox", "list": "security@frob.example", "parallel": False},
        "mirror": {"kind": "imap", "account": "oauth", "list": "security@frob.example"}}})
    head = ForkedHeadStart.start(project, demo=False).result()
    assert head is not None and head.listing is not None  # the local archive's rows
    assert head.read_follows is None and not head.listing_follows


def test_the_command_shows_a_cold_listing_its_helper_process_read(tmp_path, monkeypatch, dovecot, dovecot_user):
    """The real command on a terminal: the first list of a project with no summary cache is
    listed by start-up's child, and the app's ``--trace`` file has each listing once, by it."""
    from tests.tui.test_first_frame import frames_until
    from tests.tui.test_startup_imports_imap import imap_project as guard_project

    root = guard_project.__wrapped__(tmp_path, monkeypatch, dovecot, dovecot_user)
    trace = tmp_path / "trace.txt"
    env = {"MAILTRIAGE_CONFIG_DIR": str(root / "config"), "MAILTRIAGE_DATA_DIR": str(root / "data")}
    argv = [sys.executable, "-m", "mailtriage.cli.main", "--trace", str(trace), "--project", os.environ["GUARD_PROJECT"]]
    frames = frames_until(argv, env, b"2 threads \xc2\xb7 via list_recent_threads")
    assert any(b"Report 2" in frame for frame in frames)
    listings = [line for line in trace.read_text().splitlines() if line.startswith("op imap list_recent_threads")]
    # Listed once, by the child; the new-report poll's baseline (if it ran yet) comes after it.
    assert listings[0].endswith(f" ok by {STARTUP_CALLER}"), listings
    assert [line for line in listings[1:] if not line.endswith(" ok by poller")] == [], listings


async def test_the_apps_sources_check_does_not_wait_for_a_child_still_listing(proxied_project, monkeypatch):
    """A child slow to list (here it waits for a file first) holds back neither the sources
    pane nor the app's own check: a server that never answers would otherwise make the user
    wait for the child's timeout and then for the app's. Its listing is shown when it comes."""
    project, _proxy = proxied_project
    go = project.parent / "go"
    real = head_start._list_first

    def late(session, list_name, write_end):
        while not go.exists():
            time.sleep(0.02)
        real(session, list_name, write_end)

    monkeypatch.setattr(head_start, "_list_first", late)
    OPLOG.clear()
    child = ForkedHeadStart.start(project, demo=False)
    app = make_app(project)
    app.prepare_first_screen(child)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: app.main is not None and app.main.listing.last_matrix is not None)
        assert "loading threads" in threads_status(app) and not gone(child.pid)
        go.touch()
        await wait_until(pilot, lambda: "2 threads · via list_recent_threads → imap" in threads_status(app))
        listings = [r for r in OPLOG.items() if r.op == "list_recent_threads"]
        assert [r.caller for r in listings] == [STARTUP_CALLER]


def test_no_listing_follows_when_another_backend_signs_in_with_tokens(imap_project, user_config, dovecot,
                                                                      dovecot_user):
    """The child's listing checks every mandatory backend and may fall back to others: one
    OAuth account among the project's sources (here a fallback) keeps the listing in the app."""
    add_oauth_account(user_config, dovecot, dovecot_user)
    text = (imap_project / "project.md").read_text()
    text = text.replace("| `imap` | primary | yes | the security list folder |",
                        "| `imap` | primary | yes | the security list folder |\n| `mirror` | fallback | no | OAuth |")
    text = text.replace("    list: security@frob.example\n```",
                        "    list: security@frob.example\n  mirror:\n    kind: imap\n    account: oauth\n"
                        "    list: security@frob.example\n```")
    (imap_project / "project.md").write_text(text)
    head = ForkedHeadStart.start(imap_project, demo=False).result()
    assert head is not None and head.list_name == "security@frob.example"
    assert head.listing is None and not head.listing_follows


def test_a_damaged_cache_is_noted_in_the_apps_console(proxied_project, cache):
    """A truncated summary cache makes the start cold: the child notes it and rebuilds it, and
    the note reaches this process's trace (the backend console) with the head start."""
    project, _proxy = proxied_project
    listed_here(project)  # fills the cache
    for file in (cache / "imap").glob("*.cache"):
        file.write_bytes(file.read_bytes()[:40])
    TRACE.clear()
    child = ForkedHeadStart.start(project, demo=False)
    head = child.result()
    assert head.listing is None and head.listing_follows  # cold: the damaged cache was dropped
    notes = [line for line in TRACE.items() if "summary cache" in line.text]
    assert notes and notes[0].channel.startswith("imap"), [line.text for line in TRACE.items()]
    while (part := child.next_listing()) is not None and not part.whole:
        pass
    child.finish()
    assert part is not None and {t.subject for t in part.listing()} == SUBJECTS


def test_the_child_ends_once_its_cache_is_written_not_after_a_logout(proxied_project, one_thread_pages, monkeypatch):
    """After the whole window the app waits for the child's end (its summary cache written):
    a server that no longer answers costs nothing there (the child sends no LOGOUT)."""
    project, proxy = proxied_project
    child = ForkedHeadStart.start(project, demo=False)
    assert child.result().listing_follows
    while (part := child.next_listing()) is not None and not part.whole:
        pass
    assert part is not None
    monkeypatch.setattr(head_start, "END_WAIT", 2 * WAITS)  # a finish that waited it out takes 60 s
    proxy.hold()
    try:
        started = time.monotonic()
        child.finish()
        assert time.monotonic() - started < WAITS
    finally:
        proxy.release()
    assert gone(child.pid)
    assert {t.subject for t in listed_offline(project)} == SUBJECTS  # written before it ended


def listed_offline(project) -> list:
    session = Service(project, demo=False, settings=load_settings())
    try:
        session.open()
        dispatch, stale = session.offline_threads("security@frob.example")
        assert stale
        return list(dispatch.value)
    finally:
        session.close()


def test_a_password_command_that_reads_the_terminal_fails_at_once_in_the_child(proxied_project, user_config,
                                                                              tmp_path):
    """On a terminal the child is a background process group: a password command reading the
    terminal must fail (and the child hand over nothing), not stop the child by job control
    while the app waits for it."""
    import json
    import pty
    import select

    project, _proxy = proxied_project
    settings = user_config / "config.toml"
    settings.write_text(settings.read_text() + "password_command = \"sh -c 'read p </dev/tty; echo $p'\"\n")
    out = tmp_path / "out.json"
    pid, master = pty.fork()
    if pid == 0:  # a session leader whose controlling terminal is the pty, as the app's shell
        result = {}
        try:
            child = ForkedHeadStart.start(project, demo=False)
            result["follows"] = child.result().listing_follows
            started = time.monotonic()
            result["part"] = repr(child.next_listing(timeout=20))
            result["waited"] = time.monotonic() - started
        except BaseException as exc:  # noqa: BLE001 - reported to the test below
            result["error"] = repr(exc)
        out.write_text(json.dumps(result))
        os._exit(0)
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline and not os.waitpid(pid, os.WNOHANG)[0]:
        if select.select([master], [], [], 0.2)[0]:
            try:
                os.read(master, 4096)
            except OSError:
                break
    os.close(master)
    result = json.loads(out.read_text())
    assert result.get("follows") is True, result
    assert result["part"] == "None" and result["waited"] < 10, result


async def test_a_whole_first_page_on_the_first_frame_starts_the_poll_as_a_whole_listing_does(proxied_project,
                                                                                            user_config, user_data):
    """A cold start whose child lists the whole window in its first part (a list shorter than a
    page) and whose first frame shows it: the listing still answers with it as a whole listing, so
    the new-report poll starts (and the next start's frame is kept). Shown by the first frame alone,
    nothing started the poll."""
    from tests.tui.helpers import cursor_files, until

    project, _proxy = proxied_project
    settings = user_config / "config.toml"
    settings.write_text(settings.read_text() + "\n[alerts]\npoll_seconds = 3600\n")
    child = ForkedHeadStart.start(project, demo=False)
    app = make_app(project, alerts=True)
    assert child.ready(WAIT_BOUND)
    app.prepare_first_screen(child)
    assert app.head_start.listing_follows
    # Its whole window is in the pipe once it has ended. (This waited for ``gone``, which an
    # unreaped child never is: the test slept out the whole bound, 60 s, every run.)
    until_sync(lambda: exited(child.pid), "the child to end, its whole window written")
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: "2 threads · via list_recent_threads → imap" in threads_status(app))
        assert app.first_page_shown() is not None and app.first_page_shown().whole  # on the first frame
        await until(pilot, lambda: bool(cursor_files(user_data)), "the poll's baseline")
