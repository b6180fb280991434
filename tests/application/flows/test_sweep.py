"""The feedback sweep over an mbox archive (no acknowledgment primitive) and its rules."""

from __future__ import annotations

import hashlib
import io
import json
import mailbox
import sys

import pytest

from mailtriage.backends.mime import parse_message
from mailtriage.cli.main import main
from mailtriage.application.flows.sweep import (NO_ACK_PRIMITIVE, UNAVAILABLE, SourceError, classify, open_reader,
                                        parse_cursor, parse_source, run_sweep)
from tests.application.flows import feedback_mail as fm


def write_archive(path, entries):
    box = mailbox.mbox(str(path), create=True)
    try:
        for raw, when in entries:
            msg = mailbox.mboxMessage(raw)
            msg.set_from("MAILER-DAEMON", when.timetuple())
            box.add(msg)
        box.flush()
    finally:
        box.close()
    return path


@pytest.fixture
def archive(tmp_path):
    entries = [fm.before_cursor()] + [(raw, when) for _, _, raw, when in fm.corpus()]
    return write_archive(tmp_path / "feedback.mbox", entries)


def sweep(path, **kw):
    source = parse_source(f"mbox:{path}")
    return run_sweep(open_reader(source), entry="email:feedback", cursor=fm.CURSOR, source=source.describe(), **kw)


@pytest.mark.parametrize("name,expected,raw", [(n, e, r) for n, e, r, _ in fm.corpus()], ids=lambda v: str(v)[:30])
def test_each_message_is_classified(name, expected, raw):
    verdict = classify(parse_message(raw))
    assert (verdict[0] if verdict else "item") == expected, (name, verdict)


def test_sweep_maps_people_and_skips_the_rest(archive):
    before = hashlib.sha256(archive.read_bytes()).hexdigest()
    result = sweep(archive).to_json()
    assert result["available"] is True and result["ack_primitive"] is False
    assert result["notices"] == [NO_ACK_PRIMITIVE]
    assert [i["id"] for i in result["items"]] == ["<human-1@customer.example>", "<human-2@users.example>",
                                                  "<human-3@customer.example>", "<human-4@customer.example>",
                                                  "<human-5@evil.example>"]
    assert {s["id"]: s["reason"] for s in result["skipped"]} == {
        "<20261102090000.4A1B2C3D@mx.frobnicator.example>": "bounce", "<ndr-7f3a@contoso.example>": "bounce",
        "<oof-1@partner.example>": "auto-reply", "<vacation-1@partner.example>": "auto-reply",
        "<auto-1@old.example>": "auto-reply", "<auto-2@old.example>": "auto-reply",
        "<news-42@tooling.example>": "system notification", "<mdn-1@customer.example>": "system notification",
        "<frob/frob/issues/123@github.com>": "system notification"}
    for item in result["items"]:
        assert item["source"] == "email:feedback"
        assert item["ack_deferred"] is True and item["existing_ack"] is None and item["existing_closeout"] is None
        assert item["origin"].startswith(archive.resolve().as_uri() + "#%3C")
        assert item["author_class"] == "external"
    first = result["items"][0]
    assert first["body"] == ("Email from Carl Customer (carl@customer.example), subject “The export button loses my "
                             "settings”. Text (quoted as data): “Hi, when I press Export the column settings are "
                             "gone.”")
    assert result["items"][3]["media"] == [{"name": "crash.png", "content_type": "image/png", "size": 70}]
    injected = result["items"][4]
    assert "\u202e" not in injected["body"] and injected["existing_ack"] is None
    assert result["cursor"] == "2026-11-02T08:00:00Z" and result["truncated"] is False
    assert hashlib.sha256(archive.read_bytes()).hexdigest() == before  # nothing written


def test_duplicates_are_reported_once(tmp_path):
    raw, when = fm.customer_plain(fm.BASE), fm.BASE
    path = write_archive(tmp_path / "dup.mbox", [(raw, when), (raw, when)])
    result = sweep(path).to_json()
    assert [i["id"] for i in result["items"]] == ["<human-1@customer.example>"]
    assert result["skipped"] == [{"id": "<human-1@customer.example>", "reason": "duplicate",
                                  "rule": "same Message-ID", "received": "2026-11-02T09:00:00Z"}]


