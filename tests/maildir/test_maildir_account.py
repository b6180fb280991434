"""A personal account kept in a local Maildir (``kind = "maildir"``), on real files: browse,
read without marking seen, flag, move, draft; IDs of other accounts refused; never a send."""

import os
import stat

import pytest

from mailtriage.backends.errors import NotSupported
from mailtriage.backends.mailbox_contract import Compose, ForeignMessageId, MailQuery, StaleMessageId
from mailtriage.backends.maildir_account import MaildirAccount, MaildirMailbox
from mailtriage.backends.registry import open_mailbox
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.settings import UserSettings


def message(n: int, subject: str) -> bytes:
    return (f"From: Ana <ana@example.com>\nTo: me@example.org\nSubject: {subject}\n"
            f"Date: Thu, 0{n} Oct 2026 09:00:00 +0000\nMessage-ID: <m{n}@example.com>\n\nBody {n}.\n").encode()


@pytest.fixture
def maildir(tmp_path):
    root = tmp_path / "Mail"
    for folder in (root, root / ".Archive", root / ".Drafts", root / ".Trash"):
        for sub in ("cur", "new", "tmp"):
            (folder / sub).mkdir(parents=True)
    for n, (name, flags) in enumerate([("1.a.host", "S"), ("2.b.host", "F"), ("3.c.host", None)], start=1):
        file = root / ("new" if flags is None else "cur") / (name if flags is None else f"{name}:2,{flags}")
        file.write_bytes(message(n, f"Report {n}"))
        os.utime(file, (1_790_000_000 + n * 60, 1_790_000_000 + n * 60))
    return root


def mailbox(root, access="draft", account_id="home") -> MaildirMailbox:
    settings = UserSettings(root.parent / "config.toml", {"accounts": {account_id: {
        "kind": "maildir", "path": str(root), "address": "me@example.org", "access": access}}})
    return open_mailbox(account_id, settings)


def test_folders_roles_counts_and_a_newest_first_page(maildir):
    box = mailbox(maildir)
    folders = {f.id: (f.role, f.unread, f.total) for f in box.list_folders()}
    assert folders == {"INBOX": ("inbox", 2, 3), "Drafts": ("drafts", 0, 0), "Archive": ("archive", 0, 0),
                       "Trash": ("trash", 0, 0)}
    page = box.list(MailQuery(folder="INBOX", page_size=2))
    assert page.total == 3
    assert [(h.subject, h.read, h.flagged) for h in page.messages] == [("Report 3", False, False),
                                                                        ("Report 2", False, True)]
    assert [h.subject for h in box.list(MailQuery(folder="INBOX", page=1, page_size=2)).messages] == ["Report 1"]
    assert [h.subject for h in box.list(MailQuery(folder="INBOX", unread=True)).messages] == ["Report 3", "Report 2"]


def test_reading_leaves_the_read_state_and_flags_rename_the_file(maildir):
    box = mailbox(maildir)
    newest = box.list(MailQuery(folder="INBOX")).messages[0]
    before = sorted(p.name for p in maildir.rglob("*.host*"))
    assert box.get(newest.id).content.body_text.strip() == "Body 3."
    assert sorted(p.name for p in maildir.rglob("*.host*")) == before  # not marked seen
    box.set_flags([newest.id], read=True, flagged=True)
    assert (maildir / "cur" / "3.c.host:2,FS").is_file() and not (maildir / "new" / "3.c.host").exists()
    box.set_flags([newest.id], flagged=False)
    assert (maildir / "cur" / "3.c.host:2,S").is_file()


def test_move_archive_and_trash_keep_the_flags(maildir):
    box = mailbox(maildir)
    first, second, third = box.list(MailQuery(folder="INBOX")).messages
    box.archive([second.id])
    box.trash([third.id])
    box.move([first.id], "Archive")
    assert sorted(p.name for p in (maildir / ".Archive" / "cur").iterdir()) == ["2.b.host:2,F", "3.c.host:2,"]
    assert [p.name for p in (maildir / ".Trash" / "cur").iterdir()] == ["1.a.host:2,S"]
    with pytest.raises(StaleMessageId):
        box.get(first.id)  # it moved: the old ID is stale, the list must be refreshed


def test_ids_of_another_account_are_refused_before_any_file_is_read(maildir):
    box = mailbox(maildir)
    own = box.list(MailQuery(folder="INBOX")).messages[0].id
    other = own.replace("maildir:home:", "maildir:work:")
    for bad in (other, "imap:home:INBOX:1:2", "maildir:home:INBOX:../../etc/passwd"):
        with pytest.raises(ForeignMessageId):
            box.get(bad)


