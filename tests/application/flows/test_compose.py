"""Replies on project sources (issue 14 §2, §5): how r chooses, quoted replies, reply-all and
forwards with the security CC, the editor file and its checks, attachments read at confirm
time, and the name and signature from settings (never the login name)."""

from __future__ import annotations

import getpass
import shutil
from datetime import datetime, timezone

import pytest

from mailtriage.backends.contract import Op
from mailtriage.core.settings import UserSettings
from mailtriage.application.flows.compose import (FORWARD, RECEIPT, REPLY, REPLY_ALL, DraftAttachmentError, ComposeForm,
                                          default_reply_kind, editor_text, read_attachments, read_editor_text)
from mailtriage.application.flows.proposals import BlockedBy
from mailtriage.application.flows.reply import propose_reply, reply_form
from mailtriage.application.flows.templates import identity, receipt_body
from mailtriage.core.projectconfig import load_project
from mailtriage.demo import demo_project_dir
from tests.application.flows.test_reply import demo_thread

LIST = "security@frobnicator.apache.org"


def test_r_gives_the_receipt_on_a_fresh_report_and_a_quoted_reply_on_a_follow_up():
    _, follow_up = demo_thread("Open redirect")  # receipt sent, then "any update?"
    assert default_reply_kind(follow_up) == REPLY
    _, untouched = demo_thread("Web cache poisoning")
    assert default_reply_kind(untouched) == REPLY  # the team asked for details already
    lone = next(t for t in _threads() if len({m.sender.email for m in t.messages}) == 1)
    assert default_reply_kind(lone) == RECEIPT


def _threads():
    sources, _ = demo_thread("Open redirect")
    since = datetime(2026, 9, 1, tzinfo=timezone.utc)
    summaries = sources.dispatch(Op.LIST_RECENT_THREADS, lambda b: b.list_recent_threads(None, since)).value
    return [sources.dispatch(Op.READ_THREAD, lambda b: b.read_thread(s.thread_id)).value for s in summaries]


def test_a_quoted_reply_answers_the_reporter_with_the_security_cc_and_the_signature():
    sources, thread = demo_thread("Open redirect")
    me = identity(sources.config, UserSettings(None, {"name": "Priya Raman", "signature": "Priya\nFrobnicator security"}))
    form = reply_form(sources.config, thread, REPLY, me)
    reporter = thread.messages[0].sender.email
    assert form.to == (reporter,) and form.cc == (LIST,) and form.subject.startswith("Re: ")
    assert "wrote:\n> " in form.body and form.body.endswith("-- \nPriya\nFrobnicator security\n")
    everyone = reply_form(sources.config, thread, REPLY_ALL, me)
    assert LIST in everyone.cc and everyone.to == (reporter,)
    forward = reply_form(sources.config, thread, FORWARD, me)
    assert forward.to == () and forward.cc == (LIST,) and forward.subject.startswith("Fwd: ")
    assert "---------- Forwarded message ----------" in forward.body


def test_the_editor_file_round_trips_and_ends_with_a_newline():
    form = ComposeForm(REPLY, ("a@example.net",), (LIST,), "Re: x", "text without newline")
    text = editor_text(form)
    assert text.startswith("To: a@example.net\nCc: security@frobnicator.apache.org\nSubject: Re: x\nAttach: \n\n")
    assert text.endswith("\n")
    back = read_editor_text(text, form)
    assert (back.to, back.cc, back.subject, back.attach, back.problems) == (form.to, form.cc, "Re: x", (), ())
    assert back.body == "text without newline\n"


@pytest.mark.parametrize("head,problem", [
    ("To: a@example.net\n Bcc: evil@example.org", "folded"),
    ("To: a@example.net\nBcc: evil@example.org", "'Bcc' is not one of"),
    ("To: a@example.net, not an address", "not one plain address"),
    ("To: =?utf-8?q?a=40x=2C_b=40y?= <a@example.net>", ""),  # the name is dropped, the address kept
    ("To: a@example.net\nSubject: hi\x1b]0;x\x07", "control character"),
    ("To: a@example.net\nTo: b@example.net", "given twice"),
])
def test_the_editor_headers_are_checked_on_return(head, problem):
    form = ComposeForm(REPLY, (), (LIST,), "s", "")
    back = read_editor_text(head + "\n\nbody\n", form)
    if problem:
        assert any(problem in p for p in back.problems), back.problems
    else:
        assert back.problems == () and back.to == ("a@example.net",)


