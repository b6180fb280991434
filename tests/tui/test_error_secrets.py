"""The TUI's error list and notifications never show a secret the session holds (issue 20 §3)."""

import uuid

from mailtriage.core.secrets import MASK, set_secret
from tests.tui.helpers import make_app, settle
from tests.servers.fixtures import memory_keyring  # noqa: F401


async def test_error_list_and_notification_are_scrubbed(tmp_path, memory_keyring):  # noqa: F811
    secret = f"tökén-{uuid.uuid4().hex}"
    set_secret("imap:work", secret)
    app = make_app(tmp_path / "nowhere")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        try:
            raise RuntimeError(f"LOGIN work {secret!r} failed")  # as a library would word it
        except RuntimeError as exc:
            app.report_error("Listing threads failed", exc, details=f"while sending {secret}")
        await settle(pilot)
        record = app.errors[-1]
        shown = " ".join(str(value) for value in vars(record).values())
        assert secret not in shown and MASK in shown
        assert all(secret not in str(n.message) for n in app._notifications)
