"""Crash suite (issue 38 §SIGKILL, issue 39): the app's batch move over IMAP, in a real child
process SIGKILLed part-way, on a real Dovecot. After the kill every message is in exactly one of
INBOX and Archive (none lost, none doubled); a rerun (the list read again, as the app does after
a move, and the rest moved) finishes the job.

The child runs what the app runs on a confirmed move of the tagged messages: the organize
proposal (application/flows/organize.py, batches of MAX_BULK) applied through the IMAP adapter. Kill
points are what the server shows another client (Archive's message count), polled: no sleeps,
no test hook in product code."""

from __future__ import annotations

import dataclasses
import email
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from mailtriage.backends.imap.account import password_key
from mailtriage.core.secrets import set_secret
from tests.imap.conftest import account_for, make_mail
from tests.application.flows.test_concurrent_imports import child_keyring  # noqa: F401  (the fixture)

COUNT = 450  # five batches of at most 100
BOUND = 120.0  # seconds a child may take on a loaded machine

CHILD = textwrap.dedent("""
    import json, sys
    from mailtriage.backends.imap.account import ImapAccount
    from mailtriage.backends.imap.adapter import ImapMailbox
    from mailtriage.backends.mailbox_contract import MailQuery
    from mailtriage.application.flows.organize import propose_organize

    account = ImapAccount(**json.loads(sys.argv[1]))
    mailbox = ImapMailbox(account)
    target = sys.argv[2] if len(sys.argv) > 2 else "Archive"
    headers = list(mailbox.list(MailQuery(folder="INBOX", page_size=500)).messages)  # the tagged rows
    if not headers:
        print(json.dumps({"moved": 0}))
        sys.exit(0)
    proposal = propose_organize(mailbox, headers, "move", access=account.access,
                                folders=mailbox.list_folders(), folder_id=target)
    report = proposal.apply(confirmed=True)
    mailbox.close()
    print(json.dumps({"moved": len(headers), "failed": report.failed}))
    sys.exit(0 if report.ok else 1)
""")


@pytest.fixture
def mover(dovecot, dovecot_user, child_keyring):  # noqa: F811
    """``start()`` runs a child mover to Archive through a FaultProxy (``start.proxy``), so a
    test can hold it where the server answered (the kill point then lasts until the kill)."""
    from tests.servers.faultproxy import FaultProxy

    proxy = FaultProxy(dovecot.port)
    acct = account_for(dovecot, dovecot_user, port=proxy.port)
    set_secret(password_key(acct.id), dovecot_user.password)
    fields = {k: v for k, v in dataclasses.asdict(acct).items() if not isinstance(v, (dict, tuple, list)) or not v}
    env = dict(os.environ, **child_keyring)

    def start() -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(fields)], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

    start.proxy = proxy  # type: ignore[attr-defined]
    try:
        yield start
    finally:
        proxy.close()


def message_ids(client, folder: str) -> list[str]:
    client.select_folder(folder, readonly=True)
    uids = client.search(["ALL"])
    data = client.fetch(uids, ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"]) if uids else {}
    return [email.message_from_bytes(next(v for k, v in item.items() if k.startswith(b"BODY")))["Message-ID"]
            for item in data.values()]


def archived(client) -> int:
    return client.folder_status("Archive", ["MESSAGES"])[b"MESSAGES"]


@pytest.mark.parametrize(("nth", "moved_at_least"), [(1, 1), (2, 150), (4, 301)],
                         ids=["first batch", "second batch", "fourth batch"])
def test_a_bulk_move_killed_part_way_loses_and_doubles_nothing_and_a_rerun_finishes(
        dovecot, dovecot_user, mover, nth, moved_at_least):
    """The child is held where the server has done its ``nth`` batch's MOVE (the proxy withholds
    the server's "Moved UIDs." answer), and killed there once Archive shows it. Polled, the kill
    point was a race: at load 8-12 the child moved every batch between two polls, five runs in a row."""
    with dovecot.client(dovecot_user) as client:
        for n in range(COUNT):
            client.append("INBOX", make_mail(n, subject=f"Report {n:03d}"))
        every = sorted(message_ids(client, "INBOX"))
        assert len(set(every)) == COUNT
        mover.proxy.stall_when_server_sends(b"Moved UIDs.", nth)
        proc = mover()
        deadline = time.monotonic() + BOUND
        try:
            while not (mover.proxy.stalls and archived(client) >= moved_at_least) and proc.poll() is None \
                    and time.monotonic() < deadline:
                time.sleep(0.01)  # polling the condition (the answer held, Archive's count), not a guess at a time
            assert mover.proxy.stalls == 1 and archived(client) >= moved_at_least, proc.communicate(timeout=60)[1]
            proc.send_signal(signal.SIGKILL)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL
        inbox, archive = message_ids(client, "INBOX"), message_ids(client, "Archive")
        # Right after the kill: each message in exactly one folder, none lost, none doubled.
        assert sorted(inbox + archive) == every, (len(inbox), len(archive))
        assert len(archive) >= moved_at_least  # the kill came once the server showed the kill point

        proc = mover()  # the rerun: the list read again, the rest moved
        out, err = proc.communicate(timeout=BOUND)
        assert proc.returncode == 0, err
        assert json.loads(out)["moved"] == len(inbox)
        assert message_ids(client, "INBOX") == []
        assert sorted(message_ids(client, "Archive")) == every  # all there, once each


# -- a server with UIDPLUS and no MOVE: COPY, then STORE \Deleted and UID EXPUNGE ---------------

COPY_CAPABILITY = "IMAP4rev1 LITERAL+ IDLE NAMESPACE UIDPLUS"
COPY_COUNT = 250  # three batches


@pytest.fixture(scope="module")
def dovecot_copy():
    """A Dovecot that offers UIDPLUS but not MOVE: a move is COPY then UID EXPUNGE."""
    from tests.servers.dovecot import DovecotServer

    server = DovecotServer(capability=COPY_CAPABILITY).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def copy_mover(dovecot_copy, child_keyring):  # noqa: F811
    """A child mover on ``dovecot_copy`` through a FaultProxy: ``start(target)`` runs it,
    ``kill_held(held_at, nth)`` runs one to Archive held where the server answered ``held_at``
    for the ``nth`` time (the proxy withholds the answer) and SIGKILLs it there."""
    from tests.servers.faultproxy import FaultProxy

    user = dovecot_copy.add_user()
    proxy = FaultProxy(dovecot_copy.port)
    acct = account_for(dovecot_copy, user, port=proxy.port)
    set_secret(password_key(acct.id), user.password)
    fields = {k: v for k, v in dataclasses.asdict(acct).items() if not isinstance(v, (dict, tuple, list)) or not v}
    env = dict(os.environ, **child_keyring)

    class Mover:
        def start(self, target: str = "Archive") -> subprocess.Popen:
            return subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(fields), target],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, env=env)

        def kill_held(self, held_at: bytes, nth: int) -> None:
            proxy.stall_when_server_sends(held_at, nth)
            proc = self.start()
            deadline = time.monotonic() + BOUND
            while proxy.stalls == 0 and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)  # polling the condition (the proxy held the answer), not a guess at a time
            assert proxy.stalls == 1, proc.communicate(timeout=60)[1]
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=60)
            assert proc.returncode == -signal.SIGKILL

        def rerun(self, target: str = "Archive") -> None:
            proc = self.start(target)
            _out, err = proc.communicate(timeout=BOUND)
            assert proc.returncode == 0, err

    try:
        with dovecot_copy.client(user) as client:
            assert b"MOVE" not in client.capabilities() and b"UIDPLUS" in client.capabilities()
            for n in range(COPY_COUNT):
                client.append("INBOX", make_mail(n, subject=f"Report {n:03d}"))
            yield Mover(), client
    finally:
        proxy.close()


