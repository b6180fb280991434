"""The row marks' answers: one that was asked for before the marks were forgotten is dropped."""

from __future__ import annotations

from mailtriage.application import ThreadStatus
from mailtriage.tui.messages import RowStatusLoaded
from tests.tui.helpers import make_app, mbox_project, settle


async def test_an_answer_asked_before_the_marks_were_forgotten_is_dropped(tmp_path):
    # Review finding: after R (forget without asking again) an answer from before the write
    # still landed, and its threads, no longer wanted, kept that stale mark.
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        marks = app.screen.threads.marks
        row = app.screen.threads.query_one("ThreadList").current
        stale_request = marks._requests.new("row-status")  # a worker asked, before the write
        marks.forget(ask_again=False)  # the write's R
        marks.loaded(RowStatusLoaded(stale_request, {row.thread_id: ThreadStatus(issue="SEC-9999")}))
        assert row.thread_id not in marks.statuses
