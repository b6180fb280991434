"""The triage queue screen (issue 37) walked by keystroke on the demo: Q opens it, a filter
narrows it, Enter reads the thread on the main screen, and a claim confirmed in the proposal
dialog makes the demo's user the owner in the demo's local-files tracker."""

import pytest

from mailtriage.application import project_dir
from mailtriage.tui.dialogs.proposal import ProposalDialog
from mailtriage.tui.panes.reader import ThreadView
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.screens.queue import QueueScreen
from tests.tui.helpers import back_to_the_list, make_app, mbox_project, screen_text, settle


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    """One demo template for the module (built once, ~1 s); each test runs on its own fresh copy."""
    return tmp_path_factory.mktemp("queue-demo") / "demo"


def demo_app(demo_dir, monkeypatch):
    monkeypatch.setenv("MAILTRIAGE_DEMO_DIR", str(demo_dir))
    workspace = project_dir(demo_session=True)
    return make_app(workspace, demo=True), workspace


def footer_words(app) -> list[str]:
    """The descriptions of the keys the footer shows."""
    from mailtriage.tui.footer import KeyFooter

    return [key.description for key in app.screen.query_one(KeyFooter).shown()]


async def open_queue(app, pilot) -> QueueScreen:
    await settle(pilot)
    await pilot.press("Q")
    await settle(pilot)
    assert isinstance(app.screen, QueueScreen)
    return app.screen


async def queue_filter_then_enter_reads_the_thread_and_back(app, pilot) -> None:
    queue = await open_queue(app, pilot)
    assert queue.queue is not None and len(queue.rows) == len(queue.queue.rows) > 40
    assert "2026-11-28 09:00 UTC" in screen_text(app)  # the demo's pinned now
    await pilot.press("s")  # state: new
    await settle(pilot)
    assert {row.state.value for row in queue.rows} == {"new"}
    assert "state new" in screen_text(app)
    subjects = [row.subject for row in queue.rows]
    heap = subjects.index("Heap buffer overflow in the frob-native thumbnail decoder")
    shown = screen_text(app)
    assert "⚠ reply +" in shown  # a week unanswered: the first-response breach, in words
    await pilot.press(*["j"] * heap)
    await settle(pilot)
    assert "first response overdue" in screen_text(app)
    await pilot.press("enter")
    await settle(pilot)
    assert not isinstance(app.screen, QueueScreen)
    assert "Reading · Heap buffer overflow" in screen_text(app)
    assert app.main.query_one(ThreadList).current.subject == subjects[heap]
    await pilot.press("4", "q")  # the reading pane, then back to the list
    await settle(pilot)
    assert isinstance(app.focused, ThreadList)
    await pilot.press("Q")  # and the queue again
    await settle(pilot)
    assert isinstance(app.screen, QueueScreen)
    await pilot.press("escape")
    await settle(pilot)
    assert not isinstance(app.screen, QueueScreen)


async def test_claim_confirmed_makes_me_the_owner_in_the_tracker_then_a_filter_and_enter(demo_dir, monkeypatch):
    """Two tests on the demo, one app each, on one app (issue 36 §7): the claim (it ends on the
    thread read), then, from the list (``back_to_the_list``), the filter check, which reads
    nothing of SEC-0006 (its rows are the new reports)."""
    app, workspace = demo_app(demo_dir, monkeypatch)
    async with app.run_test(size=(100, 30)) as pilot:
        queue = await open_queue(app, pilot)
        target = next(i for i, row in enumerate(queue.rows) if row.issue == "SEC-0006")
        assert queue.rows[target].owner is None
        await pilot.press(*["j"] * target, "c")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        assert "SEC-0006" in screen_text(app)
        assert "assignees: []" in (workspace / "tracker" / "SEC-0006.md").read_text()  # nothing written yet
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
        row = next(row for row in queue.rows if row.issue == "SEC-0006")
        assert row.owner == "triager" and row.state.value == "in_progress"
        assert "triager" in screen_text(app)
        # the footer still offers Enter (it lost it once the table had the focus: the table's own
        # hidden Enter took the key in the footer's bindings)
        assert "Read" in footer_words(app)
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, QueueScreen)
        await back_to_the_list(pilot)
        await queue_filter_then_enter_reads_the_thread_and_back(app, pilot)
    assert 'assignees: ["triager"]' in (workspace / "tracker" / "SEC-0006.md").read_text()


