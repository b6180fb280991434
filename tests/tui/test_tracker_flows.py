"""Import a report into a real local-files tracker (git), then publish, from the app."""

import subprocess
from pathlib import Path

from textual.notifications import Notify
from textual.widgets import TextArea

from mailtriage.core.projectconfig import load_project
from mailtriage.tui.dialogs.proposal import ProposalDialog
from tests.tui.helpers import make_app, mbox_project, screen_text, settle
from tests.tui.test_tracker_pane import TRACKER
from tests.tui.tracker_data import make_empty_tracker

FIELDS = ["Security mailing list thread", "Reporter", "Received", "Affected versions", "CVE", "Severity"]


def project_with_tracker(folder: Path) -> Path:
    project = mbox_project(folder, extra_config={"tracker": {**TRACKER, "fields": FIELDS,
                                                             "commit_attribution": "Generated-by: mailtriage"}})
    make_empty_tracker(load_project(project), project / "repo")
    return project


def git(project: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=project / "repo", check=True, capture_output=True, text=True).stdout


async def test_import_then_publish_writes_the_issue_and_commits_it(tmp_path):
    project = project_with_tracker(tmp_path / "p")
    app = make_app(project)
    async with app.run_test(size=(140, 50)) as pilot:
        await settle(pilot)
        await pilot.press("G", "enter")  # the heap overflow report
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        shown = screen_text(app)
        assert "Import report: Heap overflow in the frob parser" in shown
        assert "1. Create issue · in tracker local-files (git working copy" in shown
        assert "Labels: needs triage" in shown
        assert "2. Add Import entry to the new issue" in shown and "Action: Import" in shown
        whole = app.screen.proposal.render_text()  # the dialog scrolls; this is all of it
        assert "no backend available for create_draft" in whole  # the receipt: a preview (mbox)
        assert "Cc: security@frob.example  <-- security CC" in whole
        assert git(project, "status", "--porcelain") == ""  # nothing written yet
        await pilot.press("ctrl+s")
        await settle(pilot)
        # The import is written; the publish review follows, confirmed on its own.
        assert isinstance(app.screen, ProposalDialog)
        shown = screen_text(app)
        assert "Publish the tracker changes" in shown
        assert "1. Publish 1 change" in shown and "in tracker local-files (git working copy" in shown
        assert "security-tracker/SEC-0001.md" in shown
        message = app.screen.query_one(TextArea)
        assert message.text == app.screen.proposal.writes[0].body  # the commit message is editable
        message.load_text("security: import SEC-0001 (heap overflow)\n")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, ProposalDialog)
    log = git(project, "log", "-1", "--format=%B")
    assert log.startswith("security: import SEC-0001 (heap overflow)")
    assert "Generated-by: mailtriage" in log
    assert git(project, "status", "--porcelain") == ""
    issue = (project / "repo" / "security-tracker" / "SEC-0001.md").read_text()
    assert 'title: "Heap overflow in the frob parser"' in issue and "status rollup v1" in issue


async def test_tagged_threads_are_imported_in_one_proposal_one_import_each_and_a_cancelled_publish_leaves_them_pending(
        tmp_path):
    project = project_with_tracker(tmp_path / "p")
    app = make_app(project)
    async with app.run_test(size=(140, 50)) as pilot:
        await settle(pilot)
        await pilot.press("G", "k", "v", "v")  # the last two threads
        await settle(pilot)
        tagged = [row.subject for row in app.main.threads.thread_list.tags.rows()]
        assert len(tagged) == 2 and "Heap overflow in the frob parser" in tagged
        await pilot.press("i")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        proposal = app.screen.proposal
        assert proposal.title == "Import 2 reports"
        summaries = [w.summary for w in proposal.writes]
        creates = [s for s in summaries if "create the tracker issue" in s]
        assert [s[:6] for s in creates] == ["[1/2] ", "[2/2] "]
        assert creates[1] == '[2/2] create the tracker issue "Heap overflow in the frob parser"'
        assert "Import 2 reports" in screen_text(app)
        assert git(project, "status", "--porcelain") == ""  # nothing written yet
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)  # the publish review follows
        assert "Publish the tracker changes" in screen_text(app)
        assert app.main.threads.thread_list.tags.rows() == []  # both imported: no tag left
        await pilot.press("escape")  # the publish review, cancelled: the changes stay pending
        await settle(pilot)
        # (was test_cancelling_the_publish_review_leaves_the_changes_pending, an app of its own)
        assert any("nothing was written" in n.message for n in app._notifications)
        before = git(project, "rev-parse", "HEAD")
        # P opens the review again later.
        await pilot.press("P")
        await settle(pilot)
        assert "Publish the tracker changes" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
    assert git(project, "rev-parse", "HEAD") == before
    pending = git(project, "status", "--porcelain")
    assert "SEC-0001.md" in pending and "SEC-0002.md" in pending
    titles = {(project / "repo" / "security-tracker" / f"SEC-000{n}.md").read_text().split('title: "')[1].split('"')[0]
              for n in (1, 2)}
    assert "Heap overflow in the frob parser" in titles and len(titles) == 2


async def test_publish_reviews_again_when_the_working_copy_changed_since_the_review(tmp_path):
    """Issue 30: a second writer (`mailtriage tracker create` in another terminal) adds an issue
    while the publish review waits. Confirming commits nothing; the app shows the review as it
    is now (both files) and asks again; confirmed, the commit holds exactly that review."""
    from mailtriage.trackers.registry import open_tracker

    project = project_with_tracker(tmp_path / "p")
    app = make_app(project)
    # Every message the app handles, kept: a notification read from app._notifications expires on
    # the wall clock (12 s), which a loaded machine's settle() outlasted (failed at load ~12).
    handled: list = []
    async with app.run_test(size=(140, 50), message_hook=handled.append) as pilot:
        await settle(pilot)
        await pilot.press("G", "enter")
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot)
        await pilot.press("ctrl+s")  # the import
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog) and app.screen.proposal.facts["files"] == [
            "security-tracker/SEC-0001.md"]
        head = git(project, "rev-parse", "HEAD")
        other = open_tracker(load_project(project)).create("Path traversal", "z\n", [])["id"]  # the other terminal
        await pilot.press("ctrl+s")  # confirms the review that no longer holds
        await settle(pilot)
        assert git(project, "rev-parse", "HEAD") == head  # nothing committed
        assert isinstance(app.screen, ProposalDialog), "the new review is asked, not only a refusal"
        assert sorted(app.screen.proposal.facts["files"]) == ["security-tracker/SEC-0001.md",
                                                              f"security-tracker/{other}.md"]
        assert f"security-tracker/{other}.md" in screen_text(app)
        notes = [m.notification.message for m in handled if isinstance(m, Notify)]
        assert any("changed since the review" in n and f"{other}.md" in n for n in notes), notes
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, ProposalDialog)
    committed = git(project, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(committed) == ["security-tracker/SEC-0001.md", f"security-tracker/{other}.md"]
    assert git(project, "status", "--porcelain") == ""
