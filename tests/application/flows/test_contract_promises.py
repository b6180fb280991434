"""What the mail-source contract promises, end to end through the CLI (issue 18).

Real parts: a real Dovecot holds the IMAP account, an mbox file the archive; the CLI
is called in-process and its one JSON document and exit code are checked.
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

from tests.application.flows.conftest import REPORT, report_thread, write_mbox
from tests.application.flows.test_e2e_imap import LIST, _drafts, imap_env  # noqa: F401  (the fixture)


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

    # A second run sees the pending draft (checked on IMAP for the mbox thread) and offers nothing:
    # the same request finds its own draft there (issue 39: already written, not a failure).
    code, doc, err = run(capsys, monkeypatch, imap_env.project, "mail", "create-draft", f"msgid:{REPORT}",
                         "--body-file", str(body), "--yes")
    assert code == 0 and doc["already_written"] is True and doc["proposal"]["writes"] == []
    # Another text is a second draft: refused while this one is pending.
    body.write_text("Another text.\n", encoding="utf-8")
    code, doc, err = run(capsys, monkeypatch, imap_env.project, "mail", "create-draft", f"msgid:{REPORT}",
                         "--body-file", str(body), "--yes")
    assert doc["written"] is False and doc["proposal"]["facts"]["blocked_by"] == "pending_draft"
    assert len(_drafts(imap_env)) == 1


def test_a_pending_draft_blocks_as_pending_draft_even_when_the_recipient_is_not_plain(imap_env, capsys, monkeypatch):
    """A draft pending on the thread is the block, whatever a later check would say: the
    recipient check ran before the own-draft check and reported ``recipient`` instead."""
    from dataclasses import replace

    from mailtriage.backends.contract import Address, Op, ThreadId
    from mailtriage.backends.registry import SourceSet
    from mailtriage.application.flows.proposals import BlockedBy
    from mailtriage.application.flows.reply import propose_reply

    body = _mbox_then_imap(imap_env)
    code, doc, err = run(capsys, monkeypatch, imap_env.project, "mail", "create-draft", f"mbox:{REPORT}",
                         "--body-file", str(body), "--yes")
    assert code == 0 and doc["written"] is True, err
    sources = SourceSet(imap_env.config())
    try:
        thread = sources.dispatch(Op.READ_THREAD, lambda b: b.read_thread(ThreadId.parse(f"msgid:{REPORT}"))).value
        odd = replace(thread.messages[0], sender=Address("Rita", "rita@reporter.example, eve@attacker.example"))
        proposal = propose_reply(sources, thread, "Another text.\n", reply_to=odd)
    finally:
        sources.close()
    assert proposal.blocked is not None and proposal.blocked.reason is BlockedBy.PENDING_DRAFT, proposal.blocked
    assert not proposal.writes and len(_drafts(imap_env)) == 1


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
    from tests.application.flows.conftest import mail

    return [mail("<only-in-mbox@reporter.example>", "Olga <olga@reporter.example>", "Only in the archive",
                 "Not on the IMAP account.\n", "Tue, 01 Sep 2026 11:00:00 +0000")]


# -- §2 the mandatory flag: checked once at the start of the run, for every command ------------

@pytest.fixture
def backup_down(mbox_env):
    """mbox primary (fine) and a mandatory fallback archive that is not mounted."""
    mbox_env.write_project([("mbox", "primary", "no"), ("backup", "fallback", "yes")],
                           extra={"mail_sources.mbox": {"path": mbox_env.archive.name, "list": LIST_MBOX},
                                  "mail_sources.backup": {"kind": "mbox", "path": "not-mounted/backup.mbox"}})
    body = mbox_env.project / "body.txt"
    body.write_text("Thanks.\n", encoding="utf-8")
    return mbox_env


LIST_MBOX = "security@frobnicator.example.org"


@pytest.mark.parametrize("args", [
    ("mail", "read-thread", f"msgid:{REPORT}"),
    ("mail", "list-recent-threads", "--since", "3650d"),
    ("mail", "thread-url", f"msgid:{REPORT}"),
    ("mail", "read-thread", f"msgid:{REPORT}", "--backend", "mbox"),
    ("mail", "create-draft", f"msgid:{REPORT}", "--body-file", "BODY", "--yes"),
])
def test_a_mandatory_fallback_down_refuses_every_mail_command(backup_down, capsys, monkeypatch, args):
    args = tuple(str(backup_down.project / "body.txt") if a == "BODY" else a for a in args)
    code, doc, err = run(capsys, monkeypatch, backup_down.project, *args)
    assert code == 4
    assert "mandatory backend backup unavailable" in err and "run aborted" in err
    assert doc["result"] is None and doc["aborted"].startswith("mandatory backend backup unavailable")
    # The recap says what was checked: the mandatory backend, not a backend "not tried".
    assert [s["backend"] for s in doc["resolution"]["chain"]] == ["backup"]
    assert doc["resolution"]["chain"][0]["outcome"].startswith("mandatory check: unavailable")
    assert "not tried" not in json.dumps(doc)


def test_a_mandatory_fallback_down_refuses_the_listing(backup_down, capsys, monkeypatch):
    code, doc, err = run(capsys, monkeypatch, backup_down.project, "list")
    assert code == 4 and "mandatory backend backup unavailable" in err and doc is None


def test_the_reply_proposal_is_refused_too(backup_down):
    """The app and the flows build the same proposal: nothing proposed, the abort recapped."""
    from mailtriage.backends.contract import Message, Address, Thread, ThreadId
    from mailtriage.backends.registry import SourceSet
    from mailtriage.application.flows.proposals import BlockedBy
    from mailtriage.application.flows.reply import propose_reply

    sources = SourceSet(backup_down.config())
    thread = Thread(ThreadId("msgid", REPORT), "s", (Message(REPORT, "s", Address("R", "r@reporter.example")),))
    proposal = propose_reply(sources, thread, "Thanks.\n")
    assert proposal.blocked.text.startswith("mandatory backend backup unavailable") and not proposal.writes
    assert not proposal.preview and proposal.blocked.reason is BlockedBy.MANDATORY


# -- §3 the recap tells the truth ----------------------------------------------------------------

def test_backend_flag_is_recapped_as_named(mbox_env, capsys, monkeypatch):
    code, doc, err = run(capsys, monkeypatch, mbox_env.project, "mail", "read-thread", f"msgid:{REPORT}",
                         "--backend", "mbox")
    assert code == 0, err
    assert doc["resolution"]["summary"] == "read_thread → mbox (named with --backend)"
    assert doc["resolution"]["named"] is True


def test_a_skipped_op_carries_its_resolution_on_stdout(mbox_env, capsys, monkeypatch):
    code, doc, err = run(capsys, monkeypatch, mbox_env.project, "mail", "list-drafts", f"msgid:{REPORT}")
    assert code == 3 and "no backend available for list_drafts" in err
    assert doc["skipped"] == "no backend available for list_drafts"
    assert doc["resolution"]["chain"] == [{"backend": "mbox", "role": "primary, mandatory",
                                           "outcome": "declines list_drafts"}]


# -- §4 the security CC, strictly ------------------------------------------------------------------

def _imap_project(env, **extra):
    env.write_project([("imap", "primary", "no")], extra={"mail_sources.imap": {"account": "work", "list": LIST},
                                                          **extra})
    body = env.project / "body.txt"
    body.write_text("Thanks, we are looking into it.\n", encoding="utf-8")
    return body


@pytest.mark.parametrize("extra", [
    {"security_list": None, "security_inbox.foundation_security_address": None},
    {"security_list": None, "security_inbox": None},  # a null parent declares the whole subtree
], ids=["null fallback", "null security_inbox"])
def test_a_blocked_proposal_contains_no_draft(imap_env, capsys, monkeypatch, extra):
    body = _imap_project(imap_env, **extra)
    code, doc, err = run(capsys, monkeypatch, imap_env.project, "mail", "create-draft", f"msgid:{REPORT}",
                         "--body-file", str(body), "--yes")
    assert code == 3
    assert "BLOCKED: no security CC can be resolved" in err
    assert doc["written"] is False and doc["proposal"]["writes"] == [] and doc["proposal"]["preview"] == []
    # No draft text anywhere: not printed, not in the JSON.
    assert "we are looking into it" not in err and "we are looking into it" not in json.dumps(doc)
    assert _drafts(imap_env) == []


@pytest.mark.parametrize("value", ["security-at-example", "a@x.org, b@y.org"])
def test_a_security_list_that_is_not_one_address_stops_with_exit_2(imap_env, capsys, monkeypatch, value):
    body = _imap_project(imap_env, security_list=value)
    code, doc, err = run(capsys, monkeypatch, imap_env.project, "mail", "create-draft", f"msgid:{REPORT}",
                         "--body-file", str(body), "--yes")
    assert code == 2 and doc is None
    assert "configuration error" in err and "security_list" in err and "is not one email address" in err
    assert _drafts(imap_env) == []


def test_no_draft_is_offered_when_the_pending_draft_check_cannot_run(imap_env, capsys, monkeypatch):
    """The backend that lists drafts is down: the proposal says so and offers no write."""
    archive = write_mbox(imap_env.project / "security.mbox", report_thread())
    imap_env.write_project([("mbox", "primary", "no"), ("gmail", "preferred for list_drafts", "no"),
                            ("imap", "preferred for create_draft", "no")],
                           extra={"mail_sources.mbox": {"path": archive.name, "list": LIST},
                                  "mail_sources.gmail": {"account": "signed-out", "list": LIST},
                                  "mail_sources.imap": {"account": "work", "list": LIST}})
    # A Gmail account that is configured but was never signed in (no token in keyring), its API
    # on a port nobody listens on: the backend is unavailable, not misconfigured.
    config = Path(os.environ["MAILTRIAGE_CONFIG_DIR"]) / "config.toml"
    config.write_text(config.read_text(encoding="utf-8") + """
[accounts.signed-out]
kind = "gmail"
client_id = "1234-test.apps.googleusercontent.com"
address = "sam@frobnicator.example.org"
api_base = "http://127.0.0.1:9"
timeout = 2
""", encoding="utf-8")
    body = imap_env.project / "body.txt"
    body.write_text("Thanks.\n", encoding="utf-8")
    code, doc, err = run(capsys, monkeypatch, imap_env.project, "mail", "create-draft", f"msgid:{REPORT}",
                         "--body-file", str(body), "--yes")
    assert doc is not None, (code, err)
    assert doc["written"] is False and doc["proposal"]["writes"] == []
    assert doc["proposal"]["facts"]["blocked_by"] == "pending_check"
    assert "could not check pending drafts" in err and "no draft is offered" in err
    assert _drafts(imap_env) == []
