"""Bad input and broken parts around the email side: each gets a clear error for that item,
the rest keeps working, nothing is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from mailtriage.core.projectconfig import ConfigError
from mailtriage.modes.config import load_config, parse_config
from mailtriage.modes.inbox import parse_inbound, read_fields
from tests.modes.harness import DOMAIN, build_mail
from tests.servers.smtp import SmtpServer

# -- configuration ---------------------------------------------------------------------


@pytest.mark.parametrize("data, key, words", [
    ({}, "domain", "missing"),
    ({"domain": "bad domain"}, "domain", "spaces"),
    ({"domain": "d.test", "role": "boss"}, "role", "master | slave"),
    ({"domain": "d.test", "smtp": {"host": "smtp.example.org", "security": "plain"}}, "smtp.security", "loopback"),
    ({"domain": "d.test", "smtp": {"host": "127.0.0.1", "password": "hunter2"}}, "smtp.password", "secrets"),
    ({"domain": "d.test", "types": {"ticket": {"transfers": "forward"}}}, "types.ticket.transfers", "webhook"),
    ({"domain": "d.test", "types": {"ticket": {"modes": {"callback": {"endpoint": "ftp://x"}}}}},
     "types.ticket.modes.callback.endpoint", "http"),
    ({"domain": "d.test", "types": {"ti cket": {}}}, "types.ti cket", "resource type"),
    ({"domain": "d.test", "send": {"cap": -1}}, "send.cap", ">= 0"),
    ({"domain": "d.test", "mailbox": {"host": "127.0.0.1", "ca_file": "/nonexistent.pem"}}, "mailbox.ca_file",
     "readable"),
])
def test_configuration_errors_name_the_key(tmp_path, data, key, words):
    with pytest.raises(ConfigError) as info:
        parse_config(data, tmp_path / "modes.toml")
    text = str(info.value)
    assert key in text and words in text and "modes.toml" in text


def test_configuration_defaults(tmp_path):
    config = load_config(None, overrides={"domain": "D.test", "database": str(tmp_path / "x.sqlite3"),
                                          "types.ticket.role": "slave"})
    ticket = config.resource_type("TICKET")
    assert (config.role, config.host, config.port, ticket.role, ticket.transfers, ticket.autonomous_send) == \
        ("master", "127.0.0.1", 8025, "slave", "block", False)
    assert config.status_url(9999) == "http://127.0.0.1:9999/mas-modes"


def test_broken_toml_is_a_configuration_error(tmp_path):
    path = tmp_path / "modes.toml"
    path.write_text("domain = \n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "not valid TOML" in str(info.value)


# -- hostile and broken mail -------------------------------------------------------------

def test_mail_without_message_id_with_bad_charset_and_8bit_headers_is_read():
    raw = (b"From: =?x-unknown?q?M=E4x?= <max@example.com>\r\nTo: ticket@mas.test\r\n"
           b"Subject: \xff\xfe caf\xc3\xa9\r\nContent-Type: text/plain; charset=x-no-such-charset\r\n\r\n"
           b"phone: 12\r\n")
    mail = parse_inbound(raw)
    assert mail.message_id.startswith("<synthetic-") and mail.sender == "max@example.com"
    assert "phone: 12" in mail.text and any("Message-ID" in n for n in mail.notes)
    assert mail.mas_address(DOMAIN).resource_type == "ticket"


def test_reading_fields_skips_quotes_and_keeps_the_first():
    text = "> phone: quoted\nPhone:  +1 2  \nphone: second\ntime:\nnote: x\n"
    assert read_fields(text, ("phone", "time")) == {"phone": "+1 2"}


def test_hostile_mail_is_recorded_and_the_rest_keeps_working(make_harness):
    harness = make_harness("master")
    harness.dovecot.append(harness.user, "INBOX", b"From: nobody\r\nTo: ticket!callback@mas.test\r\n"
                                                   b"Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nbroken")
    harness.dovecot.append(harness.user, "INBOX", b"To: somebody@else.test\r\nSubject: not ours\r\n\r\nhi\r\n")
    harness.deliver(sender="ok@example.com", to=f"ticket!callback@{DOMAIN}", subject="Fine")
    assert [m["participant"]["address"] for m in harness.mode.messages()] == ["ok@example.com"]
    assert harness.mode.problems() == []
    no_sender = harness.thread_of(f"ticket=gs-1@{DOMAIN}")
    assert no_sender["participant"] is None
    assert [(s["status"], s.get("reason")) for s in no_sender["handoffs"][0]["statuses"]] == \
        [("requested", None), ("refused", "declined")]
    assert no_sender["notes"][-1]["kind"] == "mail-not-queued"  # nobody to tell
    store = harness.store()
    try:
        assert [n["kind"] for n in store.notes() if n["case_key"] is None] == ["unrouted"]
        assert len(store.cases()) == 2
    finally:
        store.close()
    # A second poll sees nothing new: the cursor moved past every recorded mail.
    assert harness.poll() == 0


def test_a_mail_seen_twice_is_recorded_once(make_harness):
    harness = make_harness("slave")
    raw, _ = build_mail(sender="a@example.com", to=f"ticket@{DOMAIN}", message_id="<same@example.com>")
    harness.dovecot.append(harness.user, "INBOX", raw)
    harness.dovecot.append(harness.user, "INBOX", raw)
    assert harness.poll() == 1
    assert [m["type"] for m in harness.master.messages()] == ["case.intake"]


def test_mailbox_down_is_a_clear_error_and_nothing_is_lost(make_harness):
    harness = make_harness("slave")
    raw, _ = build_mail(sender="a@example.com", to=f"ticket@{DOMAIN}")
    harness.dovecot.append(harness.user, "INBOX", raw)
    from mailtriage.modes.inbox import MailboxError

    wrong = harness.dovecot.set_password(harness.user, "changed")
    with pytest.raises(MailboxError) as info:
        harness.thread.call(harness.thread.engine.poll_mailbox())
    assert harness.user.name in str(info.value)
    harness.dovecot.set_password(wrong, harness.user.password)
    assert harness.poll() == 1
    assert [m["type"] for m in harness.master.messages()] == ["case.intake"]


# -- SMTP gone mid-way ---------------------------------------------------------------------

def test_smtp_down_answers_503_and_a_retry_sends_with_the_same_message_id(make_harness, test_certificate):
    harness = make_harness("slave")
    harness.deliver(sender="pat@example.com", to=f"ticket@{DOMAIN}", subject="Hi")
    intake = harness.master.take_type("case.intake").body
    harness.post({"mas_modes_version": "0.1", "type": "case.assign", "id": "a", "intake_ref": intake["intake_ref"],
                  "resource_id": "S-1"})
    send = {"mas_modes_version": "0.1", "type": "mail.send", "id": "send-while-down",
            "case": {"address": f"ticket=S-1@{DOMAIN}", "key": f"ticket=S-1@{DOMAIN}"},
            "in_reply_to": intake["event"]["message_ref"], "subject": "Re: Hi", "body": "Hello again"}
    harness.smtp.stop()
    status, body = harness.post(send)
    assert (status, body["error"]) == (503, "mail-unavailable")
    assert harness.post(send)[0] == 503  # a 5xx is not remembered: the retry is tried again
    store = harness.store()
    try:
        failed = store.outbound_for_request("send-while-down")
    finally:
        store.close()
    assert failed["state"] == "failed"

    # SMTP comes back (on another port): restart the email side with it and retry the same id.
    smtp = SmtpServer(test_certificate).start()
    try:
        smtp.add_user("mas", "smtp-secret")
        harness.data["smtp"]["port"] = smtp.port
        harness.config = parse_config(harness.data, Path(harness.tmp_path) / "modes.toml")
        harness.restart()
        status, body = harness.post(send)
        assert (status, body["sent"]) == (200, True)
        assert len(smtp.log.messages) == 1
        assert str(smtp.parsed(0)["Message-ID"]) == failed["message_id"] == body["message_id"]
        assert harness.post(send) == (status, body)
        assert len(smtp.log.messages) == 1
    finally:
        smtp.stop()


# -- the mailbox cursor: a silent baseline, as the mailbox adapters' poll ------------------

def test_first_start_takes_a_silent_baseline_of_the_mail_already_there(dovecot, dovecot_user, make_harness):
    for number in range(2):
        raw, _ = build_mail(sender=f"old{number}@example.com", to=f"ticket!callback@{DOMAIN}", subject="old")
        dovecot.append(dovecot_user, "INBOX", raw)
    harness = make_harness("master")  # its first poll meets two mails from before it started
    assert harness.poll() == 0
    assert harness.mode.messages() == [] and harness.sent_mail() == []
    store = harness.store()
    try:
        assert store.cases() == [] and store.intakes() == []
    finally:
        store.close()
    harness.deliver(sender="new@example.com", to=f"ticket!callback@{DOMAIN}", subject="new")
    assert [m["participant"]["address"] for m in harness.mode.messages()] == ["new@example.com"]


def test_a_changed_uidvalidity_takes_a_new_baseline_instead_of_reading_everything(make_harness):
    harness = make_harness("slave")
    harness.deliver(sender="a@example.com", to=f"ticket@{DOMAIN}", subject="first")
    assert [m["type"] for m in harness.master.messages()] == ["case.intake"]
    for number in range(3):
        raw, _ = build_mail(sender=f"b{number}@example.com", to=f"ticket@{DOMAIN}", subject="before the reset")
        harness.dovecot.append(harness.user, "INBOX", raw)
    # The mailbox was reset (restored from backup, recreated): the stored UIDVALIDITY no longer matches.
    store = harness.store()
    try:
        with store.transaction():
            name = harness.thread.engine.inbox.name
            store.set_cursor(name, store.cursor(name)[0] + 1000, 1)
    finally:
        store.close()
    assert harness.poll() == 0
    assert [m["type"] for m in harness.master.messages()] == ["case.intake"]  # nothing re-read
    harness.deliver(sender="c@example.com", to=f"ticket@{DOMAIN}", subject="after")
    assert [m["type"] for m in harness.master.messages()] == ["case.intake", "case.intake"]
