"""The triage queue screen (issue 37) walked by keystroke on the demo: Q opens it, a filter
narrows it, Enter reads the thread on the main screen, and a claim confirmed in the proposal
dialog makes the demo's user the owner in the demo's local-files tracker."""

from mailtriage.application import project_dir
from mailtriage.tui.dialogs.proposal import ProposalDialog
from mailtriage.tui.panes.reader import ThreadView
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.screens.queue import QueueScreen
from tests.tui.helpers import make_app, screen_text, settle


def demo_app(tmp_path, monkeypatch):
    monkeypatch.setenv("MAILTRIAGE_DEMO_DIR", str(tmp_path / "demo"))
    workspace = project_dir(demo_session=True)
    return make_app(workspace, demo=True), workspace


async def open_queue(app, pilot) -> QueueScreen:
    await settle(pilot)
    await pilot.press("Q")
    await settle(pilot)
    assert isinstance(app.screen, QueueScreen)
    return app.screen


async def test_queue_filter_then_enter_reads_the_thread_and_back(tmp_path, monkeypatch):
    app, _ = demo_app(tmp_path, monkeypatch)
    async with app.run_test(size=(100, 30)) as pilot:
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


async def test_claim_confirmed_makes_me_the_owner_in_the_tracker(tmp_path, monkeypatch):
    app, workspace = demo_app(tmp_path, monkeypatch)
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
    assert 'assignees: ["triager"]' in (workspace / "tracker" / "SEC-0006.md").read_text()