async def test_a_claim_on_a_colleagues_issue_says_who_holds_it_and_release_gives_mine_back(demo_dir, monkeypatch):
    app, workspace = demo_app(demo_dir, monkeypatch)
    async with app.run_test(size=(100, 30)) as pilot:
        queue = await open_queue(app, pilot)
        await pilot.press("o", "o", "o")  # all -> mine -> nobody's -> mkowalczyk's
        await settle(pilot)
        assert [row.issue for row in queue.rows] == ["SEC-0004"] and "owner mkowalczyk" in screen_text(app)
        await pilot.press("c")
        await settle(pilot)
        # refused like every blocked proposal: the dialog says why and cannot be confirmed
        assert isinstance(app.screen, ProposalDialog) and app.screen.proposal.blocked is not None
        assert "SEC-0004 is held by mkowalczyk" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("o", "o")  # -> all -> mine
        await settle(pilot)
        assert [row.issue for row in queue.rows] == ["SEC-0005"]
        await pilot.press("u")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert queue.rows == []  # mine: none left
        await pilot.press("a")
        await settle(pilot)
        row = next(row for row in queue.rows if row.issue == "SEC-0005")
        assert row.owner is None and row.state.value == "imported"
    assert "assignees: []" in (workspace / "tracker" / "SEC-0005.md").read_text()
    assert 'assignees: ["mkowalczyk"]' in (workspace / "tracker" / "SEC-0004.md").read_text()

async def test_a_claim_a_colleague_won_meanwhile_is_not_written_and_says_who_holds_it(demo_dir, monkeypatch):
    """The colleague claims SEC-0006 (`mailtriage queue claim` in another terminal) while our
    claim waits in the dialog: confirming writes nothing and names the holder."""
    from mailtriage.application.project import Project
    from mailtriage.application.queue import propose_claim

    app, workspace = demo_app(demo_dir, monkeypatch)
    async with app.run_test(size=(100, 30)) as pilot:
        queue = await open_queue(app, pilot)
        target = next(i for i, row in enumerate(queue.rows) if row.issue == "SEC-0006")
        await pilot.press(*["j"] * target, "c")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        colleague = Project.open(workspace)
        try:
            won = propose_claim(colleague.open_tracker(), "SEC-0006", "mkowalczyk", config=colleague.config)
            assert won.apply(confirmed=True).ok
        finally:
            colleague.close()
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
        assert any("SEC-0006 is held by mkowalczyk" in str(n.message) for n in app._notifications)
        row = next(row for row in queue.rows if row.issue == "SEC-0006")
        assert row.owner == "mkowalczyk"  # read again: the holder is shown
    assert 'assignees: ["mkowalczyk"]' in (workspace / "tracker" / "SEC-0006.md").read_text()

async def test_p_pulls_a_colleagues_claim_from_the_shared_remote(demo_dir, monkeypatch, tmp_path):
    """Two clones of one git remote: the colleague claims and pushes; p in our queue pulls it."""
    import subprocess

    from mailtriage.application.project import Project
    from mailtriage.application.queue import propose_claim

    def git(cwd, *args):
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=30)

    app, workspace = demo_app(demo_dir, monkeypatch)
    git(tmp_path, "clone", "-q", "--bare", str(workspace), "remote.git")
    git(workspace, "remote", "add", "origin", str(tmp_path / "remote.git"))
    git(workspace, "fetch", "-q", "origin")
    git(workspace, "branch", "-q", "-u", "origin/main")
    git(tmp_path, "clone", "-q", str(tmp_path / "remote.git"), "colleague")
    git(tmp_path / "colleague", "config", "user.name", "Martin")
    git(tmp_path / "colleague", "config", "user.email", "mkowalczyk@example.org")
    async with app.run_test(size=(100, 30)) as pilot:
        queue = await open_queue(app, pilot)
        assert next(row for row in queue.rows if row.issue == "SEC-0006").owner is None
        colleague = Project.open(tmp_path / "colleague")
        try:
            claim = propose_claim(colleague.open_tracker(), "SEC-0006", "mkowalczyk", config=colleague.config)
            assert claim.apply(confirmed=True).ok  # committed and pushed to the shared remote
        finally:
            colleague.close()
        await pilot.press("R")  # read again: the working copy has not pulled yet
        await settle(pilot)
        assert next(row for row in queue.rows if row.issue == "SEC-0006").owner is None
        await pilot.press("p")
        await settle(pilot)
        assert next(row for row in queue.rows if row.issue == "SEC-0006").owner == "mkowalczyk"
        assert any("fetched and fast-forwarded" in str(n.message) for n in app._notifications)

