"""Import a report: mbox archive (reads) + local-files tracker in a real git working copy."""

from __future__ import annotations

import pytest

from tests.servers.fixtures import memory_keyring  # noqa: F401

from mailtriage.backends.contract import ThreadId
from mailtriage.backends.registry import SourceSet
from mailtriage.application.flows.importer import propose_import
from mailtriage.application.flows.linking import THREAD_FIELD, rollup_state
from tests.application.flows.conftest import REPORT, mail, report_thread, write_mbox

TID = ThreadId("mbox", REPORT)


def _propose(env, thread_id=TID, **kw):
    sources = SourceSet(env.config())
    return propose_import(sources, env.tracker(), thread_id, sender_name="Sam Security", **kw)


def _write_fields(write):
    return {f.label: f.value for f in write.fields}


@pytest.fixture
def github(mbox_env, memory_keyring):
    """A GitHub emulator as the project's tracker (its token in the keyring), the mbox archive read."""
    from mailtriage.core.origins import secret_key
    from mailtriage.core.secrets import set_secret
    from tests.trackers.servers import GitHubServer

    server = GitHubServer().start()
    try:
        set_secret(secret_key("github", server.url, server.repo), server.token)
        mbox_env.write_project([("mbox", "primary", "yes")], extra={
            "mail_sources.mbox": {"path": "security.mbox"},
            "tracker": {"platform": "github", "github": {"repo": server.repo, "api_url": server.url},
                        "labels": ["needs-triage"], "user": "tess"}})
        yield server
    finally:
        server.stop()


def test_proposal_holds_issue_rollup_receipt_and_recap(mbox_env):
    proposal = _propose(mbox_env)
    assert proposal.blocked is None
    assert [w.summary for w in proposal.writes] == [
        'create the tracker issue "Heap overflow in the frob parser"',
        "status rollup entry Import on the new issue",
    ]
    issue = _write_fields(proposal.writes[0])
    url = mbox_env.archive.resolve().as_uri() + "#%3Creport-1%40reporter.example%3E"
    assert proposal.facts["thread_url"] == url
    assert issue["Labels"] == "needs triage"
    body = issue["Body"]
    assert f"### Security mailing list thread\n\n{url}\n" in body
    assert "### Reporter\n\nRita Reporter (rita@reporter.example)\n" in body
    assert "### Received\n\n2026-09-01 10:00 UTC\n" in body
    assert "### Affected versions\n\n### CVE\n" in body  # left blank for the triager
    entry = _write_fields(proposal.writes[1])["Entry"]
    assert f"Thread: `msgid:{REPORT}`" in entry and "Covers mail up to: 2026-09-01T10:00:00Z" in entry
    # mbox cannot write drafts: the receipt is shown as a preview, with the security CC
    preview = {f.label: f for f in proposal.preview}
    assert preview["To"].value == "rita@reporter.example"
    assert preview["Cc"].value == "security@frobnicator.example.org" and preview["Cc"].marker == "security CC"
    assert preview["Subject"].value == "Re: Heap overflow in the frob parser"
    assert preview["Body"].value == ("Hi Rita Reporter,\n\nThanks for \"Heap overflow in the frob parser\" — the "
                                     "Frobnicator team (security@frobnicator.example.org) has it.\n\nSam Security\n")
    assert any("no backend available for create_draft" in n for n in proposal.notes)
    recap = [r.summary() if hasattr(r, "summary") else r for r in proposal.recap]
    assert "read_thread → mbox (primary)" in recap
    assert "thread_url → mbox (primary)" in recap
    assert any(r.startswith("create_draft") or "create_draft" in r for r in recap)
    assert any(r.startswith("tracker → local-files") for r in recap)
    text = proposal.render_text()
    assert "security CC" in text and "would write (no backend can write it)" in text


def test_apply_then_import_again_finds_the_issue(mbox_env):
    report = _propose(mbox_env).apply(confirmed=True)
    assert report.ok, report.describe()
    created = report.written[0][1]["id"]
    tracker = mbox_env.tracker()
    assert tracker.field_get(created, THREAD_FIELD)["value"].startswith("file://")
    state = rollup_state(tracker, created)
    assert [e.action for e in state.entries] == ["Import"] and state.entries[0].user == "tess"
    assert state.thread_id() == TID

    again = _propose(mbox_env)
    assert again.empty and again.facts["issue"] == created and again.facts["imported"] is True
    assert any("already in the tracker as " + created in n for n in again.notes)
    assert len(tracker.list(state="all").items) == 1


