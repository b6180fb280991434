"""What the mail-source contract promises, end to end through the CLI (issue 18).

Real parts: a real Dovecot holds the IMAP account, an mbox file the archive; the CLI
is called in-process and its one JSON document and exit code are checked.
"""

from __future__ import annotations

import io
import json
import sys

import pytest

from tests.servers.fixtures import *  # noqa: F401,F403
from tests.workflows.conftest import REPORT, report_thread, write_mbox
from tests.workflows.test_e2e_imap import LIST, _drafts, imap_env  # noqa: F401  (the fixture)


def run(capsys, monkeypatch, project, *args, stdin: str = ""):
    from mailtriage.cli.main import main

    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(["--project", str(project), *args])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def _mbox_then_imap(env, mbox_mandatory="no", imap_mandatory="no"):
    archive = write_mbox(env.project / "security.mbox", report_thread())
    env.write_project([("mbox", "primary", mbox_mandatory), ("imap", "fallback", imap_mandatory)],
                      extra={"mail_sources.mbox": {"path": archive.name, "list": LIST},
                             "mail_sources.imap": {"account": "work", "list": LIST}})
    body = env.project / "body.txt"
    body.write_text("Thanks, we are looking into it.\n", encoding="utf-8")
    return body


def test_mbox_primary_imap_fallback_drafts_an_mbox_thread_through_imap(imap_env, capsys, monkeypatch):
    """The issue's table: read through mbox, draft through IMAP, duplicate protection kept."""
    body = _mbox_then_imap(imap_env)
    code, doc, err = run(capsys, monkeypatch, imap_env.project, "mail", "create-draft", f"mbox:{REPORT}",
                         "--body-file", str(body), "--yes")
    assert code == 0, err
    assert doc["written"] is True
    assert "could not check" not in err
    assert [w["backend"] for w in doc["proposal"]["writes"]] == ["imap"]
    (draft,) = _drafts(imap_env)
    assert f"In-Reply-To: {REPORT}".encode() in draft and LIST.encode() in draft

    # A second run sees the pending draft (checked on IMAP for the mbox thread) and offers nothing.
    code, doc, err = run(capsys, monkeypatch, imap_env.project, "mail", "create-draft", f"msgid:{REPORT}",
                         "--body-file", str(body), "--yes")
    assert doc["written"] is False and doc["proposal"]["facts"]["blocked_by"] == "pending_draft"
    assert len(_drafts(imap_env)) == 1


def test_no_draft_is_offered_for_a_thread_the_drafting_backend_does_not_hold(imap_env, capsys, monkeypatch):
    body = _mbox_then_imap(imap_env)
    extra = write_mbox(imap_env.project / "security.mbox",
                       report_thread() + [m for m in _other_report()])
    assert extra.exists()
    code, doc, err = run(capsys, monkeypatch, imap_env.project, "mail", "create-draft",
                         "msgid:<only-in-mbox@reporter.example>", "--body-file", str(body), "--yes")
    assert doc["written"] is False
    assert doc["proposal"]["writes"] == []
    assert doc["proposal"]["facts"]["blocked_by"] == "thread"
    assert "imap cannot draft on this thread" in err
    assert _drafts(imap_env) == []


def _other_report():
    from tests.workflows.conftest import mail

    return [mail("<only-in-mbox@reporter.example>", "Olga <olga@reporter.example>", "Only in the archive",
                 "Not on the IMAP account.\n", "Tue, 01 Sep 2026 11:00:00 +0000")]
