"""Issue 30 §6, UI-free: a tracker that will refuse the writes says so in the import
proposal (nothing to confirm), and the command line keeps the refused exit code (4)."""

from __future__ import annotations

from mailtriage.application.project import Project
from mailtriage.application.flows.importer import ImportFlow
from mailtriage.backends.contract import ThreadId
from mailtriage.application.flows.proposals import BlockedBy
from tests.application.flows.conftest import REPORT
from tests.application.flows.test_cli import run
from tests.application.flows.test_import import _set_restricted


def test_an_unrestricted_tracker_blocks_the_import_proposal(mbox_env):
    _set_restricted(mbox_env, False)
    project = Project.open(mbox_env.project)
    try:
        proposal = ImportFlow(project).propose(ThreadId("msgid", REPORT))
    finally:
        project.close()
    assert proposal.blocked.reason is BlockedBy.TRACKER_RESTRICTION
    assert proposal.blocked.text.startswith("the tracker refuses these writes: writes to ")
    assert "does not record access_restricted: true" in proposal.blocked.text
    assert mbox_env.tracker().list(state="all").items == []


def test_the_cli_import_is_refused_before_any_prompt(capsys, monkeypatch, mbox_env):
    _set_restricted(mbox_env, False)
    code, doc, err = run(capsys, monkeypatch, mbox_env, "import", f"mbox:{REPORT}", stdin="y\ny\n")
    assert code == 4 and doc["written"] is False
    assert "nothing written: the tracker refuses these writes" in err
    assert mbox_env.tracker().list(state="all").items == []
