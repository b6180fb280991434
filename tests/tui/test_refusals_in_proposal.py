"""Issue 30 §6 in the app: a refusal known before the confirmation is in the proposal (the
confirm disabled), and after any refusal the compose dialog comes back with what the user
wrote (real Dovecot + aiosmtpd)."""

from __future__ import annotations

from textual.widgets import TextArea

from mailtriage.backends.send_ledger import SendLedger
from mailtriage.tui.dialogs.compose import ComposeDialog
from mailtriage.tui.dialogs.proposal import ProposalDialog
from tests.tui.helpers import make_app, screen_text, settle
from tests.tui.test_compose import field, open_inbox, sending_project, smtp  # noqa: F401 (fixtures)

WRITTEN = "Thursday, after the release.\n"


async def write_reply(app, pilot) -> ComposeDialog:
    """r on Carol's mail to the account (the newest), the user's own text typed in."""
    await open_inbox(app, pilot)
    await pilot.press("r")
    await settle(pilot)
    dialog = app.screen
    assert isinstance(dialog, ComposeDialog) and field(dialog, "to") == "carol@example.net"
    dialog.query_one("#compose-body", TextArea).load_text(WRITTEN)
    return dialog


async def test_a_send_policy_refusal_is_in_the_proposal_and_the_text_comes_back(sending_project, user_config,
                                                                                smtp):
    settings = user_config / "config.toml"
    settings.write_text("\n".join(line for line in settings.read_text().splitlines()
                                  if not line.startswith("authserv_id")) + "\n")
    app = make_app(sending_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await write_reply(app, pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        shown = screen_text(app)
        assert "Nothing can be written" in shown and "send policy (Principle 10) refuses this send" in shown
        assert "trusted Authentication-Results issuer (authserv-id) is configured; set authserv_id in" in shown
        assert not app.screen.can_confirm
        await pilot.press("ctrl+s")  # disabled: nothing happens
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        await pilot.press("escape")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ComposeDialog)  # back, with what was written
        assert dialog.query_one("#compose-body", TextArea).text == WRITTEN
        assert field(dialog, "to") == "carol@example.net"
        assert "what you wrote is kept" in screen_text(app)
    assert smtp.log.messages == []


async def test_a_send_refused_at_confirm_time_brings_the_text_back(sending_project, dovecot_user, smtp):
    app = make_app(sending_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await write_reply(app, pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog) and app.screen.can_confirm
        app.screen.query_one(TextArea).load_text(WRITTEN + "Edited in the review.\n")
        ledger = SendLedger()
        for _ in range(20):  # the cap is reached meanwhile (another run sent)
            ledger.record("work")
        await pilot.press("ctrl+s")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ComposeDialog)
        assert dialog.query_one("#compose-body", TextArea).text == WRITTEN + "Edited in the review.\n"
        assert "send cap reached" in screen_text(app)
    assert smtp.log.messages == []


# -- a tracker that refuses writes: said in the import proposal; R reads the fixed descriptor ----

def unrestricted_tracker_project(folder):
    from tests.tui.test_tracker_flows import git, project_with_tracker

    project = project_with_tracker(folder)
    descriptor = project / "repo" / "security-tracker" / "tracker-format.yaml"
    descriptor.write_text(descriptor.read_text().replace("access_restricted: true", "access_restricted: false"))
    git(project, "commit", "-q", "-am", "not restricted")
    return project, descriptor


async def test_a_tracker_that_refuses_writes_says_so_in_the_import_proposal_and_r_rereads_it(tmp_path):
    from tests.tui.test_tracker_flows import git

    project, descriptor = unrestricted_tracker_project(tmp_path / "p")
    app = make_app(project)
    async with app.run_test(size=(140, 50)) as pilot:
        await settle(pilot)
        await pilot.press("G", "i")  # the heap overflow report
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        shown = screen_text(app)
        assert "Nothing can be written: the tracker refuses these writes" in shown
        assert "does not record access_restricted: true" in shown
        assert not app.screen.can_confirm
        await pilot.press("escape")
        await settle(pilot)
        # The operator confirms who can read the repository and records it (committed).
        descriptor.write_text(descriptor.read_text().replace("access_restricted: false", "access_restricted: true"))
        git(project, "commit", "-q", "-am", "restricted")
        await pilot.press("R")
        await settle(pilot)
        await pilot.press("G", "i")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog) and app.screen.can_confirm
        await pilot.press("ctrl+s")
        await settle(pilot)
    assert (project / "repo" / "security-tracker" / "SEC-0001.md").exists()
