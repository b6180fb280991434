"""The TUI's error list and notifications never show a secret the session holds (issue 20 §3),
and an unexpected error shows its message, the class name kept for the trace (issue 35 §6: was
tests/tui/test_words.py's test_an_unexpected_error_shows_its_message_and_keeps_the_class_name_for_the_trace,
an app of its own on the same first-run screen)."""

import uuid

from mailtriage.core.secrets import MASK, set_secret
from tests.tui.helpers import make_app, settle
from tests.servers.fixtures import memory_keyring  # noqa: F401


async def test_error_list_and_notification_are_scrubbed_and_an_unexpected_error_keeps_its_class_for_the_trace(
        tmp_path, memory_keyring):  # noqa: F811
    secret = f"tökén-{uuid.uuid4().hex}"
    set_secret("imap:work", secret)
    app = make_app(tmp_path / "nowhere")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.clear_notifications()
        try:
            raise RuntimeError("the summary cache is locked by another mailtriage")
        except RuntimeError as exc:
            app.report_error("Listing threads failed", exc)
        app.report_error("Writing failed", RuntimeError(""))  # no message, no traceback
        await settle(pilot)
        toasts = " ".join(str(n.message) for n in app._notifications)
        listing, writing = app.errors[-2:]
        assert listing.message == "the summary cache is locked by another mailtriage"
        assert "RuntimeError" not in toasts + listing.message + writing.message
        assert writing.message.startswith("something failed that mailtriage did not expect")
        # The class name stays where a bug report needs it: the collapsed technical detail.
        assert "RuntimeError: the summary cache is locked" in listing.technical
        assert writing.technical == "RuntimeError: "

        try:
            raise RuntimeError(f"LOGIN work {secret!r} failed")  # as a library would word it
        except RuntimeError as exc:
            app.report_error("Listing threads failed", exc, details=f"while sending {secret}")
        await settle(pilot)
        record = app.errors[-1]
        shown = " ".join(str(value) for value in vars(record).values())
        assert secret not in shown and MASK in shown
        assert all(secret not in str(n.message) for n in app._notifications)