def test_the_title_says_what_an_import_of_an_imported_thread_proposes(mbox_env):
    """An imported thread: ``i`` proposes only the receipt draft (or nothing), and the title
    says so instead of "Import report:"."""
    assert _propose(mbox_env).title == "Import report: Heap overflow in the frob parser"
    created = _propose(mbox_env).apply(confirmed=True).written[0][1]["id"]
    nothing = _propose(mbox_env)  # mbox drafts nothing: the receipt is a preview
    assert nothing.empty and nothing.title == f"Imported already as {created}: Heap overflow in the frob parser"
    (mbox_env.project / "Mail").mkdir()
    mbox_env.write_project([("mbox", "primary", "yes"), ("drafts", "preferred for create_draft, list_drafts", "no")],
                           extra={"mail_sources.mbox": {"path": mbox_env.archive.name,
                                                        "list": "security@frobnicator.example.org"},
                                  "mail_sources.drafts": {"kind": "maildir", "path": "Mail",
                                                          "address": "sam@frobnicator.example.org"}})
    receipt = _propose(mbox_env)
    assert [w.heading for w in receipt.writes] == ["Save draft"], receipt.render_text()
    assert receipt.title == (f"Receipt draft ({created} imported already): Heap overflow in the frob parser")


def _set_restricted(env, value: bool) -> None:
    path = env.tracker_root / "tracker-format.yaml"
    text = path.read_text()
    old, new = ("true", "false") if not value else ("false", "true")
    path.write_text(text.replace(f"access_restricted: {old}", f"access_restricted: {new}"))


def test_failure_part_way_reports_exactly_and_a_rerun_completes_without_duplicates(mbox_env):
    proposal = _propose(mbox_env)
    # Between the two writes the tracker starts refusing writes (its descriptor changes).
    report = proposal.apply(confirmed=True, progress=lambda i, w, r: _set_restricted(mbox_env, False))
    assert not report.ok
    assert [s for s, _ in report.written] == ['create the tracker issue "Heap overflow in the frob parser"']
    assert report.failed[0] == "status rollup entry Import on the new issue"
    assert "access_restricted" in report.failed[1]
    assert report.not_attempted == []
    created = report.written[0][1]["id"]
    assert rollup_state(mbox_env.tracker(), created).entries == ()

    _set_restricted(mbox_env, True)
    resumed = _propose(mbox_env)
    assert [w.summary for w in resumed.writes] == [f"status rollup entry Import on {created}"]
    assert resumed.apply(confirmed=True).ok
    tracker = mbox_env.tracker()
    assert [i["id"] for i in tracker.list(state="all").items] == [created]
    assert [e.action for e in rollup_state(tracker, created).entries] == ["Import"]


def test_stale_proposal_applied_after_another_import_writes_no_duplicate(mbox_env):
    first, second = _propose(mbox_env), _propose(mbox_env)
    assert first.apply(confirmed=True).ok
    report = second.apply(confirmed=True)  # made before the first was applied
    assert report.ok
    assert all(result.get("existing") for _, result in report.written)
    tracker = mbox_env.tracker()
    issue = tracker.list(state="all").items
    assert len(issue) == 1
    assert [e.action for e in rollup_state(tracker, issue[0]["id"]).entries] == ["Import"]


def test_two_threads_two_issues(mbox_env):
    other = "<report-2@elsewhere.example>"
    write_mbox(mbox_env.archive, [mail(other, "Olga <olga@elsewhere.example>", "XSS in the admin page", "x\n",
                                       "Thu, 03 Sep 2026 08:00:00 +0000")])
    assert _propose(mbox_env).apply(confirmed=True).ok
    assert _propose(mbox_env, ThreadId("mbox", other)).apply(confirmed=True).ok
    titles = sorted(i["title"] for i in mbox_env.tracker().list(state="all").items)
    assert titles == ["Heap overflow in the frob parser", "XSS in the admin page"]


def test_hostile_subject_and_name_stay_inert(mbox_env):
    evil = "<evil@attacker.example>"
    write_mbox(mbox_env.archive, [mail(evil, '"### CVE" <x@attacker.example>',
                                       "Bug \u202egnp.exe\u200b in \x1b[31mparser", "x\n",
                                       "Thu, 03 Sep 2026 08:00:00 +0000")])
    proposal = _propose(mbox_env, ThreadId("mbox", evil))
    fields = _write_fields(proposal.writes[0])
    assert fields["Title"] == "Bug gnp.exe in [31mparser"
    assert proposal.apply(confirmed=True).ok
    issue = mbox_env.tracker().list(state="all").items[0]["id"]
    tracker = mbox_env.tracker()
    assert tracker.field_get(issue, "CVE")["value"] == ""  # the sender's name did not forge a field
    assert "\\#\\#\\# CVE" in tracker.field_get(issue, "Reporter")["value"]