def test_a_removed_security_cc_or_a_bad_recipient_blocks_the_proposal():
    sources, thread = demo_thread("Open redirect")
    form = reply_form(sources.config, thread, REPLY)
    edited = read_editor_text(editor_text(form).replace(f"Cc: {LIST}", "Cc: "), form)
    proposal = propose_reply(sources, thread, edited.body, form=edited)
    assert proposal.blocked and "security CC" in proposal.blocked.text and proposal.blocked.reason is BlockedBy.COMPOSE
    assert not proposal.writes and not proposal.preview
    injected = read_editor_text(editor_text(form).replace("Subject: ", "Subject: x\nBcc: leak@attacker.invalid\n"
                                                          "X-Foo: "), form)
    assert propose_reply(sources, thread, injected.body, form=injected).blocked


def test_attachments_are_read_at_confirm_time_within_the_limits(tmp_path):
    small = tmp_path / "poc.py"
    small.write_bytes(b"x" * 10)
    [read] = read_attachments([str(small)])
    assert (read.filename, read.content_type, read.data) == ("poc.py", "text/x-python", b"x" * 10)
    with pytest.raises(DraftAttachmentError, match="limit"):
        read_attachments([str(small)], limit=5)
    with pytest.raises(DraftAttachmentError, match="together"):
        read_attachments([str(small), str(small)], total_limit=15)
    with pytest.raises(DraftAttachmentError, match="cannot be read"):
        read_attachments([str(tmp_path / "missing")])
    with pytest.raises(DraftAttachmentError, match="not a file"):
        read_attachments([str(tmp_path)])


def test_the_signature_and_name_come_from_settings_never_the_login_name(tmp_path, monkeypatch):
    monkeypatch.setattr(getpass, "getuser", lambda: "loginname")
    monkeypatch.setenv("USER", "loginname")
    monkeypatch.setenv("LOGNAME", "loginname")
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(tmp_path / "config"))  # no settings file at all
    sources, thread = demo_thread("Open redirect")
    body = receipt_body(sources.config, thread).text
    assert "loginname" not in body and body.rstrip().endswith(f"The {sources.config.title} security team")
    assert identity(sources.config).name is None
    project = tmp_path / "p"
    shutil.copytree(demo_project_dir(), project)
    with open(project / "project.md", "a", encoding="utf-8") as handle:
        handle.write("\n")
    text = (project / "project.md").read_text(encoding="utf-8")
    (project / "project.md").write_text(text.replace("organization: asf\n",
                                                     "organization: asf\nsignature: \"The Frobnicator PMC\"\n"))
    config = load_project(project)
    assert identity(config, UserSettings(None, {"signature": "mine"})).signature == "The Frobnicator PMC"
    assert identity(None, UserSettings(None, {"signature": "mine", "name": "Dana"})) .signature == "mine"


def test_a_quoted_reply_or_forward_carries_no_hidden_characters_back_out():
    sources, thread = demo_thread("\x1b[31m\x1b[1mURGENT")
    hostile = thread.messages[0]
    assert "\x1b" in hostile.subject + hostile.body_text + hostile.sender.name  # the demo's hostile thread
    for kind in (REPLY, REPLY_ALL, FORWARD):
        form = reply_form(sources.config, thread, kind)
        text = form.subject + form.body + "".join(form.to + form.cc)
        assert not [ch for ch in text if ch in "\x1b\u202e\u200b\x07" or (ord(ch) < 32 and ch != "\n")], kind
        assert "leak@attacker.invalid" not in form.cc  # a request in the text is data, not a recipient