async def test_without_a_tracker_the_queue_shows_the_mail_and_a_claim_says_why_not(tmp_path):
    app = make_app(mbox_project(tmp_path / "p"))  # no tracker configured
    async with app.run_test(size=(100, 30)) as pilot:
        queue = await open_queue(app, pilot)
        assert queue.rows and all(row.issue is None for row in queue.rows)
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen) and app.errors == []
        assert any("the report is not imported" in n.message for n in app._notifications)

def test_hostile_text_in_a_queue_row_is_shown_inert():
    from datetime import datetime, timezone

    from mailtriage.application import ThreadId
    from mailtriage.application.queue import Breach, QueueRow, QueueState
    from mailtriage.tui.screens.queue import detail_text, due_cell

    now = datetime(2026, 11, 28, 9, tzinfo=timezone.utc)
    row = QueueRow(thread_id=ThreadId("msgid", "<r@example.org>"), subject="\x1b[31mURGENT [bold]x[/bold] \u202egpj.exe",
                   reporter="[link=https://evil.invalid]me[/link]@x.example", state=QueueState.IN_PROGRESS,
                   opened=datetime(2026, 11, 20, tzinfo=timezone.utc), last_reporter_message=None,
                   unanswered_since=datetime(2026, 11, 20, tzinfo=timezone.utc), owner="\x1b]8;;x\x07bob",
                   issue="SEC-1", issue_url=None, first_response_due=datetime(2026, 11, 23, tzinfo=timezone.utc),
                   disclosure_due=None, breaches=(Breach.FIRST_RESPONSE,))
    text = detail_text(row, now)
    assert "\x1b" not in text.plain and "\u202e" not in text.plain and "\x07" not in text.plain
    assert "\\x1b[31mURGENT [bold]x[/bold] ⟨U+202E⟩gpj.exe" in text.plain  # markup stays literal text
    assert not text.spans or all("link" not in str(span.style) for span in text.spans)
    assert "⚠ first response overdue" in text.plain
    assert due_cell(row, now).plain == "⚠ reply +5d"


async def test_after_a_claim_in_the_queue_the_main_screens_tracker_pane_lists_again(demo_dir, monkeypatch):
    """The claim pulled the tracker (a colleague's new issue came with it): back on the main
    screen, the tracker pane shows what the tracker holds now."""
    from mailtriage.tui.panes.tracker import TrackerList  # why: only this test reads the tracker pane

    app, workspace = demo_app(demo_dir, monkeypatch)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        listed = app.main.query_one(TrackerList)
        assert listed.option_count >= 6 and listed.get_option("issue:SEC-0006") is not None
        tracker = workspace / "tracker"
        (tracker / "SEC-0009.md").write_text((tracker / "SEC-0001.md").read_text().replace("SEC-0001", "SEC-0009", 1))  # arrives meanwhile
        queue = await open_queue(app, pilot)
        target = next(i for i, row in enumerate(queue.rows) if row.issue == "SEC-0006")
        await pilot.press(*["j"] * target, "c")
        await settle(pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, QueueScreen)
        assert "issue:SEC-0009" in [app.main.query_one(TrackerList).get_option_at_index(i).id
                                    for i in range(app.main.query_one(TrackerList).option_count)]
