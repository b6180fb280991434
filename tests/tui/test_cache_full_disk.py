"""The app on a full disk under the cache folder (issue 38): it lists without its caches and
says so once (a "Cache" notice naming the OS's reason). The full disk is real: a small tmpfs
filled to the last byte (tests/application/flows/test_cache_full_disk.py; needs root, else skipped)."""

from __future__ import annotations


from mailtriage.core import cache_file
from tests.tui.helpers import mail, make_app, mbox_project, settle, until
from tests.application.flows.test_cache_full_disk import NO_SPACE, full_cache  # noqa: F401  (the fixture)


async def test_the_app_on_a_full_cache_disk_lists_and_says_so_once(tmp_path, full_cache, monkeypatch):  # noqa: F811
    monkeypatch.setattr(cache_file, "_said", [])  # once per process: this test's app is the process here
    messages = [mail(f"Bug {n}", f"R{n} <r{n}@reporter.example>", f"Tue, 01 Sep 2026 {n // 60:02d}:{n % 60:02d}:00 +0000",
                     f"<bulk-{n}@reporter.example>", "x\n" * 20) for n in range(400)]
    project = mbox_project(tmp_path / "p", messages=messages)
    full_cache.fill()
    app = make_app(project)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await until(pilot, lambda: [n for n in app._notifications if n.title == "Cache"], "the cache's note")
        notes = [n.message for n in app._notifications if n.title == "Cache"]
        assert len(notes) == 1 and NO_SPACE in notes[0] and "without the cache" in notes[0], notes
        assert len(app.main.threads.thread_list.rows) == 400  # listed all the same
        app.main.threads.thread_list.focus()
        await pilot.press("j")
        await settle(pilot)
        assert [n.title for n in app._notifications].count("Cache") == 1  # said once