def test_a_draft_is_a_private_file_in_drafts_and_nothing_is_ever_sent(maildir):
    box = mailbox(maildir)
    source = box.list(MailQuery(folder="INBOX")).messages[0]
    draft_id = box.save_draft(Compose(kind="reply", source_id=source.id, body="Thanks."))
    [file] = (maildir / ".Drafts" / "cur").iterdir()
    assert file.name.endswith(":2,DS") and stat.S_IMODE(file.stat().st_mode) == 0o600
    draft = box.get(draft_id).content
    assert draft.subject == "Re: Report 3" and draft.in_reply_to == "<m3@example.com>"
    assert [a.email for a in draft.to] == ["ana@example.com"]
    with pytest.raises(NotSupported, match="no outgoing server"):
        box.send(Compose(kind="new", to=("ana@example.com",), body="x"), confirmed=True)
    with pytest.raises(NotSupported, match="drafts need"):
        mailbox(maildir, access="read").save_draft(Compose(kind="new", to=("a@example.com",), body="x"))


def test_access_send_is_a_configuration_error_naming_the_key(tmp_path):
    with pytest.raises(ConfigError, match=r"accounts\.home\.access"):
        MaildirAccount.from_settings("home", {"kind": "maildir", "path": str(tmp_path), "access": "send"},
                                     tmp_path / "config.toml")


def test_a_batch_names_the_messages_another_client_moved_and_changes_the_rest(maildir):
    from mailtriage.backends.mailbox_contract import PartialFailure

    box = mailbox(maildir)
    first, second, third = box.list(MailQuery(folder="INBOX")).messages
    (maildir / "cur" / "2.b.host:2,F").rename(maildir / ".Trash" / "cur" / "2.b.host:2,F")  # another client
    with pytest.raises(PartialFailure) as caught:
        box.set_flags([first.id, second.id, third.id], flagged=True)
    assert caught.value.done == [first.id, third.id] and caught.value.gone == [second.id]
    assert (maildir / "cur" / "3.c.host:2,F").is_file() and (maildir / "cur" / "1.a.host:2,FS").is_file()


def test_a_message_renamed_away_by_a_sync_tool_mid_listing_is_skipped_not_fatal(maildir):
    # Review finding: mbsync/offlineimap rename files to change flags; one that vanished between
    # the folder listing and its read failed the whole page. A dangling name stands for it here.
    (maildir / "cur" / "9.gone.host:2,S").symlink_to(maildir / "cur" / "no-such-file")
    page = mailbox(maildir).list(MailQuery(folder="INBOX"))
    assert sorted(h.subject for h in page.messages) == ["Report 1", "Report 2", "Report 3"]


def test_raw_is_the_file_as_it_is_on_disk(maildir):
    # The raw view and `|` refused Maildir accounts: the adapter declined raw (review finding).
    box = mailbox(maildir)
    newest = box.list(MailQuery(folder="INBOX", page_size=1)).messages[0]
    assert box.raw(newest.id) == message(3, "Report 3")


def counted_reads(monkeypatch) -> list[str]:
    """The names of the files the adapter opens (a spy that calls through to the real read)."""
    from mailtriage.backends import maildir_account

    real_read, reads = maildir_account._read, []

    def counting_read(file, limit, account_id):
        reads.append(file.name.partition(".")[0])
        return real_read(file, limit, account_id)

    monkeypatch.setattr(maildir_account, "_read", counting_read)
    return reads


def test_a_page_reads_only_its_own_files_newest_first_by_delivery_time(maildir, monkeypatch):
    # Review finding: every file of the folder was read for each page; the cost must follow the page.
    for n in range(4, 40):
        file = maildir / "cur" / f"{n}.x.host:2,S"
        file.write_bytes(message(n % 9 + 1, f"Report {n}"))
        os.utime(file, (1_790_000_000 + n * 60, 1_790_000_000 + n * 60))
    reads = counted_reads(monkeypatch)
    box = mailbox(maildir)
    page = box.list(MailQuery(folder="INBOX", page=1, page_size=5))
    assert [h.subject for h in page.messages] == [f"Report {n}" for n in (34, 33, 32, 31, 30)]
    assert page.total == 39 and reads == ["34", "33", "32", "31", "30"]
    reads.clear()
    assert [h.subject for h in box.list(MailQuery(folder="INBOX", unread=True, page_size=5)).messages] == [
        "Report 3", "Report 2"]  # a flag filter is read from the file names, not the files
    assert reads == ["3", "2"]


def test_a_reply_draft_reads_its_source_once(maildir, monkeypatch):
    box = mailbox(maildir)
    source = box.list(MailQuery(folder="INBOX", page_size=1)).messages[0]
    reads = counted_reads(monkeypatch)
    box.save_draft(Compose(kind="reply", source_id=source.id, body="Thanks."))
    assert reads == ["3"]


def test_a_flag_or_move_proposal_says_the_change_lands_in_local_files_not_on_a_server(maildir):
    """Issue 35 §6 (the words): a Maildir account has no server; its proposals said "on the
    server of account home"."""
    from mailtriage.application.flows.organize import propose_organize

    box = mailbox(maildir)
    headers = box.list(MailQuery(folder="INBOX")).messages[:2]
    for action in ("flag", "archive"):
        write = propose_organize(box, headers, action, access="draft", folders=box.list_folders()).writes[0]
        assert write.destination == "in the local Maildir of account home", (action, write.destination)
