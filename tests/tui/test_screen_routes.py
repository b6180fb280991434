"""What MainScreen hands on between its components, and in which order (issue 36 §2).

Enter on a row (``ThreadList.Opened``) has one handler, the component's that takes it
(``Reading``'s, tui/controllers/reading.py), which the screen calls: the listing's retry first,
then the read. The retry forgets an outage's answer (the list's listing failed for a
backend out of reach) before the read asks for the backend; in the other order the read is
on its way, with the outage still believed, when it is forgotten (issue 33).
"""

from mailtriage.tui.panes.thread_list import ThreadList
from tests.tui.helpers import make_app, mbox_project, settle


async def test_enter_after_an_outage_forgets_it_before_the_read_starts_then_lists_again(tmp_path):
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        main = app.main
        row = main.query_one(ThreadList).current
        assert row is not None and main.reading.open_summary is None
        main.listing.listing_out_of_reach = True  # the list's last listing failed: its backend out of reach
        forgotten_with_open: list = []
        forget = app.session.forget_availability

        def forget_availability() -> None:  # the real call, and what the reader had begun then
            forgotten_with_open.append(main.reading.open_summary)
            forget()
        app.session.forget_availability = forget_availability
        await pilot.press("enter")
        await settle(pilot)
        assert forgotten_with_open[:1] == [None], "the read started before the outage was forgotten"
        assert main.reader.thread is not None and main.reader.thread.thread_id == row.thread_id
        assert not main.listing.listing_out_of_reach  # the list was listed again once the thread came


async def test_a_request_no_component_takes_goes_to_the_error_list(tmp_path):
    """The structural test (test_component_messages.py) keeps this from happening; were a
    Request left out of every TAKES, the user sees it in the error list, not a silent key."""
    from mailtriage.tui.messages import Request

    class Stray(Request):
        pass

    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        before = len(app.errors)
        app.main.post_message(Stray())
        await settle(pilot)
        assert [(e.title, e.message) for e in app.errors[before:]] == [
            ("A request nothing on the main screen takes", "on_stray")]
