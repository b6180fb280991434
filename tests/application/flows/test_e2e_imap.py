"""End to end on real parts: a real Dovecot (IMAP), a real aiosmtpd (watched: nothing is
ever sent), a local-files tracker in a real git working copy with a bare remote.

The flows run through the same objects the TUI and the CLI use: SourceSet built from
project.md and the user settings, the tracker from project.md.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import datetime, timedelta, timezone
from email import policy
from pathlib import Path

import pytest

from mailtriage.backends.contract import ThreadId
from mailtriage.backends.imap.account import password_key
from mailtriage.backends.registry import SourceSet
from mailtriage.core.secrets import set_secret
from mailtriage.core.trace import TRACE
from mailtriage.application.flows.alerts import NewReportPoller, run_poll_loop
from mailtriage.application.flows.importer import propose_import
from mailtriage.application.flows.linking import rollup_state
from mailtriage.application.flows.publish import propose_publish
from mailtriage.application.flows.sweep import NO_ACK_PRIMITIVE, open_reader, parse_source, run_sweep
from mailtriage.application.flows.sync import collect_sync, propose_sync
from tests.servers.dovecot import DovecotServer
from tests.application.flows import feedback_mail as fm
from tests.application.flows.conftest import REPORT, mail

LIST = "security@frobnicator.example.org"
TID = ThreadId("imap", REPORT)
NOW = datetime.now(timezone.utc).replace(microsecond=0)


def raw(msg) -> bytes:
    return msg.as_bytes(policy=policy.SMTP)


@pytest.fixture
def imap_env(env, dovecot, dovecot_user, memory_keyring, smtp_server):
    """The git tracker env with an IMAP account (SMTP configured, watched) as the primary source."""
    config_dir = Path(os.environ["MAILTRIAGE_CONFIG_DIR"])  # this test's own (conftest.private_dirs)
    config_dir.mkdir(exist_ok=True)
    (config_dir / "config.toml").write_text(f"""
name = "Sam Security"

