"""Importing an encrypted report: the decrypted text goes only into an access-restricted tracker,
and the proposal says the text came from an encrypted mail (a real git local-files tracker)."""

from __future__ import annotations

from mailtriage.application.flows.reply import ReplyFlow
from mailtriage.application.flows.sync import SyncFlow
from mailtriage.application.project import Project
from mailtriage.application.flows.importer import ImportFlow
from mailtriage.application.flows.pgp_reply import ENCRYPTED_IMPORT
from mailtriage.application.flows.proposals import BlockedBy
from tests.application.flows.conftest import env, env_template, private_dirs  # noqa: F401 - the workflow tests' git tracker fixtures

from .conftest import entity, pgp_mime_encrypted, plain
from .test_cli import write_mbox

SECRET = "frob_parse() trusts the 16-bit length field"


def _project(env, homes, raws):
    write_mbox(env.project / "security.mbox", raws)
    env.write_project([("mbox", "primary", "yes")], extra={
        "mail_sources.mbox": {"path": "security.mbox", "list": "security@example.org"},
        "security_list": "security@example.org",
        "pgp.team_key": homes.fprs["team"]})
    config = env.project.parent.parent / "config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text(f'[pgp]\ngnupg_home = "{homes.user}"\n', encoding="utf-8")
    return Project.open(env.project)


def test_import_of_an_encrypted_report_says_so_and_writes_to_the_restricted_tracker(env, homes):
    project = _project(env, homes, [pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team", sign="reporter"))])
    try:
        tid = project.thread_id("msgid:<r1@example.net>")
        proposal = ImportFlow(project).propose(tid)
        assert ENCRYPTED_IMPORT in proposal.warnings
        assert proposal.facts["from_encrypted_mail"] is True
        assert "ENCRYPTED mail" in proposal.render_text()
        report = proposal.apply(confirmed=True)
        assert report.ok, report.describe()
    finally:
        project.close()
    written = "".join(p.read_text(encoding="utf-8") for p in env.tracker_root.rglob("*.md"))
    assert "Report: heap overflow" in written  # the issue is there, in the access-restricted tracker
    assert SECRET not in written  # the decrypted body stays in the mail


def test_import_of_a_clear_report_says_nothing_of_encryption(env, homes):
    project = _project(env, homes, [plain("a clear report")])
    try:
        proposal = ImportFlow(project).propose(project.thread_id("msgid:<r1@example.net>"))
        assert ENCRYPTED_IMPORT not in proposal.warnings and "from_encrypted_mail" not in proposal.facts
    finally:
        project.close()


def test_sync_of_an_encrypted_reply_says_so(env, homes):
    report = pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team"))
    project = _project(env, homes, [report])
    try:
        proposal = ImportFlow(project).propose(project.thread_id("msgid:<r1@example.net>"))
        assert proposal.apply(confirmed=True).ok
    finally:
        project.close()
    reply = pgp_mime_encrypted(homes.encrypt(entity("Fixed in 2.0.1, thanks."), "team"), mid="r2",
                               extra="In-Reply-To: <r1@example.net>\r\nReferences: <r1@example.net>\r\n")
    reply = reply.replace(b"Tue, 01 Dec 2026 10:00:00", b"Tue, 01 Dec 2026 11:00:00")
    project = _project(env, homes, [report, reply])
    try:
        proposal = SyncFlow(project).propose()
        assert any("new mail was ENCRYPTED" in w for w in proposal.warnings), proposal.render_text()
        text = proposal.render_text()
        assert "(encrypted mail)" in text and "Fixed in 2.0.1" in text
    finally:
        project.close()


def test_the_hidden_subject_of_an_encrypted_report_never_becomes_the_issue_title(env, homes):
    hidden = "RCE in frob 2.3 via crafted header"
    inner = (b'Content-Type: text/plain; charset=utf-8; protected-headers="v1"\r\n'
             + f"Subject: {hidden}\r\n\r\n{SECRET}\r\n".encode())
    project = _project(env, homes, [pgp_mime_encrypted(homes.encrypt(inner, "team"), subject="...")])
    try:
        proposal = ImportFlow(project).propose(project.thread_id("msgid:<r1@example.net>"))
        assert hidden not in proposal.render_text()
        assert proposal.apply(confirmed=True).ok
    finally:
        project.close()
    written = "".join(p.read_text(encoding="utf-8") for p in env.tracker_root.rglob("*.md"))
    assert hidden not in written


def test_a_forward_and_a_reply_all_are_encrypted_to_their_actual_recipients(env, homes):
    from mailtriage.application.flows.compose import FORWARD, REPLY_ALL, ComposeForm

    from .conftest import gpg

    project = _project(env, homes, [pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team", sign="reporter"))])
    try:
        thread = project.read_thread(project.thread_id("msgid:<r1@example.net>")).value
        flow = ReplyFlow(project)
        forward = ComposeForm(FORWARD, to=("sam@example.com",), cc=("security@example.org",), subject="Fwd: x",
                              body="see below\n")
        blocked = flow.propose(thread, form=forward)
        assert blocked.blocked.reason is BlockedBy.ENCRYPTION, blocked.render_text()
        assert "no usable OpenPGP key for sam@example.com" in blocked.blocked.text

        # What K does after confirmation: import Sam's key into the user's keyring.
        project.pgp.gpg.import_keys(gpg(homes.world, "--export", homes.fprs["stranger"]).stdout)
        ok = ReplyFlow(project).propose(thread, form=forward)
        assert ok.facts["encryption"] == "encrypted", ok.render_text()
        assert set(ok.facts["encrypted_to"]) == {homes.fprs["stranger"], homes.fprs["team"]}  # not Rita's

        both = ComposeForm(REPLY_ALL, to=("rita@example.net",), cc=("sam@example.com", "security@example.org"),
                           subject="Re: x", body="thanks\n")
        all_ = ReplyFlow(project).propose(thread, form=both)
        assert set(all_.facts["encrypted_to"]) == {homes.fprs["reporter"], homes.fprs["stranger"], homes.fprs["team"]}
    finally:
        project.close()