def test_sender_that_is_not_one_plain_address_gets_no_receipt(mbox_env):
    # An encoded word standing alone in From: decodes to two addresses once a draft's
    # To header is serialised; the reporter's mail must not pick the draft's recipients.
    import base64
    from email import message_from_bytes, policy

    word = "=?utf-8?b?" + base64.b64encode(b"evil@attacker.example, rita@reporter.example").decode() + "?="
    root = "<encoded-from@attacker.example>"
    raw = (f"Message-ID: {root}\r\nFrom: {word}\r\nTo: security@frobnicator.example.org\r\n"
           "Subject: Heap overflow\r\nDate: Tue, 01 Sep 2026 10:00:00 +0000\r\n\r\nDetails.\r\n").encode()
    write_mbox(mbox_env.archive, [message_from_bytes(raw, policy=policy.default)])
    proposal = _propose(mbox_env, ThreadId("mbox", root))
    assert any(w.startswith("receipt draft omitted:") and "not one plain address" in w for w in proposal.warnings)
    assert not any(f.label == "To" for f in proposal.preview)
    assert len(proposal.writes) == 2  # the tracker part goes on


def test_undeclared_import_label_is_left_out_with_a_warning(mbox_env):
    mbox_env.write_project([("mbox", "primary", "yes")], extra={
        "mail_sources.mbox": {"path": "security.mbox"}, "import.labels": ["valid", "urgent"]})
    proposal = _propose(mbox_env)
    assert _write_fields(proposal.writes[0])["Labels"] == "valid"
    assert any("'urgent'" in w and "tracker.labels" in w for w in proposal.warnings)


def test_no_security_cc_blocks_the_receipt_only(mbox_env):
    mbox_env.write_project([("mbox", "primary", "yes")], extra={
        "mail_sources.mbox": {"path": "security.mbox"}, "organization": None, "security_list": None})
    proposal = _propose(mbox_env)
    assert proposal.blocked is None
    assert len(proposal.writes) == 2
    assert any("receipt draft omitted" in w for w in proposal.warnings)
    assert proposal.facts["security_cc"] is None


def test_mandatory_source_down_blocks_everything(mbox_env):
    mbox_env.archive.unlink()
    proposal = _propose(mbox_env)
    assert proposal.blocked and "mandatory backend mbox unavailable" in proposal.blocked.text
    assert proposal.empty
    with pytest.raises(PermissionError):
        proposal.apply(confirmed=True)
    assert mbox_env.tracker().list(state="all").items == []


def test_broken_template_falls_back_with_a_note(mbox_env):
    (mbox_env.project / "templates" / "receipt.md").write_text("Hi {reporter_name, {oops\n")
    proposal = _propose(mbox_env)
    assert any("not a valid template" in n for n in proposal.notes)
    body = {f.label: f.value for f in proposal.preview}["Body"]
    assert body.startswith("Hi Rita Reporter,")


def test_receipt_answers_the_reporter_even_after_a_team_reply(mbox_env):
    write_mbox(mbox_env.archive, report_thread(with_reply=True)[1:])
    proposal = _propose(mbox_env)
    preview = {f.label: f.value for f in proposal.preview}
    assert preview["To"] == "rita@reporter.example"
    assert preview["In-Reply-To"] == REPORT
    assert any("replies from sam@frobnicator.example.org" in n for n in proposal.notes)


def test_import_twice_on_a_github_tracker(mbox_env, github):
    server = github
    first = _propose(mbox_env)
    assert _write_fields(first.writes[0])["Labels"] == "needs-triage"
    assert first.apply(confirmed=True).ok
    again = _propose(mbox_env)
    assert again.empty and again.facts["imported"] is True
    assert len(server.issues) == 1


