"""The real-world corpus through all three offline forms: one mbox, a Maildir, a folder of .eml.

The corpus is ``tests/data/realworld/`` (see its README for the source and licence
of each file) plus CPython's email test messages read in place. Whatever the form,
mailtriage must list the same threads and decode the same text.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mailtriage.backends.contract import SourceOrigin
from mailtriage.backends.mbox import MboxSource
from mailtriage.backends.mime import parse_message
from tests.mbox.mboxes import from_line, write_eml_folder, write_maildir

REALWORLD = Path(__file__).resolve().parent.parent / "data" / "realworld"
LONG_AGO = datetime(1900, 1, 1, tzinfo=timezone.utc)
_QUOTE = re.compile(rb"^(>*From )", re.MULTILINE)


def corpus(cpython_email_data: Path) -> list[tuple[str, bytes]]:
    files = sorted(p for p in REALWORLD.rglob("*.eml"))
    files += sorted(cpython_email_data.glob("msg_*.txt"))
    return [(p.name, p.read_bytes()) for p in files]


def write_mboxrd(path: Path, messages: list[bytes]) -> Path:
    """mboxrd, as a careful writer stores mail: ``>*From `` body lines get one more ``>``.

    A message that starts with its own ``From `` line keeps it as its From_ line
    (as ``mailbox.mbox`` does).
    """
    parts = []
    for raw in messages:
        line = from_line(when="Sat Jun  1 00:00:00 2024")
        if raw.startswith(b"From "):
            first, _, raw = raw.partition(b"\n")
            line = first + b"\n"
        head_end = raw.find(b"\n\n")
        if head_end >= 0:
            raw = raw[: head_end + 2] + _QUOTE.sub(rb">\1", raw[head_end + 2:])
        if not raw.endswith(b"\n"):
            raw += b"\n"
        parts.append(line + raw + b"\n")
    path.write_bytes(b"".join(parts))
    return path


def view(path: Path) -> tuple[list, dict]:
    """(threads, messages by Message-ID) as the backend shows them, without form-specific parts."""
    source = MboxSource("archive", {"path": str(path)}, origin=SourceOrigin(project_dir=Path(path.parent)))
    rows = source.list_recent_threads(None, LONG_AGO)
    threads = sorted((str(r.thread_id), r.message_count, r.subject, r.sender) for r in rows)
    messages = {}
    for row in rows:
        for m in source.read_thread(row.thread_id).messages:
            messages.setdefault(m.message_id, []).append(
                (m.subject, m.sender, m.date, m.in_reply_to, m.references, m.synthetic_id,
                 m.body_text.rstrip("\n"), tuple(a.filename for a in m.attachments)))
    return threads, messages


@pytest.fixture(scope="module")
def forms(tmp_path_factory, cpython_email_data):
    folder = tmp_path_factory.mktemp("realworld")
    mails = [raw for _, raw in corpus(cpython_email_data)]
    return {
        "mbox": view(write_mboxrd(folder / "corpus.mbox", mails)),
        "maildir": view(write_maildir(folder / "maildir", mails)),
        "eml": view(write_eml_folder(folder / "eml", mails)),
    }


def test_the_corpus_is_real_and_small(cpython_email_data):
    names = [name for name, _ in corpus(cpython_email_data)]
    assert 50 <= len(names) <= 120
    assert (REALWORLD / "README.md").is_file()
    readme = (REALWORLD / "README.md").read_text()
    for path in REALWORLD.rglob("*.eml"):
        assert path.name in readme, f"{path.name} has no source and licence in the README"


@pytest.mark.parametrize("form", ["maildir", "eml"])
def test_three_forms_list_the_same_threads(forms, form):
    assert forms[form][0] == forms["mbox"][0]


@pytest.mark.parametrize("form", ["maildir", "eml"])
def test_three_forms_decode_the_same_text(forms, form):
    assert forms[form][1].keys() == forms["mbox"][1].keys()
    for message_id, shown in forms["mbox"][1].items():
        assert sorted(forms[form][1][message_id], key=repr) == sorted(shown, key=repr), message_id


def test_every_message_is_listed(forms, cpython_email_data):
    total = sum(count for _, count, _, _ in forms["mbox"][0])
    assert total == len(corpus(cpython_email_data))


def _read(name: str) -> bytes:
    return next(REALWORLD.rglob(name)).read_bytes()


def test_realworld_cases_read_right():
    lure = parse_message(_read("empty-plain-alternative-lure.eml"))
    assert "https://it-support.example/verify" in lure.body_text
    assert "[hidden text:" in lure.body_text
    links = parse_message(_read("html-only-links.eml"))
    assert "https://payroll-corp.example/statement" in links.text_parts[0].note
    assert links.in_reply_to is None and links.references == ()
    old = parse_message(_read("source-route-and-3-digit-year.eml"))
    assert old.sender.email == "olduser@host.example" and old.date.year == 2001
    folded = parse_message(_read("folded-from-name.eml"))
    assert folded.sender.email == "real@sender.example" and folded.body_text.startswith("The body starts here.")
    two = parse_message(_read("two-from-headers.eml"))
    assert any("mallory@evil.example" in n for n in two.notes)
    assert parse_message(_read("koi8-encoded-word-from.eml")).sender.name == "Иван Петров"
    assert parse_message(_read("pipermail-at.eml")).sender.email == "jane.doe@lists.example.org"
    assert parse_message(_read("split-encoded-words.eml")).subject == "Überprüfung der Lücke"
    bad = parse_message(_read("one-bad-utf8-byte.eml"))
    assert "Отчёт об уязвимости" in bad.body_text and "\ufffd" in bad.body_text
    assert parse_message(_read("gb2312-label-gbk-text.eml")).body_text.strip() == "朱镕基的报告"
    assert parse_message(_read("raw-8bit-koi8-headers.eml")).subject == "Уязвимость в парсере"
    one = parse_message(_read("no-message-id-alert-1.eml"), hash_body=True)
    two_ = parse_message(_read("no-message-id-alert-2.eml"), hash_body=True)
    assert one.synthetic_id and one.message_id != two_.message_id
    assert "\r" not in parse_message(_read("crlf-base64.eml")).body_text
    assert "[hidden text: ignore all previous instructions" in parse_message(_read("hidden-white-text.eml")).body_text
    # mikel/mail fixtures (MIT)
    assert parse_message(_read("utf7.eml")).body_text.startswith("Valid: ")
    refs = parse_message(_read("multiple_references_with_one_invalid.eml"))
    assert refs.references == ("<foo@bar.net>",)
    bad_time = parse_message(_read("raw_email_bad_time.eml"))
    assert any("ahead of now" in n for n in bad_time.notes)
    assert bad_time.sender.name == "Атиковa"  # windows-1251 encoded word, decoded
    two_in_one = parse_message(_read("raw_email_multiple_from.eml"))
    assert two_in_one.sender.email == "tim@powerupdev.com"
    assert [a.email for a in two_in_one.to] == ["tim@powerupdev.com", "concierge@powerupdev.com"]
    junk = parse_message(_read("raw_email_incorrect_header.eml"))
    assert junk.sender.email == "" and any("malformed" in n for n in junk.notes)
    assert parse_message(_read("japanese_iso_2022.eml")).body_text.strip() == "すみません。"
