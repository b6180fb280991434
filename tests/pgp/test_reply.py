"""Replies to encrypted reports are encrypted in kind (real Dovecot drafts, real GnuPG)."""

from __future__ import annotations

import io
import json
import sys

import pytest

from mailtriage.backends import mime, pgp
from mailtriage.backends.contract import Thread, ThreadId
from mailtriage.backends.imap.account import password_key
from mailtriage.cli.main import main
from mailtriage.core.projectconfig import load_project
from mailtriage.core.secrets import set_secret
from mailtriage.application.flows.pgp_reply import ProjectPgp, plan_reply_encryption
from tests.core.helpers import write_project
from tests.imap.conftest import make_mail, write_imap_project, write_work_account

from .conftest import STRANGER, entity, gpg, pgp_mime_encrypted

LIST = "security@example.org"
SECRET = "The heap overflow is in frob_parse()."
BODY = "Thanks, confirmed: we reproduce the overflow and are working on a fix.\n"


@pytest.fixture
def reply_project(tmp_path, monkeypatch, dovecot, dovecot_user, memory_keyring, homes):
    config_dir = write_work_account(tmp_path / "config", dovecot, dovecot_user)
    with (config_dir / "config.toml").open("a", encoding="utf-8") as out:
        out.write(f'\n[pgp]\ngnupg_home = "{homes.user}"\n')
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(config_dir))
    set_secret(password_key("work"), dovecot_user.password)
    project = write_imap_project(tmp_path / "project", LIST,
                                 extra_sources=f"pgp:\n  team_key: {homes.fprs['team']}\n")
    return project, dovecot, dovecot_user


def drafts(dovecot, user) -> list[bytes]:
    client = dovecot.client(user)
    try:
        client.select_folder("Drafts", readonly=True)
        uids = client.search(["ALL"])
        return [data[b"RFC822"] for data in client.fetch(uids, ["RFC822"]).values()]
    finally:
        client.logout()


def create_draft(project, monkeypatch, capsys, *extra: str):
    monkeypatch.setattr(sys, "stdin", io.StringIO(BODY))
    code = main(["--project", str(project), "mail", "create-draft", "msgid:<r1@example.net>",
                 "--body-file", "-", "--yes", *extra])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_reply_to_an_encrypted_report_is_encrypted_to_the_reporter_and_the_team(reply_project, homes, monkeypatch,
                                                                               capsys):
    project, dovecot, user = reply_project
    dovecot.append(user, "INBOX", pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team", sign="reporter")))
    code, doc, err = create_draft(project, monkeypatch, capsys)
    assert code == 0, err
    assert doc["written"] is True
    assert doc["proposal"]["facts"]["encryption"] == "encrypted"
    assert "Encryption: inline OpenPGP to rita@example.net" in err
    [draft] = drafts(dovecot, user)
    assert b"-----BEGIN PGP MESSAGE-----" in draft
    assert b"we reproduce the overflow" not in draft and SECRET.encode() not in draft
    armored = draft[draft.index(b"-----BEGIN PGP MESSAGE-----"):]
    # The team can read its Drafts; so can the reporter (their key is a recipient).
    assert b"we reproduce the overflow" in gpg(homes.user, "--decrypt", data=armored).stdout
    assert b"we reproduce the overflow" in gpg(homes.world, "--decrypt", data=armored).stdout


def test_no_reporter_key_blocks_the_draft_until_clear_is_chosen(reply_project, homes, monkeypatch, capsys):
    project, dovecot, user = reply_project
    dovecot.append(user, "INBOX", pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team"), sender=STRANGER))
    code, doc, err = create_draft(project, monkeypatch, capsys)
    assert code == 3, err
    assert doc["written"] is False
    assert doc["proposal"]["facts"]["blocked_by"] == "encryption"
    assert "no usable OpenPGP key for sam@example.com" in err
    assert drafts(dovecot, user) == []

    code, doc, err = create_draft(project, monkeypatch, capsys, "--allow-clear")
    assert code == 0, err
    assert doc["proposal"]["facts"]["encryption"] == "clear-chosen"
    assert "IN CLEAR" in err
    [draft] = drafts(dovecot, user)
    assert b"we reproduce the overflow" in draft


def test_reply_to_a_clear_report_is_unchanged(reply_project, homes, monkeypatch, capsys):
    project, dovecot, user = reply_project
    dovecot.append(user, "INBOX", make_mail(1, message_id="<r1@example.net>", body="clear report\n"))
    code, doc, err = create_draft(project, monkeypatch, capsys)
    assert code == 0, err
    assert "encryption" not in doc["proposal"]["facts"]
    [draft] = drafts(dovecot, user)
    assert b"BEGIN PGP" not in draft and b"we reproduce the overflow" in draft


def test_an_expired_reporter_key_is_not_used_to_encrypt(homes, tmp_path):
    raw = pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team"), sender="Old Signer <old@example.net>")
    message = mime.parse_message(raw)
    thread = pgp.open_thread(Thread(ThreadId("msgid", message.message_id), message.subject, (message,)),
                             homes.session())
    plan = plan_reply_encryption(thread, thread.messages[0], homes.session(),
                                 ProjectPgp(load_project(write_project(tmp_path / "p", [("mbox", "primary", "no")],
                                                                       {"pgp": {"team_key": homes.fprs["team"]}}))))
    assert plan.blocked and "no usable OpenPGP key for old@example.net" in plan.blocked
    assert plan.facts["encryption"] == "no-key"


def test_a_signed_encrypted_reply_is_signed_by_the_team_key(homes, tmp_path):
    raw = pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team", sign="reporter"))
    message = mime.parse_message(raw)
    thread = pgp.open_thread(Thread(ThreadId("msgid", message.message_id), message.subject, (message,)),
                             homes.session())
    config = load_project(write_project(tmp_path / "p", [("mbox", "primary", "no")],
                                        {"pgp": {"team_key": homes.fprs["team"], "sign_replies": True}}))
    plan = plan_reply_encryption(thread, thread.messages[0], homes.session(), ProjectPgp(config))
    assert plan.sign == homes.fprs["team"] and "signed by the team key" in plan.fields[0].value
    armored = plan.encrypt(BODY)
    done = gpg(homes.world, "--status-fd", "1", "--decrypt", data=armored.encode())
    assert b"[GNUPG:] GOODSIG" in done.stdout and BODY.encode() in done.stdout


def test_a_draft_to_a_report_with_a_hidden_subject_keeps_it_out_of_every_clear_header(reply_project, homes,
                                                                                     monkeypatch, capsys):
    project, dovecot, user = reply_project
    hidden = "RCE in frob 2.3 via crafted header"
    inner = (b'Content-Type: text/plain; charset=utf-8; protected-headers="v1"\r\n'
             + f"Subject: {hidden}\r\n\r\n{SECRET}\r\n".encode())
    dovecot.append(user, "INBOX", pgp_mime_encrypted(homes.encrypt(inner, "team", sign="reporter"), subject="..."))
    code, doc, err = create_draft(project, monkeypatch, capsys)
    assert code == 0, err
    [draft] = drafts(dovecot, user)
    head = draft.split(b"\r\n\r\n", 1)[0]
    assert b"\r\nSubject: Re: ...\r\n" in b"\r\n" + head + b"\r\n", head
    assert hidden.encode() not in draft
    assert hidden not in json.dumps(doc["proposal"])