def test_finding_a_threads_issue_follows_the_candidates_not_the_tracker_size(tmp_path):
    """An import looks up the thread's issue twice; with thousands of issues that must not
    read every issue file. Counted, not timed: the issue files the lookup opens (Python's
    audit hook for ``open``), beside one ``list --search`` scan that reads them all."""
    import sys

    from benchmarks.bench_workflows import generate, pony_thread
    from mailtriage.backends.contract import ThreadId
    from mailtriage.core.projectconfig import load_project
    from mailtriage.trackers.registry import open_tracker
    from mailtriage.application.flows.linking import _search_words, find_issue_for_thread

    count = 2000
    key = generate(tmp_path / "big", count)
    tracker = open_tracker(load_project(tmp_path / "big" / "project"))
    wanted = pony_thread(count // 2)
    assert find_issue_for_thread(tracker, key, wanted) == f"SEC-{count // 2:04d}"
    tracker.list(state="all", limit=1)  # both warm

    root = str(tracker.root)
    opened: list[str] | None = None

    def watch(event, args):  # audit hooks stay for the process: only counts while a list is set
        if opened is not None and event == "open" and isinstance(args[0], str) and args[0].startswith(root) \
                and args[0].endswith(".md"):
            opened.append(args[0])

    sys.addaudithook(watch)

    def issue_files_read(fn) -> int:
        nonlocal opened
        opened = []
        try:
            fn()
            return len(opened)
        finally:
            opened = None

    new_key = "https://lists.example.org/thread/new?security@example.org"
    scan = issue_files_read(lambda: tracker.list(state="all", search=_search_words(new_key)))
    ours = issue_files_read(lambda: find_issue_for_thread(tracker, new_key, ThreadId("ponymail", "0new0hash0", "<new@x>")))
    assert scan >= count // 2, scan  # the scan this is measured beside does read the issues
    assert ours <= 5, (ours, scan)
    assert find_issue_for_thread(tracker, key, wanted) == f"SEC-{count // 2:04d}"
    # The index follows the files: an issue written behind its back is found, an edited link moves.
    path = tracker.root / f"SEC-{count // 2:04d}.md"
    moved = "https://lists.example.org/thread/moved?security@example.org"
    path.write_text(path.read_text(encoding="utf-8").replace(key, moved), encoding="utf-8")
    assert find_issue_for_thread(tracker, moved) == f"SEC-{count // 2:04d}"
    assert find_issue_for_thread(tracker, key) is None
    # ... and through the rollup's thread line, as before, when the link changed.
    assert find_issue_for_thread(tracker, key, wanted) == f"SEC-{count // 2:04d}"


def test_a_concurrent_runs_duplicate_not_yet_folded_is_never_the_answer(mbox_env, github):
    """CI, stop 46: run B created #2 for a thread #1 already held, and before B folded #2 run C's
    lookup found #2 (the newest issue, read by the recent check) and reported it. A lookup that
    finds an issue answers the lowest-numbered issue holding the thread, which B's fold keeps."""
    server = github
    server.search_lag = 3600.0  # neither issue is in search: only the direct reads find them
    first = _propose(mbox_env)
    assert first.apply(confirmed=True).ok
    first_issue = server.issues[1]
    copy = server.add_issue(first_issue["title"], first_issue["body"])  # B's issue, its fold still to come
    server.comments[copy["number"]] = [dict(c) for c in server.comments[1]]
    first_issue["updated_at"] = "2026-01-01T00:00:00Z"  # older: the recent check reads #2 first
    again = _propose(mbox_env)
    assert again.facts["issue"] == "1" and again.facts["imported"] is True and again.empty


def test_a_thread_sharing_its_archive_link_with_an_older_issues_thread_finds_its_own_issue(mbox_env, github):
    """Two threads can share an archive link (find_issue_for_thread): an issue whose rollup names
    another thread of the same kind is not the thread's. The lookup that answers the lowest-
    numbered issue holding the link (a concurrent run's duplicate not yet folded) passed over
    that rule: a thread whose issue (#2, just updated) shares its link with an older thread's
    issue (#1) was answered #1, and its import went to the other thread's issue."""
    from mailtriage.application.flows.linking import find_issue_for_thread
    server = github
    assert _propose(mbox_env).apply(confirmed=True).ok  # #1, the report thread's issue
    first = server.issues[1]
    other = ThreadId("mbox", "<another-thread@example.org>")
    second = server.add_issue(first["title"], first["body"])  # another thread's, the same link
    server.comments[second["number"]] = [dict(c, body=c["body"].replace(str(TID), str(other)))
                                         for c in server.comments[1]]
    tracker = mbox_env.tracker()
    assert rollup_state(tracker, "2").thread_id() == other  # (the copy names the other thread)
    key = tracker.field_get("1", THREAD_FIELD)["value"]
    assert find_issue_for_thread(tracker, key, TID) == "1"
    assert find_issue_for_thread(tracker, key, other) == "2"
    # Neither in search (the direct reads of the recent issues find them), #1 the newest:
    server.search_lag = 3600.0
    first["updated_at"] = "2999-01-01T00:00:00Z"
    assert find_issue_for_thread(tracker, key, other) == "2"
    assert find_issue_for_thread(tracker, key, TID) == "1"