[accounts.work]
kind = "imap"
host = "127.0.0.1"
port = {dovecot.port}
security = "plain"
username = "{dovecot_user.name}"
address = "sam@frobnicator.example.org"
access = "draft"
smtp_host = "127.0.0.1"
smtp_port = {smtp_server.port}
smtp_security = "starttls"
""", encoding="utf-8")
    set_secret(password_key("work"), dovecot_user.password)
    smtp_server.add_user(dovecot_user.name, dovecot_user.password)
    env.write_project([("imap", "primary", "yes")], extra={"mail_sources.imap": {"account": "work", "list": LIST}})
    env.dovecot, env.user, env.smtp = dovecot, dovecot_user, smtp_server

    def seed(msg, when=None, folder="INBOX", flags=()):
        return dovecot.append(dovecot_user, folder, raw(msg) if not isinstance(msg, bytes) else msg,
                              flags=flags, when=when)

    env.seed = seed
    seed(mail(REPORT, "Rita Reporter <rita@reporter.example>", "Heap overflow in the frob parser",
              "The parser overflows on a long header.\n", (NOW - timedelta(hours=5)).strftime("%a, %d %b %Y %H:%M:%S +0000"),
              to=LIST), when=NOW - timedelta(hours=5))
    yield env
    # The invariant of every test here: the triage flows never send mail.
    assert smtp_server.log.connections == 0 and smtp_server.log.messages == []


def _sources(env):
    return SourceSet(env.config())


def _propose(env):
    sources = _sources(env)
    return sources, propose_import(sources, env.tracker(), TID)


def _drafts(env):
    with env.dovecot.client(env.user) as client:
        client.select_folder("Drafts", readonly=True)
        ids = client.search(["ALL"])
        return [client.fetch([i], ["BODY.PEEK[]"])[i][b"BODY[]"] for i in ids]


def test_import_twice_writes_one_issue_one_entry_one_draft(imap_env):
    sources, proposal = _propose(imap_env)
    assert [w.kind.value for w in proposal.writes] == ["tracker", "tracker", "draft"]
    lines = []
    unsubscribe = TRACE.subscribe(lines.append)
    draft = {f.label: f for f in proposal.writes[2].fields}
    assert draft["To"].value == "rita@reporter.example"
    assert draft["Cc"].value == LIST and draft["Cc"].marker == "security CC"
    assert proposal.facts["thread_url"].startswith("imap://")
    assert "Hi Rita Reporter," in proposal.writes[2].body and "Sam Security" in proposal.writes[2].body
    try:
        report = proposal.apply(confirmed=True)
    finally:
        unsubscribe()
    sources.close()
    assert report.ok, report.describe()
    assert "APPEND" in _commands(lines)  # the one write to mail: the draft (the trace check can see writes)
    issue = report.written[0][1]["id"]
    drafts = _drafts(imap_env)
    assert len(drafts) == 1 and b"Cc: security@frobnicator.example.org" in drafts[0]
    assert b"In-Reply-To: <report-1@reporter.example>" in drafts[0]

    sources, again = _propose(imap_env)
    sources.close()
    assert again.empty and again.facts["issue"] == issue and again.facts["pending_drafts"] == 1
    assert any(f.label == "Pending draft" for f in again.existing)  # shown instead of a new one
    assert [i["id"] for i in imap_env.tracker().list(state="all").items] == [issue]
    assert len(_drafts(imap_env)) == 1


def test_tracker_write_broken_part_way_then_resumed(imap_env):
    sources, proposal = _propose(imap_env)
    descriptor = imap_env.tracker_root / "tracker-format.yaml"
    good = descriptor.read_text()

    def break_after_first(index, write, result):
        if index == 0:  # the issue exists; now the tracker refuses writes
            descriptor.write_text(good.replace("access_restricted: true", "access_restricted: false"))

    report = proposal.apply(confirmed=True, progress=break_after_first)
    sources.close()
    assert [s for s, _ in report.written] == ['create the tracker issue "Heap overflow in the frob parser"']
    assert report.failed[0] == "status rollup entry Import on the new issue"
    assert report.not_attempted == [f"receipt-of-confirmation draft reply on msgid:{REPORT}"]
    assert _drafts(imap_env) == []

    descriptor.write_text(good)
    sources, resumed = _propose(imap_env)
    issue = report.written[0][1]["id"]
    assert [w.summary for w in resumed.writes] == [f"status rollup entry Import on {issue}",
                                                   f"receipt-of-confirmation draft reply on msgid:{REPORT}"]
    assert resumed.apply(confirmed=True).ok
    sources.close()
    tracker = imap_env.tracker()
    assert [i["id"] for i in tracker.list(state="all").items] == [issue]
    assert [e.action for e in rollup_state(tracker, issue).entries] == ["Import"]
    assert len(_drafts(imap_env)) == 1


def test_sync_a_new_reply_then_publish(imap_env):
    sources, proposal = _propose(imap_env)
    assert proposal.apply(confirmed=True).ok
    sources.close()
    issue = imap_env.tracker().list(state="all").items[0]["id"]
    when = NOW - timedelta(hours=1)
    imap_env.seed(mail("<followup-1@reporter.example>", "Rita Reporter <rita@reporter.example>",
                       "Re: Heap overflow in the frob parser", "Here is a patch. Please credit me.\n",
                       when.strftime("%a, %d %b %Y %H:%M:%S +0000"), to=LIST, in_reply_to=REPORT), when=when)
    sources = _sources(imap_env)
    items = collect_sync(sources, imap_env.tracker())
    sources.close()
    assert [m.message_id for m in items[0].new_messages] == ["<followup-1@reporter.example>"]
    assert any(s.startswith("status (patch)") for s in items[0].signals)
    assert propose_sync(imap_env.tracker(), items).apply(confirmed=True).ok
    assert [e.action for e in rollup_state(imap_env.tracker(), issue).entries] == ["Import", "Sync"]

    review = propose_publish(imap_env.tracker(), imap_env.config())
    fields = {f.label: f.value for f in review.writes[0].fields}
    assert fields["Commit message"] == f"security: import {issue}"  # new file: its Sync rides along
    assert review.apply(confirmed=True).ok
    assert imap_env.remote_log().startswith(f"security: import {issue}\n\nGenerated-by: mailtriage\n")


def test_new_mail_arriving_while_polling_is_seen_through_idle(imap_env):
    sources = _sources(imap_env)
    poller = NewReportPoller(sources)
    stop = threading.Event()
    news, errors, idles = [], [], []

    def on_news(outcome):
        news.append([t.subject for t in outcome.new_threads])
        poller.acknowledge(outcome)
        stop.set()

    # An hour between polls: only IDLE can bring the mail in while the test waits.
    loop = threading.Thread(target=run_poll_loop, args=(poller, on_news),
                            kwargs={"stop": stop, "interval": 3600, "on_error": errors.append})
    unsubscribe = TRACE.subscribe(lambda line: idles.append(line) if line.direction == ">"
                                  and line.text.split()[1:2] == ["IDLE"] else None)
    loop.start()
    try:
        deadline = time.monotonic() + 120  # generous bounds: a loaded machine is slow
        while not (poller.store.path.exists() and idles) and time.monotonic() < deadline:
            time.sleep(0.05)  # the silent baseline is acknowledged and the loop waits (IDLE)
        assert poller.store.path.exists() and idles and news == []
        imap_env.seed(mail("<new-1@reporter.example>", "Nina <nina@reporter.example>", "Another report", "x\n",
                           NOW.strftime("%a, %d %b %Y %H:%M:%S +0000"), to=LIST), when=NOW)
        deadline = time.monotonic() + 120
        while not news and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        unsubscribe()
        stop.set()
        sources.abort()  # an IDLE slice ends at once
        loop.join(timeout=60)
        sources.close()
    assert errors == []
    assert news == [["Another report"]]
    again = NewReportPoller(_sources(imap_env))
    assert not again.poll().has_news  # acknowledged after it was shown


# -- the feedback sweep over real bounces, auto-replies and people ------------------------------

WRITE_COMMANDS = {"STORE", "APPEND", "COPY", "MOVE", "EXPUNGE", "UID STORE", "UID COPY", "UID MOVE", "UID EXPUNGE"}


def _commands(lines) -> list[str]:
    out = []
    for line in lines:
        if line.direction != ">" or not line.channel.startswith("imap"):
            continue
        parts = line.text.split()
        if len(parts) >= 2:
            cmd = parts[1].upper()
            if cmd == "UID" and len(parts) >= 3:
                cmd = f"UID {parts[2].upper()}"
            out.append(cmd)
    return out


def _seed_corpus(env, folder="Feedback", ack=(), closeout=()):
    old, when = fm.before_cursor()
    env.seed(old, when=when, folder=folder)
    for name, _expected, data, received in fm.corpus():
        flags = tuple(["$MailtriageAck"] if name in ack else []) + tuple(["$MailtriageCloseout"] if name in closeout
                                                                         else [])
        env.seed(data, when=received, folder=folder, flags=flags)


def _flags(env, folder):
    with env.dovecot.client(env.user) as client:
        client.select_folder(folder, readonly=True)
        data = client.fetch(client.search(["ALL"]), ["FLAGS"])
    # \Recent belongs to a session (the first to select the folder sees it), not to the message.
    return {uid: sorted(f for f in item[b"FLAGS"] if f != b"\\Recent") for uid, item in data.items()}


def test_sweep_classifies_a_real_mailbox_and_never_writes(imap_env):
    _seed_corpus(imap_env, ack=("customer plain",), closeout=("customer with attachment",))
    before = _flags(imap_env, "Feedback")
    lines = []
    unsubscribe = TRACE.subscribe(lines.append)
    try:
        source = parse_source("work/Feedback")
        result = run_sweep(open_reader(source), entry="email:feedback", cursor=fm.CURSOR,
                           source=source.describe()).to_json()
    finally:
        unsubscribe()
    assert result["available"] and result["ack_primitive"] and result["notices"] == []
    expected = {name: e for name, e, _, _ in fm.corpus()}
    people = [i["id"] for i in result["items"]]
    assert people == ["<human-1@customer.example>", "<human-2@users.example>", "<human-3@customer.example>",
                      "<human-4@customer.example>", "<human-5@evil.example>"]
    assert sorted(s["reason"] for s in result["skipped"]) == sorted(e for e in expected.values() if e != "item")
    acks = {i["id"]: (i["existing_ack"], i["existing_closeout"], i["ack_deferred"]) for i in result["items"]}
    assert acks["<human-1@customer.example>"] == (True, False, False)
    assert acks["<human-4@customer.example>"] == (False, True, False)
    assert acks["<human-5@evil.example>"] == (False, False, False)  # its text asks for an ack: not a source
    assert result["items"][0]["origin"].startswith(f"imap://{imap_env.user.name}@127.0.0.1:")
    sent = _commands(lines)
    assert "SELECT" in sent and "UID FETCH" in sent and "UID SEARCH" in sent, sent  # the trace saw the session
    assert not WRITE_COMMANDS & set(sent), sent
    assert _flags(imap_env, "Feedback") == before  # not even \Seen changed
    assert result["cursor"] == "2026-11-02T08:00:00Z"


def test_sweep_with_cap_and_a_query(imap_env):
    _seed_corpus(imap_env)
    source = parse_source("work/Feedback?from=customer.example")
    result = run_sweep(open_reader(source), entry="e", cursor=fm.CURSOR, source=source.describe(), cap=2).to_json()
    assert [i["id"] for i in result["items"]] == ["<human-1@customer.example>", "<human-3@customer.example>"]
    assert result["truncated"] is True
    assert "<mdn-1@customer.example>" in [s["id"] for s in result["skipped"]]


def test_sweep_without_a_way_to_reach_the_mailbox(imap_env):
    set_secret(password_key("work"), "wrong password")
    source = parse_source("work/Feedback")
    result = run_sweep(open_reader(source), entry="e", cursor=fm.CURSOR, source=source.describe()).to_json()
    assert result["notices"] == ["Email tools unavailable — source skipped this run."]
    assert result["available"] is False and result["items"] == []
    source = parse_source("nobody/INBOX")
    result = run_sweep(open_reader(source), entry="e", cursor=fm.CURSOR, source=source.describe()).to_json()
    assert result["notices"] == ["Email tools unavailable — source skipped this run."]


class AclDovecot(DovecotServer):
    """A Dovecot with per-folder ACLs, so a folder can deny keywords to its owner."""

    def _config(self) -> str:
        return super()._config() + "\nmail_plugins = $mail_plugins acl\nplugin {\n  acl = vfile\n}\n"


@pytest.fixture(scope="module")
def acl_dovecot():
    server = AclDovecot().start()
    try:
        yield server
    finally:
        server.stop()


def sweep_under_acl(server, account: str, rights: str) -> dict:
    """Sweep a Feedback folder whose owner has only ``rights`` (a Dovecot ACL) over real IMAP."""
    user = server.add_user()
    for name, _e, data, received in fm.corpus():
        server.append(user, "Feedback", data, when=received)
    (user.maildir / ".Feedback" / "dovecot-acl").write_text(f"owner {rights}\n")
    config_dir = Path(os.environ["MAILTRIAGE_CONFIG_DIR"])
    config_dir.mkdir(exist_ok=True)
    (config_dir / "config.toml").write_text(f"""
