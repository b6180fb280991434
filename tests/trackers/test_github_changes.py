"""GitHub ``changes(cursor)`` against the emulator: a conditional request (ETag) stands for
the whole answer only when that answer was one page."""

from __future__ import annotations

from tests.trackers.conftest import make_github_env, memory_keyring  # noqa: F401 (fixture)


def test_a_change_that_lands_past_the_first_page_is_not_hidden_by_its_etag(tmp_path):
    """More issues than a page share the newest update second: the cursor's request answers
    several pages, so the first page's ETag cannot tell that a later page changed (GitHub
    would answer 304 for ever). The emulator's page holds 2 issues (GitHub's: 100)."""
    env = make_github_env(tmp_path)
    try:
        server, tracker = env.server, env.tracker
        for title in ("one", "two", "three"):
            tracker.create(title, "", [])
        for issue in server.issues.values():
            issue["updated_at"] = "2026-09-04T12:00:00Z"
        cursor = tracker.changes(None).cursor
        again = tracker.changes(cursor)  # since the newest second: all three, over two pages
        assert sorted(v["id"] for v in again.issues) == ["1", "2", "3"]
        server.issues[3].update(title="three, edited", updated_at="2026-09-04T12:00:01Z")
        later = tracker.changes(again.cursor)
        assert [(v["id"], v["title"]) for v in later.issues if v["id"] == "3"] == [("3", "three, edited")]
    finally:
        env.tracker.close_backend()
        env.server.stop()
