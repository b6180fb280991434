"""The outgoing rule fails closed (issue 30, review): a thread lookup that failed is not a
"no such thread". The project's archive is the HyperKitty emulator; its fault switch makes
a view answer HyperKitty's 500 page. A reply to a personal message that references a
security-list message is then refused, saying the check could not run; a thread the
archive truly does not hold (404) leaves the reply personal, as before (real Dovecot +
aiosmtpd for the personal account)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import pytest

from mailtriage.application.project import Project
from mailtriage.application.flows.compose import ComposeFlow
from mailtriage.application.flows.security_thread import OutgoingRule
from mailtriage.backends.contract import MESSAGE_ID_KIND, Address, Message, ThreadId
from mailtriage.core.settings import UserSettings
from mailtriage.application.flows.proposals import BlockedBy
from tests.archives.conftest import LIST, build_hyperkitty
from tests.archives.fakehttp import FakeHttpServer
from tests.core.helpers import write_project
from tests.imap.conftest import make_mail, seed  # noqa: F401 - the fixture that fills a folder
from tests.imap.test_send import PASS, inbox_id, sender, smtp  # noqa: F401 - the fixtures of the send tests

LIST_ROOT = "<xss-root@reporter.example>"  # a thread of the emulated security list
NOWHERE = "<never-archived@reporter.example>"
COULD_NOT_CHECK = "could not check whether this message answers a thread of the security list"


@pytest.fixture
def archive():
    return build_hyperkitty(datetime.now(timezone.utc))


@pytest.fixture
def project(archive, tmp_path):
    with FakeHttpServer(archive) as server:
        folder = write_project(tmp_path / "p", [("archive", "primary", "no")], {
            "organization": "asf", "security_list": LIST,
            "mail_sources": {"archive": {"kind": "mailman3", "base_url": server.base_url, "list": LIST}}})
        opened = Project.open(folder)
        try:
            yield opened
        finally:
            opened.close()


def personal(in_reply_to: str) -> Message:
    """Mail to the triager's own address that answers ``in_reply_to``."""
    return Message("<private-1@reporter.example>", "Re: [SECURITY] XSS in login form",
                   Address("Alice Reporter", "alice@reporter.example"), to=(Address("Tess", "tess@example.org"),),
                   references=(in_reply_to,), in_reply_to=in_reply_to)


# "/email/": the lookup of the message's thread; "/emails/": the read of that thread.
@pytest.mark.parametrize("failing", ["/email/", "/emails/"], ids=["message-lookup", "thread-read"])
def test_a_lookup_that_failed_refuses_the_reply(project, archive, failing):
    assert project.read_thread(ThreadId(MESSAGE_ID_KIND, LIST_ROOT)).value.messages  # the archive holds it
    archive.server_error_paths.append(failing)
    verdict = OutgoingRule(project).judge(personal(LIST_ROOT))
    assert not verdict.personal and not verdict.security
    assert verdict.refused.startswith(COULD_NOT_CHECK)
    assert "HTTP 500" in verdict.refused


def test_a_thread_the_archive_does_not_hold_stays_personal(project, archive):
    verdict = OutgoingRule(project).judge(personal(NOWHERE))
    assert verdict.personal and verdict.refused is None


def test_the_personal_reply_is_refused_when_the_check_fails_and_sent_when_not_found(
        project, archive, sender, smtp, seed, monkeypatch, tmp_path):  # noqa: F811
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(tmp_path / "data"))
    me = sender.account.from_address
    seed("INBOX", make_mail(1, subject="Re: [SECURITY] XSS in login form", message_id="<p1@example.net>",
                            to=me, references=LIST_ROOT, in_reply_to=LIST_ROOT, extra=PASS))
    seed("INBOX", make_mail(2, subject="Re: lunch", message_id="<p2@example.net>", to=me,
                            references=NOWHERE, in_reply_to=NOWHERE, extra=PASS))
    archive.server_error_paths.append("/email/")
    flow = ComposeFlow(sender, UserSettings(None, {"name": "Tess"}), rule=OutgoingRule(project))

    held = inbox_id(sender, "<p1@example.net>")
    refused = flow.propose(replace(flow.form("reply", sender.get(held).content), body="ok\n"), source_id=held)
    assert refused.blocked and refused.blocked.reason is BlockedBy.SECURITY_THREAD
    assert refused.blocked.text.startswith(COULD_NOT_CHECK) and not refused.writes
    with pytest.raises(PermissionError, match="proposal blocked"):
        refused.apply(confirmed=True)
    assert smtp.log.messages == []

    archive.server_error_paths.clear()  # the archive answers again: 404 for the unknown message
    absent = inbox_id(sender, "<p2@example.net>")
    proposal = flow.propose(replace(flow.form("reply", sender.get(absent).content), body="Friday.\n"),
                            source_id=absent)
    assert not proposal.blocked
    proposal.apply(confirmed=True)
    assert [m.rcpt_tos for m in smtp.log.messages] == [["reporter@example.net"]]
    assert smtp.log.messages[0].message["Cc"] is None


def test_a_reply_to_a_thread_the_list_archive_holds_is_security_list_mail(project):
    """A list archive (HyperKitty, Pony Mail) holds only the list's own mail, and its messages
    carry no To or Cc: holding the thread is what makes it the list's. A personal message that
    answers it is security-list mail (answered only as the project's draft with the CC)."""
    verdict = OutgoingRule(project).judge(personal(LIST_ROOT))
    assert verdict.security and not verdict.personal
    assert verdict.thread is not None and verdict.thread.thread_id.root == LIST_ROOT