[accounts.{account}]
host = "127.0.0.1"
port = {server.port}
security = "plain"
username = "{user.name}"
""", encoding="utf-8")
    set_secret(password_key(account), user.password)
    source = parse_source(f"{account}/Feedback")
    return run_sweep(open_reader(source), entry="e", cursor=fm.CURSOR, source=source.describe()).to_json()


def test_sweep_where_keywords_cannot_be_kept_marks_every_item_deferred(acl_dovecot, memory_keyring):
    # The owner may read and set \Seen here, but not store keywords: no \* in PERMANENTFLAGS.
    result = sweep_under_acl(acl_dovecot, "ro", "lrs")
    assert result["available"] is True and result["ack_primitive"] is False
    assert result["notices"] == [NO_ACK_PRIMITIVE]
    assert len(result["items"]) == 5
    assert all(i["ack_deferred"] and i["existing_ack"] is None for i in result["items"])


def test_sweep_reads_a_folder_the_server_grants_only_read_only(acl_dovecot, memory_keyring):
    # Lookup and read only: Dovecot answers SELECT with [READ-ONLY]; the folder must still be read.
    result = sweep_under_acl(acl_dovecot, "ro2", "lr")
    assert result["available"] is True and result["ack_primitive"] is False
    assert result["notices"] == [NO_ACK_PRIMITIVE]
    assert len(result["items"]) == 5


def test_every_flow_from_the_command_line_and_nothing_is_sent(imap_env, capsys, monkeypatch):
    import io
    import json
    import sys

    from mailtriage.cli.main import main

    def cli(*args):
        monkeypatch.setattr(sys, "stdin", io.StringIO(""))
        code = main(["--project", str(imap_env.project), *args])
        out, err = capsys.readouterr()
        assert code == 0, err
        return json.loads(out)

    assert cli("poll")["baseline"] is True
    doc = cli("import", REPORT, "--yes")  # a bare Message-ID takes the imap kind
    assert doc["report"]["written"][2] == f"receipt-of-confirmation draft reply on msgid:{REPORT}"
    assert [t["subject"] for t in cli("poll")["new_threads"]] == []
    when = NOW - timedelta(minutes=30)
    imap_env.seed(mail("<followup-9@reporter.example>", "Rita Reporter <rita@reporter.example>",
                       "Re: Heap overflow in the frob parser", "CVE-2026-4242 please.\n",
                       when.strftime("%a, %d %b %Y %H:%M:%S +0000"), to=LIST, in_reply_to=REPORT), when=when)
    assert [t["subject"] for t in cli("poll")["updated_threads"]] == ["Heap overflow in the frob parser"]
    assert cli("sync", "--add-label", "1=valid", "--yes")["report"]["ok"] is True
    assert cli("publish", "--yes")["results"][0]["pushed"] is True
    _seed_corpus(imap_env)
    assert len(cli("sweep", "--source", "work/Feedback", "--cursor", "2026-11-02T08:00:00Z",
                   "--entry", "email:feedback")["items"]) == 5
    assert imap_env.smtp.log.connections == 0 and imap_env.smtp.log.messages == []
