"""Server search on a real Dovecot (issue 14 §4): SEARCH CHARSET UTF-8 on TEXT, BODY, FROM and
SUBJECT, newest first, paged, across the folders of an account (a folder that fails is named),
hostile query text sent as one IMAP string, and the CLI's JSON."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from mailtriage.backends.errors import MailError
from mailtriage.backends.imap.account import password_key
from mailtriage.backends.imap.adapter import ImapMailbox
from mailtriage.backends.imap import search as search_module
from mailtriage.backends.imap.search import search_string
from mailtriage.backends.imap.source import ImapSource
from mailtriage.backends.mailbox_contract import InvalidQuery
from mailtriage.backends.search import SearchField, SearchRequest
from mailtriage.cli.main import main
from mailtriage.core.secrets import set_secret
from mailtriage.core.trace import TRACE
from tests.imap.conftest import BASE_TIME, account_for, make_mail, write_imap_project, write_work_account

LIST = "security@example.org"


def seed_many(dovecot, user, folder, raws):
    with dovecot.client(user) as admin:
        if not admin.folder_exists(folder):
            admin.create_folder(folder)
        for raw in raws:
            admin.append(folder, raw)


def subjects(page):
    return [m.subject for m in page.items]


class Sent:
    """The command lines the client sent while in the block."""

    def __enter__(self):
        self.lines: list[str] = []
        self._stop = TRACE.subscribe(lambda line: self.lines.append(line.text) if line.direction == ">" else None)
        return self

    def __exit__(self, *exc):
        self._stop()

    def having(self, word: str) -> list[str]:
        return [line for line in self.lines if f" {word} " in f" {line} "]


def test_request_refuses_what_no_server_can_search():
    with pytest.raises(InvalidQuery):
        SearchRequest("   ")
    with pytest.raises(InvalidQuery):
        SearchRequest("a\x00b")
    with pytest.raises(InvalidQuery):
        SearchRequest("x", page=-1)
    with pytest.raises(InvalidQuery):
        SearchRequest("x", page_size=0)
    with pytest.raises(InvalidQuery):
        SearchRequest("x", field="headers")  # type: ignore[arg-type]
    assert SearchRequest("x", field="from").field is SearchField.FROM  # type: ignore[arg-type]


def test_search_string_quotes_ascii_and_sends_everything_else_as_a_literal():
    assert search_string('say "hi" \\ {5}') == b'"say \\"hi\\" \\\\ {5}"'
    for hostile in ("x\r\nA1 LOGOUT", "naïve", "tab\there"):
        arg = search_string(hostile)
        assert type(arg).__name__ == "_literal" and bytes(arg) == hostile.encode("utf-8")


def test_each_field_searches_what_it_names(dovecot, dovecot_user, mailbox):
    seed_many(dovecot, dovecot_user, "INBOX", [
        make_mail(1, subject="Heap overflow in parser", body="nothing special\n"),
        make_mail(2, subject="Question", sender="Overflow Finder <finder@example.net>", body="hello\n"),
        make_mail(3, subject="Other", body="the overflow happens in the body only\n"),
        make_mail(4, subject="Unrelated", body="nothing\n"),
    ])
    by = {f: subjects(mailbox.search(SearchRequest("overflow", field=f))) for f in SearchField}
    assert by[SearchField.SUBJECT] == ["Heap overflow in parser"]
    assert by[SearchField.FROM] == ["Question"]
    assert by[SearchField.BODY] == ["Other"]
    assert by[SearchField.TEXT] == ["Other", "Question", "Heap overflow in parser"]  # newest first


def test_utf8_search_is_sent_with_charset_utf8_as_a_literal(dovecot, dovecot_user, mailbox):
    seed_many(dovecot, dovecot_user, "INBOX", [
        make_mail(1, subject="=?utf-8?q?Sicherheitsl=C3=BCcke_im_Parser?="),
        make_mail(2, subject="Sicherheitslucke ohne Umlaut"),
        make_mail(3, subject="Plain", body="Grüße aus der Lücke\n"),
    ])
    with Sent() as sent:
        page = mailbox.search(SearchRequest("Sicherheitslücke", field=SearchField.SUBJECT))
        body = mailbox.search(SearchRequest("Lücke", field=SearchField.BODY))
    assert subjects(page) == ["Sicherheitslücke im Parser"]
    assert subjects(body) == ["Plain"]
    searches = sent.having("SEARCH")
    assert searches and all("UTF-8" in line for line in searches)
    assert any("[literal" in line for line in sent.lines)  # the 8-bit text went as a literal


def test_pages_are_newest_first_with_a_total_and_the_next_page_runs_no_second_search(dovecot, dovecot_user,
                                                                                         mailbox):
    raws = [make_mail(n, subject=f"needle {n}" if n % 3 else f"hay {n}") for n in range(18)]
    seed_many(dovecot, dovecot_user, "INBOX", raws)
    first = mailbox.search(SearchRequest("needle", field=SearchField.SUBJECT, page_size=5))
    assert first.total == 12 and first.more
    assert subjects(first) == [f"needle {n}" for n in (17, 16, 14, 13, 11)]
    assert first.method == "IMAP UID SEARCH RETURN (ALL COUNT) CHARSET UTF-8"  # Dovecot has ESEARCH
    with Sent() as sent:
        last = mailbox.search(SearchRequest("needle", field=SearchField.SUBJECT, page=2, page_size=5))
    assert subjects(last) == ["needle 2", "needle 1"] and not last.more and last.total == 12
    assert not sent.having("SEARCH")  # the ordered UIDs were kept
    assert [t for t in sent.lines if " FETCH " in t] and all("1:*" not in t for t in sent.lines)
    # New mail changes the folder: the next search runs again and sees it.
    seed_many(dovecot, dovecot_user, "INBOX", [make_mail(99, subject="needle 99")])
    again = mailbox.search(SearchRequest("needle", field=SearchField.SUBJECT, page_size=5))
    assert again.total == 13 and subjects(again)[0] == "needle 99"


def test_a_server_without_sort_or_esearch_pages_the_same(dovecot_minimal, minimal_user, minimal_mailbox):
    seed_many(dovecot_minimal, minimal_user, "INBOX",
              [make_mail(n, subject=f"needle {n}" if n % 2 else f"hay {n}") for n in range(10)])
    with Sent() as sent:
        page = minimal_mailbox.search(SearchRequest("needle", field=SearchField.SUBJECT, page_size=3))
    assert page.total == 5 and subjects(page) == ["needle 9", "needle 7", "needle 5"]
    assert page.method == "IMAP UID SEARCH CHARSET UTF-8"
    assert not any("RETURN" in line for line in sent.lines)


def test_since_keeps_only_mail_that_arrived_after_it(dovecot, dovecot_user, mailbox):
    now = BASE_TIME.replace(year=2030)
    dovecot.append(dovecot_user, "INBOX", make_mail(1, subject="old needle"), when=BASE_TIME)
    dovecot.append(dovecot_user, "INBOX", make_mail(2, subject="new needle"), when=now)
    page = mailbox.search(SearchRequest("needle", since=now - timedelta(days=1)))
    assert subjects(page) == ["new needle"]


def test_across_folders_merged_newest_first_each_folder_examined(dovecot, dovecot_user, mailbox):
    dovecot.append(dovecot_user, "INBOX", make_mail(1, subject="needle in inbox"), when=BASE_TIME)
    dovecot.append(dovecot_user, "Lists/dev", make_mail(2, subject="needle in dev"),
                   when=BASE_TIME + timedelta(hours=2))
    dovecot.append(dovecot_user, "Archive", make_mail(3, subject="needle archived"),
                   when=BASE_TIME + timedelta(hours=1))
    dovecot.append(dovecot_user, "Archive", make_mail(4, subject="no match"), when=BASE_TIME)
    with Sent() as sent:
        page = mailbox.search(SearchRequest("needle", field=SearchField.SUBJECT, all_folders=True))
    assert subjects(page) == ["needle in dev", "needle archived", "needle in inbox"]
    assert page.total == 3 and not page.failed
    assert {"INBOX", "Lists/dev", "Archive"} <= set(page.searched)
    assert "Lists" not in page.searched  # a \Noselect parent is skipped, not failed
    assert [h.folder_id for h in page.items] == ["Lists/dev", "Archive", "INBOX"]
    assert sent.having("EXAMINE") and not sent.having("SELECT")  # a search changes nothing
    second = mailbox.search(SearchRequest("needle", field=SearchField.SUBJECT, all_folders=True, page=1,
                                          page_size=2))
    assert subjects(second) == ["needle in inbox"] and not second.more


@pytest.fixture
def acl_user(dovecot_acl):
    return dovecot_acl.add_user()


@pytest.fixture
def acl_mailbox(dovecot_acl, acl_user, memory_keyring):
    acct = account_for(dovecot_acl, acl_user)
    set_secret(password_key(acct.id), acl_user.password)
    mb = ImapMailbox(acct)
    try:
        yield mb
    finally:
        mb.close()


def test_a_folder_that_fails_is_named_and_the_others_still_answer(dovecot_acl, acl_user, acl_mailbox):
    dovecot_acl.append(acl_user, "INBOX", make_mail(1, subject="needle readable"))
    dovecot_acl.append(acl_user, "Secret", make_mail(2, subject="needle hidden"))
    dovecot_acl.set_rights(acl_user, "Secret", "l")  # listed, but not readable
    page = acl_mailbox.search(SearchRequest("needle", all_folders=True))
    assert subjects(page) == ["needle readable"]
    failed = dict(page.failed)
    assert list(failed) == ["Secret"] and failed["Secret"]
    assert page.notes and "could not be searched" in page.notes[0]
    with pytest.raises(MailError):  # only that folder asked: its error, said
        acl_mailbox.search(SearchRequest("needle", folder="Secret"))


@pytest.mark.parametrize("hostile", [
    'x" ALL "',
    "x\r\nA999 DELETE INBOX\r\n",
    "{5}\r\nhello",
    "ümlaut\" {3}",
])
def test_hostile_query_text_is_one_argument_never_a_command(dovecot, dovecot_user, mailbox, hostile):
    seed_many(dovecot, dovecot_user, "INBOX", [make_mail(1, subject="keep me")])
    with Sent() as sent:
        page = mailbox.search(SearchRequest(hostile))
    assert page.total == 0  # searched as text: ALL or a command would have matched or acted
    assert not any(line.startswith("A999") or " DELETE " in line for line in sent.lines)
    assert mailbox.search(SearchRequest("keep", field=SearchField.SUBJECT)).total == 1
    assert "INBOX" in [f.name for f in mailbox.folders.infos()]


def test_quotes_and_braces_in_a_subject_are_found(dovecot, dovecot_user, mailbox):
    seed_many(dovecot, dovecot_user, "INBOX", [make_mail(1, subject='say "hi" {5} now'), make_mail(2)])
    assert subjects(mailbox.search(SearchRequest('"hi" {5}', field=SearchField.SUBJECT))) == ['say "hi" {5} now']


def test_the_source_answers_thread_rows_and_the_cli_prints_json(tmp_path, monkeypatch, dovecot, dovecot_user,
                                                                memory_keyring, capsys):
    config_dir = write_work_account(tmp_path / "config", dovecot, dovecot_user)
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(config_dir))
    set_secret(password_key("work"), dovecot_user.password)
    dovecot.append(dovecot_user, "INBOX", make_mail(1, subject="RCE report", message_id="<root@r>"))
    dovecot.append(dovecot_user, "INBOX", make_mail(2, subject="Re: RCE report", message_id="<reply@r>",
                                                    references="<root@r>", body="the \u202eRCE is confirmed\n"))
    dovecot.append(dovecot_user, "INBOX", make_mail(3, subject="other"))
    project = write_imap_project(tmp_path / "project", LIST)
    assert main(["--project", str(project), "mail", "search", "confirmed", "--field", "body"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert doc["op"] == "search" and doc["backend"] == "imap"
    assert doc["resolution"]["chosen"] == "imap"
    result = doc["result"]
    assert result["total"] == 1 and result["method"].startswith("IMAP UID SEARCH")
    [item] = result["items"]
    assert item["subject"] == "Re: RCE report" and item["thread_id"] == "msgid:<root@r>"
    assert "\u202e" not in out  # JSON is inert
    assert main(["--project", str(project), "mail", "search", "RCE", "--field", "subject", "--page-size", "1",
                 "--page", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [i["subject"] for i in doc["result"]["items"]] == ["RCE report"] and doc["result"]["total"] == 2
    # A personal account searches its folders directly.
    assert main(["mail", "search", "RCE", "--account", "work", "--all-folders", "--field", "subject"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["account"] == "work" and doc["result"]["total"] == 2
    assert {i["folderId"] for i in doc["result"]["items"]} == {"INBOX"}
    # What the user typed wrong is a usage error (2), said on stderr.
    assert main(["--project", str(project), "mail", "search", "a\x00b"]) == 2
    assert "NUL" in capsys.readouterr().err


def test_the_source_declares_search_and_searches_its_list_folder(dovecot, dovecot_user, memory_keyring):
    acct = account_for(dovecot, dovecot_user)
    set_secret(password_key(acct.id), dovecot_user.password)
    dovecot.append(dovecot_user, "Lists/sec", make_mail(1, subject="needle on the list"))
    dovecot.append(dovecot_user, "INBOX", make_mail(2, subject="needle elsewhere"))
    source = ImapSource("imap", {"folder": "Lists/sec"}, account=acct)
    try:
        assert source.features.server_search and source.features.search_all_folders
        page = source.search(SearchRequest("needle"))
        assert [s.subject for s in page.items] == ["needle on the list"] and page.searched == ("Lists/sec",)
        everywhere = source.search(SearchRequest("needle", all_folders=True))
        assert sorted(s.subject for s in everywhere.items) == ["needle elsewhere", "needle on the list"]
    finally:
        source.close()


def test_a_large_folder_gives_its_first_page_from_the_newest_windows(dovecot, dovecot_user, mailbox, monkeypatch):
    monkeypatch.setattr(search_module, "FIRST_WINDOW", 4)  # "large" at 9 messages: windows of 4, 8, …
    monkeypatch.setattr(search_module, "WINDOW_PER_RESULT", 1)
    raws = [make_mail(n, subject=f"needle {n}" if n % 4 == 0 else f"hay {n}") for n in range(40)]
    seed_many(dovecot, dovecot_user, "INBOX", raws)
    with Sent() as sent:
        first = mailbox.search(SearchRequest("needle", field=SearchField.SUBJECT, page_size=2))
    assert subjects(first) == ["needle 36", "needle 32"] and first.more
    assert first.total is None and "windows" in first.method and first.notes  # not counted yet
    windows = [line for line in sent.having("SEARCH")]
    assert windows and all(":" in line.split("UTF-8", 1)[1].split()[0] for line in windows)  # seq windows
    assert not any("1:40" in line for line in windows)  # the whole folder was not searched
    second = mailbox.search(SearchRequest("needle", field=SearchField.SUBJECT, page=1, page_size=2))
    assert subjects(second) == ["needle 28", "needle 24"] and second.total == 10  # exact from page 2 on
    again = mailbox.search(SearchRequest("needle", field=SearchField.SUBJECT, page_size=2))
    assert again.total == 10  # the whole list is known now: the first page says so too
    few = mailbox.search(SearchRequest("needle 4", field=SearchField.SUBJECT, page_size=5))
    assert subjects(few) == ["needle 4"] and few.total == 1 and not few.more  # every window searched: complete