def test_cap_marks_the_result_truncated(archive):
    capped = sweep(archive, cap=2).to_json()
    assert [i["id"] for i in capped["items"]] == ["<human-1@customer.example>", "<human-2@users.example>"]
    assert capped["truncated"] is True and capped["cap"] == 2
    exact = sweep(archive, cap=5).to_json()
    assert len(exact["items"]) == 5 and exact["truncated"] is False


def test_internal_domains(archive):
    result = sweep(archive, internal_domains=frozenset({"customer.example"})).to_json()
    classes = {i["id"]: i["author_class"] for i in result["items"]}
    assert classes["<human-1@customer.example>"] == "internal"
    assert classes["<human-2@users.example>"] == "external"


def test_unavailable_source_returns_the_sentence_and_stops(tmp_path):
    result = sweep(tmp_path / "missing.mbox").to_json()
    assert result["available"] is False
    assert result["notices"] == [UNAVAILABLE]
    assert result["items"] == [] and result["skipped"] == []


def test_source_and_cursor_parsing():
    assert parse_source("work").describe() == "work/INBOX"
    src = parse_source("work/Feedback/2026?from=customer.example&text=export")
    assert (src.account, src.folder, src.sender, src.text) == ("work", "Feedback/2026", "customer.example", "export")
    with pytest.raises(SourceError, match="unknown query key"):
        parse_source("work/INBOX?subject=x")
    with pytest.raises(SourceError, match="account id is missing"):
        parse_source("/INBOX")
    assert parse_cursor("2026-11-02").isoformat() == "2026-11-02T00:00:00+00:00"
    with pytest.raises(SourceError):
        parse_cursor("yesterday")


def _cli(capsys, monkeypatch, *args):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def test_cli_prints_one_document_and_the_sentence(capsys, monkeypatch, archive, tmp_path):
    code, doc, err = _cli(capsys, monkeypatch, "sweep", "--source", f"mbox:{archive}", "--cursor",
                          "2026-11-02T08:00:00Z", "--entry", "email:feedback", "--cap", "3")
    assert code == 0, err
    assert len(doc["items"]) == 3 and doc["truncated"] is True
    assert NO_ACK_PRIMITIVE + "\n" in err
    code, doc, err = _cli(capsys, monkeypatch, "sweep", "--source", f"mbox:{tmp_path / 'nope'}", "--cursor",
                          "2026-11-02T08:00:00Z", "--entry", "email:feedback")
    assert code == 0 and doc["notices"] == [UNAVAILABLE] and UNAVAILABLE + "\n" in err
    code, doc, err = _cli(capsys, monkeypatch, "sweep", "--source", "work/INBOX", "--cursor", "soon", "--entry", "x")
    assert code == 2 and "--cursor" in err


def write_maildir(path, entries):
    box = mailbox.Maildir(str(path), create=True)
    try:
        for raw, when in entries:
            msg = mailbox.MaildirMessage(raw)
            msg.set_date(when.timestamp())  # the file's mtime: the received date
            box.add(msg)
    finally:
        box.close()
    return path


def test_sweep_reads_a_maildir_by_its_received_dates(tmp_path):
    entries = [fm.before_cursor()] + [(raw, when) for _, _, raw, when in fm.corpus()]
    path = write_maildir(tmp_path / "Feedback", entries)
    source = parse_source(f"maildir:{path}")
    result = run_sweep(open_reader(source), entry="email:feedback", cursor=fm.CURSOR, source=source.describe()).to_json()
    assert result["available"] is True and result["notices"] == [NO_ACK_PRIMITIVE]
    assert [i["id"] for i in result["items"]] == ["<human-1@customer.example>", "<human-2@users.example>",
                                                  "<human-3@customer.example>", "<human-4@customer.example>",
                                                  "<human-5@evil.example>"]
    assert all(i["received"] >= "2026-11-02T08:00:00Z" for i in result["items"])
    assert result["items"][3]["media"] == [{"name": "crash.png", "content_type": "image/png", "size": 70}]


def test_an_archive_of_the_other_format_is_unavailable(tmp_path, archive):
    maildir = write_maildir(tmp_path / "box", [(fm.customer_plain(fm.BASE), fm.BASE)])
    for text in (f"mbox:{maildir}", f"maildir:{archive}"):
        source = parse_source(text)
        result = run_sweep(open_reader(source), entry="e", cursor=fm.CURSOR, source=source.describe()).to_json()
        assert result["available"] is False and result["notices"] == [UNAVAILABLE], text
