"""``u`` in a paged folder sorted without the server's SORT (issue 35: no key silently does
nothing). The walk for the next unread row fetches pages in a worker; a page arriving for the
sort's own load re-sorts the rows shown meanwhile. The walk then stopped (its rows were no
longer the list's) and its answer was dropped: the cursor never moved and nothing was said."""

from tests.tui.helpers import until
from tests.tui.test_account_folders import open_inbox
from tests.tui.test_paged_whole_folder import hold_page, no_sort_app, status, thread_list


async def test_u_while_a_sort_loads_the_folder_finds_the_unread_row_in_the_new_order(
        tmp_path, user_config, dovecot_minimal, memory_keyring):
    app = no_sort_app(tmp_path, user_config, dovecot_minimal, {}, unread={5})  # the only unread: the last page
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        tl = thread_list(app)
        held, go = hold_page(tl.listed_rows, 3)
        try:
            await pilot.press("o")  # no SORT: the rows at hand are sorted and every page loads
            await until(pilot, held.is_set, "the sort's load fetching the last page")
            await pilot.press("u")  # walks the pages not yet shown: the same last page
            await until(pilot, lambda: any(w.group == "next-unread" and w.state.name == "RUNNING"
                                           for w in app.workers), "the walk for the next unread row")
        finally:
            go.set()  # both fetches end; the sort's load re-sorts the rows shown
        await until(pilot, lambda: tl.current is not None and tl.current.unread,
                    "u to land on the unread row of the re-sorted rows")
        assert tl.current.subject == "Bulk 005"
        await until(pilot, lambda: "loaded" not in status(app), "the sort's load of every page to end")
        assert tl.current.subject == "Bulk 005" and "not ordered by the server (" in status(app)
