"""List-reply (``L``, issue 35 §4): the List-Post address (RFC 2369), the personal form
addressed to the list only, a refusal for mail that did not come through a list."""

from __future__ import annotations

import pytest

from mailtriage.backends.contract import Address, Message
from mailtriage.application.errors import NoListToReplyTo, UsageError
from mailtriage.application.flows.compose import REPLY, REPLY_LIST, list_address, personal_form


def message(list_post: str | None) -> Message:
    headers = (("List-Post", list_post),) if list_post is not None else ()
    return Message("<m1@example.net>", "Release timeline", Address("Carol", "carol@example.net"),
                   to=(Address("", "dev@lists.frob.example"),), cc=(Address("", "me@example.org"),), headers=headers)


@pytest.mark.parametrize(("value", "expected"), [
    ("<mailto:dev@lists.frob.example>", "dev@lists.frob.example"),
    ("<https://lists.frob.example/post>, <mailto:dev@lists.frob.example?subject=x>", "dev@lists.frob.example"),
    ("NO (posting not allowed)", None),
    ("<mailto:not an address>", None),
    (None, None),
])
def test_list_address_is_the_first_plain_mailto_of_list_post(value, expected):
    assert list_address(message(value)) == expected


def test_a_personal_list_reply_goes_to_the_list_only():
    form = personal_form(REPLY_LIST, message("<mailto:dev@lists.frob.example>"), "me@example.org")
    assert (form.kind, form.to, form.cc, form.subject) == (REPLY, ("dev@lists.frob.example",), (),
                                                          "Re: Release timeline")


def test_a_list_reply_to_mail_that_came_through_no_list_is_refused_with_why():
    # A refusal of what the user asked (a usage error: the CLI's 2, the app's warning), not a failure.
    with pytest.raises(NoListToReplyTo, match="no List-Post address") as info:
        personal_form(REPLY_LIST, message(None), "me@example.org")
    assert isinstance(info.value, UsageError)


def test_a_project_list_reply_goes_to_the_security_list_whatever_list_post_says(tmp_path):
    # Review finding: the project draft's To came from the reporter's own List-Post header, so
    # a report naming a public list there drafted the quoted reply to that public list.
    from mailtriage.backends.contract import Thread, ThreadId
    from mailtriage.core.projectconfig import load_project
    from mailtriage.application.flows.reply import reply_form
    from tests.core.helpers import write_project

    config = load_project(write_project(tmp_path / "p", [("mbox", "primary", "no")],
                                        {"security_list": "security@example.org",
                                         "security_inbox": {"foundation_security_address": "security@example.org"}}))
    report = message("<mailto:full-disclosure@lists.example.net>")
    form = reply_form(config, Thread(ThreadId("msgid", report.message_id), report.subject, (report,)), REPLY_LIST)
    assert form.to == ("security@example.org",)
