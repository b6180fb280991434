"""The one rule for outgoing mail (issue 30), UI-free: whether answering a message means
answering a thread of the security list is decided from the message (recipients, list
headers, References / In-Reply-To) and the project's own sources (a real mbox archive),
never from where it was found. A personal compose the rule refuses writes nothing (real
Dovecot + aiosmtpd)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mailtriage.application.project import Project
from mailtriage.application.flows.compose import ComposeFlow
from mailtriage.application.flows.security_thread import OutgoingRule
from mailtriage.backends.contract import Address, Message
from mailtriage.core.settings import UserSettings
from mailtriage.application.flows.proposals import BlockedBy
from mailtriage.application.flows.security_thread import ThreadCheckFailed, judge, project_addresses, thread_ids
from tests.imap.conftest import make_mail, seed  # noqa: F401 - the fixture that fills a folder
from tests.imap.test_send import PASS, inbox_id, sender, smtp  # noqa: F401 - the fixtures of the send tests
from tests.tui.helpers import mbox_project

LIST = "security@frob.example"
ME = Address("Tess", "tess@example.org")
ANA = Address("Ana Reporter", "ana@example.com")


@pytest.fixture
def project(tmp_path):
    folder = mbox_project(tmp_path / "p", extra_config={
        "security_inbox": {"foundation_security_address": "security@apache.example"}})
    opened = Project.open(folder)
    try:
        yield opened
    finally:
        opened.close()


def mail(message_id: str, *, to=(ME,), cc=(), references=(), in_reply_to=None, headers=()) -> Message:
    return Message(message_id, "Re: Heap overflow", ANA, to=tuple(to), cc=tuple(cc), references=tuple(references),
                   in_reply_to=in_reply_to, headers=tuple(headers))


def test_every_configured_project_address_counts(project):
    assert project_addresses(project.config) == {LIST, "security@apache.example"}


@pytest.mark.parametrize("message", [
    mail("<r1@example.com>", to=(Address("", "Security@Frob.Example"),)),  # addresses are not case-sensitive
    mail("<r1@example.com>", cc=(Address("", LIST),)),
    mail("<r1@example.com>", headers=(("List-Id", "Frob security <security.frob.example>"),)),
    mail("<r1@example.com>", headers=(("Delivered-To", LIST),)),
], ids=["to", "cc", "list-id", "delivered-to"])
def test_mail_to_the_list_that_the_project_holds_is_the_project_draft(project, message):
    # Its References lead to the project's thread of the heap overflow report.
    verdict = OutgoingRule(project).judge(replace(message, references=("<overflow-1@example.com>",)))
    assert verdict.security and verdict.refused is None and not verdict.personal
    assert verdict.thread.thread_id.root == "<overflow-1@example.com>"
    assert f"sent to the project's list {LIST}" in verdict.why


def test_a_private_follow_up_of_a_list_thread_is_the_project_draft(project):
    """Not sent to the list, but it answers a message of a security-list thread."""
    verdict = OutgoingRule(project).judge(mail("<private@example.com>", in_reply_to="<overflow-2@frob.example>"))
    assert verdict.security and verdict.thread.thread_id.root == "<overflow-1@example.com>"
    assert "answers the thread <overflow-1@example.com> of the security list" in verdict.why


def test_the_accounts_own_mail_is_personal_and_asks_no_source(project):
    def never(_mid):
        raise AssertionError("a message that answers nothing needs no lookup")

    verdict = judge(mail("<lunch@example.org>"), project_addresses(project.config), never)
    assert verdict.personal and verdict.thread is None
    unknown = OutgoingRule(project).judge(mail("<re-lunch@example.org>", references=("<lunch@example.org>",)))
    assert unknown.personal


def test_list_mail_the_project_does_not_hold_is_refused_with_why(project):
    verdict = OutgoingRule(project).judge(mail("<stray@example.com>", to=(Address("", LIST),)))
    assert verdict.security and verdict.thread is None
    assert verdict.refused.startswith(f"it was sent to the project's list {LIST}, so it is answered only as a "
                                      "project draft with the security CC")
    assert "hold no thread of <stray@example.com>" in verdict.refused


def test_when_the_sources_cannot_be_asked_the_reply_is_refused(project):
    def down(_mid):
        raise ThreadCheckFailed("backend mbox is unavailable: archive not mounted")

    verdict = judge(mail("<x@example.com>", in_reply_to="<overflow-1@example.com>"),
                    project_addresses(project.config), down)
    assert not verdict.personal and not verdict.security
    assert "could not check whether this message answers a thread of the security list" in verdict.refused
    assert "archive not mounted" in verdict.refused


def test_a_thread_held_by_the_sources_but_never_on_the_list_stays_personal(tmp_path):
    """A source folder may also hold the account's own mail: holding a thread is not enough."""
    from tests.tui.helpers import mail as mbox_mail

    folder = mbox_project(tmp_path / "p", messages=[
        mbox_mail("Lunch", "Carol <carol@example.net>", "Thu, 01 Oct 2026 09:00:00 +0000", "<lunch-1@example.net>",
                  "Friday?\n", to="tess@example.org")])
    opened = Project.open(folder)
    try:
        verdict = OutgoingRule(opened).judge(mail("<lunch-2@example.net>", in_reply_to="<lunch-1@example.net>"))
    finally:
        opened.close()
    assert verdict.personal


def test_a_long_references_chain_costs_a_few_lookups_root_first():
    chain = tuple(f"<m{n}@example.org>" for n in range(1000))
    message = mail("<own@example.org>", references=chain, in_reply_to="<m999@example.org>")
    assert thread_ids(message) == ["<m0@example.org>", "<m999@example.org>", "<m998@example.org>",
                                   "<m997@example.org>", "<own@example.org>"]


# -- the personal flow refuses what the rule gives the project (real Dovecot + aiosmtpd) ---------

def test_a_personal_compose_on_security_list_mail_is_refused_and_nothing_leaves(project, sender, smtp, seed,
                                                                                 monkeypatch, tmp_path):  # noqa: F811
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(tmp_path / "data"))
    seed("INBOX", make_mail(1, subject="Heap overflow", message_id="<overflow-1@example.com>", extra=PASS,
                            to=LIST))
    source_id = inbox_id(sender, "<overflow-1@example.com>")
    flow = ComposeFlow(sender, UserSettings(None, {"name": "Tess"}), rule=OutgoingRule(project))
    for kind in ("reply", "reply_all", "forward"):
        form = replace(flow.form(kind, sender.get(source_id).content), to=("someone@example.net",))
        proposal = flow.propose(form, source_id=source_id)
        assert proposal.blocked and proposal.blocked.reason is BlockedBy.SECURITY_THREAD, kind
        assert "answered only as the project's draft with the security CC" in proposal.blocked.text
        assert not proposal.writes
        with pytest.raises(PermissionError, match="proposal blocked"):
            proposal.apply(confirmed=True)
    new = flow.propose(replace(flow.form("new"), to=("dev@example.net",), subject="hi"))
    assert not new.blocked  # new mail answers no thread
    assert smtp.log.messages == []