HOLDS = pytest.mark.parametrize("held_at, nth", [(b"Copy completed", 1), (b"Store completed", 2)],
                                ids=["after COPY", "after a STORE Deleted"])


def marked(client, folder: str) -> list[int]:
    client.select_folder(folder, readonly=True)
    return client.search(["KEYWORD", "$MailtriageMove"])


@HOLDS
def test_a_copy_and_expunge_move_killed_between_copy_and_expunge_loses_nothing_and_a_rerun_doubles_nothing(
        copy_mover, held_at, nth):
    """The child is held where the server did a batch's COPY (or marked its originals
    \\Deleted: the second STORE answer) but the EXPUNGE has not come, by a proxy that
    withholds the server's answer, and SIGKILLed there: that batch is in both folders. The
    rerun must finish the move without a second copy of it, and lose nothing."""
    mover, client = copy_mover
    every = sorted(message_ids(client, "INBOX"))
    mover.kill_held(held_at, nth)
    inbox, archive = message_ids(client, "INBOX"), message_ids(client, "Archive")
    assert len(archive) % 100 == 0 and set(inbox) & set(archive)  # a batch is in both folders
    assert sorted(set(inbox + archive)) == every  # nothing lost

    mover.rerun()
    assert message_ids(client, "INBOX") == []
    assert sorted(message_ids(client, "Archive")) == every  # all there, once each
    assert marked(client, "Archive") == []  # no marker left behind


@pytest.mark.parametrize("held_at, nth", [(b"Copy completed", 2), (b"Store completed", 5)],
                         ids=["after the second COPY", "after the second STORE Deleted"])
def test_a_killed_copy_and_expunge_move_rerun_to_another_folder_leaves_no_copy_and_no_marker_behind(
        copy_mover, held_at, nth):
    """The same kill in the second batch, then the user moves the rest to Trash instead: the
    first batch stays in Archive (its move had finished), the rest ends in Trash, each message
    once and as it was (not \\Deleted); the second batch's copies in Archive are gone and no
    folder keeps the marker."""
    mover, client = copy_mover
    every = sorted(message_ids(client, "INBOX"))
    mover.kill_held(held_at, nth)
    inbox, archive = message_ids(client, "INBOX"), message_ids(client, "Archive")
    assert len(archive) == 200 and len(set(inbox) & set(archive)) == 100  # the second batch is in both

    mover.rerun("Trash")
    assert message_ids(client, "INBOX") == []
    kept = message_ids(client, "Archive")
    assert sorted(kept) == sorted(set(archive) - set(inbox))  # the finished batch, not the copies
    assert sorted(kept + message_ids(client, "Trash")) == every  # all there, once each
    assert marked(client, "Archive") == [] and marked(client, "Trash") == []
    client.select_folder("Trash", readonly=True)
    assert client.search(["DELETED"]) == []  # the interrupted expunge's \\Deleted did not travel with the copies
