"""The bundled archive holds every thread and every awkward case the demo promises.

Checked with the stdlib only (mailbox + email); see conftest.py.
"""

from __future__ import annotations

import mailbox
import re
from datetime import date, timezone

import pytest

from mailtriage.demo import build_demo
from mailtriage.demo.threads import LIST_ADDRESS, LIST_ID, TEAM, THREADS

EXPECTED_MESSAGES = 124

# The intended inventory: root subject (start) -> number of messages in the thread.
EXPECTED_THREADS = {
    "Path traversal in archive import": 7,
    "Remote code execution via unsafe deserialization": 6,
    "Stored XSS in the admin console": 4,
    "SSRF in the remote resource fetcher": 4,
    "Déni de service : archive TAR imbriquée": 3,
    "Authentication bypass: empty bearer token": 6,
    "RCE: an administrator can upload a plugin": 3,
    "Arbitrary file write via ../ entries": 4,
    "Frobnicator 3.4.1 bundles yamlette": 3,
    "Request for pre-disclosure patches": 3,
    "Reflected XSS in /console/search": 3,
    "[DRAFT] Apache Frobnicator 3.4.2 security release": 3,
    "XXE in the pipeline definition importer": 3,
    "Critical vulnerability: Clickjacking": 2,
    "[ScanBot] 47 findings": 2,
    "Log injection via CR/LF": 3,
    "Re: Frobnicator 3.3.x end of life": 2,
    "Docker image ships with default admin/admin": 3,
    "Session fixation after SSO login": 4,
    "Insecure temporary file in frob-cli export": 3,
    "Prototype pollution in the web console": 3,
    "Privilege escalation: read-only role": 4,
    "Database password logged at DEBUG level": 2,
    "Host header injection in password reset links": 3,
    "\x1b[31m\x1b[1mURGENT": 2,
    "Web cache poisoning via X-Forwarded-Host": 2,
    "Sandbox escape in the report template engine": 6,
    "Unauthenticated /metrics endpoint": 2,
    "JWT with alg=none": 3,
    "ReDoS in the route matcher": 2,
    "Open redirect in the login page": 3,
    "How to report an issue in the Frobnicator Helm chart": 2,
    "Boost your project": 1,
    "Invoice #88341 overdue": 1,
    "Possible RCE in frob-cli plugin install": 2,
    "Undelivered Mail Returned to Sender": 1,
    "Request smuggling with chunked uploads": 4,
    "CSRF in the console's API token creation form": 2,
    "Symlink following in the workspace export": 2,
    "Is CVE-2026-41102 fixed in the 3.3 line?": 2,
    "3.5.0 security release plan": 2,
    "Heap buffer overflow in the frob-native thumbnail decoder": 2,
}
TEAM_ADDRESSES = {p.address for p in TEAM}


def _thread(threads, subject_start):
    found = [ms for ms in threads.values() if str(ms[0]["Subject"]).startswith(subject_start)]
    assert len(found) == 1, f"{len(found)} threads start with {subject_start!r}"
    return found[0]


def _sender(message) -> str:
    return message["From"].addresses[0].addr_spec


def _automatic(message) -> bool:
    return str(message.get("Auto-Submitted", "no")).lower() != "no"


# -- the file as mbox ------------------------------------------------------------------


def test_stdlib_mbox_reads_the_expected_number_of_messages(archive_path):
    box = mailbox.mbox(archive_path, create=False)
    try:
        assert len(box) == EXPECTED_MESSAGES
    finally:
        box.close()
    raw = archive_path.read_bytes()
    # One separator line per message: a body line "From ..." was quoted as ">From ...".
    assert len(re.findall(rb"^From \S+ \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}$", raw, re.M)) == EXPECTED_MESSAGES
    assert b"\n>From the attacker's point of view" in raw


def test_every_message_parses_cleanly_and_every_text_part_decodes(messages):
    for message in messages:
        assert not message.defects, (message["Subject"], message.defects)
        for part in message.walk():
            assert not part.defects, (message["Subject"], part.defects)
            if part.get_content_maintype() == "text":
                assert isinstance(part.get_content(), str)


def test_every_message_came_through_the_list(messages):
    for message in messages:
        assert message["List-Id"] == LIST_ID
        assert message["Received"] is not None
        assert message["Authentication-Results"] is not None
        assert message["Date"] is not None


def test_dates_span_september_to_late_november_2026(messages):
    dates = [message["Date"].datetime for message in messages]
    assert all(d.tzinfo is not None for d in dates)
    utc = sorted(d.astimezone(timezone.utc) for d in dates)
    assert utc[0].date() >= date(2026, 9, 1)
    assert utc[-1].date() == date(2026, 11, 27)
    # The archive is written in arrival order, as a list archive is.
    in_file_order = [d.astimezone(timezone.utc) for d in dates]
    assert in_file_order == utc


# -- threads -----------------------------------------------------------------------------


def test_every_intended_thread_is_there_with_its_messages(threads):
    assert len(threads) == len(EXPECTED_THREADS)
    for subject_start, count in EXPECTED_THREADS.items():
        assert len(_thread(threads, subject_start)) == count, subject_start


def test_every_generated_message_id_is_in_the_archive_and_in_its_thread(threads, by_id):
    """Cross-check with the generator's own description, thread by thread."""
    root_of = {str(m["Message-ID"]): root for root, ms in threads.items() for m in ms if m["Message-ID"]}
    built = build_demo.build_messages()
    for thread in THREADS:
        ids = [b.message_id for b in built if b.thread == thread.slug and b.message_id]
        assert ids, thread.slug
        assert all(i in by_id for i in ids), thread.slug
        if thread.slug != "bounce":
            assert len({root_of[i] for i in ids}) == 1, f"{thread.slug} is split"


def test_replies_reference_their_parents(messages, by_id):
    replies = [m for m in messages if m["In-Reply-To"]]
    assert len(replies) > 70
    for reply in replies:
        references = str(reply["References"]).split()
        assert references[-1] == str(reply["In-Reply-To"])
        for earlier in references:
            if earlier in by_id:
                assert by_id[earlier]["Date"].datetime < reply["Date"].datetime


def test_reply_whose_parent_is_missing_still_references_its_root(messages, by_id):
    dangling = [m for m in messages if m["In-Reply-To"] and str(m["In-Reply-To"]) not in by_id]
    subjects = sorted(str(m["Subject"]) for m in dangling)
    assert subjects == ["Re: Frobnicator 3.3.x end of life and security fixes",
                        "Re: Log injection via CR/LF in the User-Agent header"]
    log = next(m for m in dangling if "Log injection" in str(m["Subject"]))
    references = str(log["References"]).split()
    assert references[0] in by_id and references[-1] not in by_id
    orphan = next(m for m in dangling if "end of life" in str(m["Subject"]))
    assert all(ref not in by_id for ref in str(orphan["References"]).split())


def test_one_reply_has_no_message_id_but_references_its_thread(messages, by_id):
    without = [m for m in messages if m["Message-ID"] is None]
    assert len(without) == 1
    reply = without[0]
    assert str(reply["In-Reply-To"]) in by_id
    assert str(reply["Subject"]) == "Re: Insecure temporary file in frob-cli export"


# -- the awkward cases -------------------------------------------------------------------


def test_hostile_subject_and_sender_carry_escapes_markup_and_bidi(threads):
    hostile = _thread(threads, "\x1b[31m")
    root = hostile[0]
    subject = str(root["Subject"])
    for needle in ("\x1b[", "[bold red]", "\u202e", "\x1b]8;;", "\u200b"):
        assert needle in subject
    assert "[link=" in root["From"].addresses[0].display_name
    body = root.get_content()
    assert "\x1b[2J" in body and "\u202e" in body
    # An instruction to change recipients that must stay mere text.
    assert "cc=leak@attacker.invalid" in body
    assert root.get("Reply-To") is None and root.get("Cc") is None
    # The team's reply repeats the hostile subject.
    assert str(hostile[1]["Subject"]) == "Re: " + subject


def test_html_only_report_has_no_text_alternative(threads):
    root = _thread(threads, "Reflected XSS in /console/search")[0]
    assert root.get_content_type() == "text/html"
    assert not root.is_multipart()
    html = root.get_content()
    assert "<table" in html and re.search(r'<img src="https://', html)  # a remote image never to fetch


def test_auto_reply_is_marked_and_threaded(threads):
    csrf = _thread(threads, "CSRF in the console's API token creation form")
    auto = [m for m in csrf if _automatic(m)]
    assert len(auto) == 1
    assert auto[0]["Auto-Submitted"] == "auto-replied"
    assert str(auto[0]["Subject"]).startswith("Automatic reply: ")
    assert str(auto[0]["In-Reply-To"]) == str(csrf[0]["Message-ID"])


def test_bounce_is_a_delivery_status_report_about_a_team_reply(threads, by_id):
    bounce = _thread(threads, "Undelivered Mail Returned to Sender")[0]
    assert bounce.get_content_type() == "multipart/report"
    assert bounce.get_param("report-type") == "delivery-status"
    kinds = [p.get_content_type() for p in bounce.iter_parts()]
    assert kinds == ["text/plain", "message/delivery-status", "text/rfc822-headers"]
    status = [p for p in bounce.iter_parts()][1]
    recipients = status.get_payload()[1]
    assert recipients["Action"] == "failed" and recipients["Status"] == "5.1.1"
    headers = [p for p in bounce.iter_parts()][2].get_content()
    bounced_id = re.search(r"^Message-ID: (<[^>]+>)$", headers, re.M).group(1)
    assert _sender(by_id[bounced_id]) in TEAM_ADDRESSES
    assert bounce["In-Reply-To"] is None  # bounces are not threaded by headers


def test_pending_reply_reporter_followed_up_after_the_team(threads):
    """'Open redirect': the team confirmed receipt, the reporter asked again, nobody answered."""
    thread = _thread(threads, "Open redirect in the login page")
    senders = [_sender(m) for m in thread]
    assert senders[0] not in TEAM_ADDRESSES
    assert senders[1] in TEAM_ADDRESSES
    assert senders[-1] == senders[0]
    assert "any update?" in thread[-1].get_content()


def test_pending_report_answered_only_by_an_auto_reply(threads):
    thread = _thread(threads, "CSRF in the console's API token creation form")
    human = [m for m in thread if not _automatic(m)]
    assert [_sender(m) for m in human] == [_sender(thread[0])]
    assert _sender(thread[0]) not in TEAM_ADDRESSES


def test_non_ascii_names_decode_from_encoded_words(archive_path, messages):
    names = {m["From"].addresses[0].display_name for m in messages}
    for name in ("José Müller", "田中太郎", "Ølaf Søren", "Zoë Lefèvre", "François Pérez"):
        assert name in names
    raw = archive_path.read_bytes()
    assert b"=?utf-8?b?55Sw5Lit5aSq6YOO?=" in raw  # 田中太郎 as a B-word
    assert b"=?iso-8859-1?q?Fran=E7ois_P=E9rez?=" in raw  # a legacy charset in a header


def test_one_iso_8859_1_quoted_printable_body(messages):
    latin = [m for m in messages if m.get_content_charset() == "iso-8859-1"]
    assert latin and all(m["Content-Transfer-Encoding"] == "quoted-printable" for m in latin)
    assert "récursion non bornée" in latin[0].get_content()


def test_one_base64_body(messages):
    b64 = [m for m in messages if m.get_content_type() == "text/plain" and m["Content-Transfer-Encoding"] == "base64"]
    assert b64
    assert any("よろしくお願いいたします。" in m.get_content() for m in b64)


def test_one_message_carries_a_python_proof_of_concept(messages):
    attachments = [part for m in messages if m.is_multipart() for part in m.iter_attachments()]
    poc = [p for p in attachments if p.get_filename() == "poc_ssrf.py"]
    assert len(poc) == 1
    assert poc[0].get_content_type() == "text/x-python"
    compile(poc[0].get_content(), "poc_ssrf.py", "exec")  # a real, valid script


def test_spam_is_flagged(messages):
    spam = [m for m in messages if m.get("X-Spam-Flag") == "YES"]
    assert sorted(str(m["Subject"]) for m in spam) == [
        "Boost your project: 10,000 GitHub stars in 7 days!!!",
        "Invoice #88341 overdue - action required",
    ]
    stars = next(m for m in spam if "GitHub stars" in str(m["Subject"]))
    assert stars.get_content_type() == "multipart/alternative"
    assert "open.gif" in stars.get_body(("html",)).get_content()  # a tracking pixel never to fetch


def test_team_replies_keep_the_list_in_copy(messages):
    team = [m for m in messages if _sender(m) in TEAM_ADDRESSES and not _automatic(m)]
    assert len(team) > 40
    for message in team:
        recipients = [a.addr_spec for h in ("To", "Cc") if message[h] for a in message[h].addresses]
        assert LIST_ADDRESS in recipients


def test_reports_mention_cves_in_the_project_range(messages):
    text = "\n".join(m.get_body(("plain",)).get_content() for m in messages if m.get_body(("plain",)))
    cves = set(re.findall(r"CVE-2026-4\d{4}", text))
    assert len(cves) >= 8


@pytest.mark.parametrize("address_field", ["From", "To", "Cc"])
def test_only_reserved_example_domains(messages, address_field):
    allowed = re.compile(r"(^|\.)(example\.(com|net|org)|example|invalid)$|^frobnicator\.apache\.org$")
    for message in messages:
        if message[address_field] is None:
            continue
        for address in message[address_field].addresses:
            assert allowed.search(address.domain), address.addr_spec


def test_the_demo_docs_count_what_the_demo_holds():
    # Walking issue 35 as a newcomer: docs/demo.md said 122 messages in 41 threads and three
    # filed issues, docs/tui.md three filed reports and one reply for Sync, after the queue's
    # demo (issue 37) made them 124, 42, six and two.
    from pathlib import Path

    from mailtriage.demo.tracker import DEMO_ISSUES, QUEUE_ISSUES

    docs = Path(__file__).resolve().parents[2] / "docs"
    demo_md = (docs / "demo.md").read_text(encoding="utf-8")
    assert f"{EXPECTED_MESSAGES} messages in {len(EXPECTED_THREADS)} threads" in demo_md
    filed = {3: "three", 6: "six"}[len(DEMO_ISSUES) + len(QUEUE_ISSUES)]
    tui_md = (docs / "tui.md").read_text(encoding="utf-8")
    for text in (demo_md, tui_md):
        assert f"starts with {filed} filed reports" in text
        assert "three filed" not in text
    assert "the one new reply" not in tui_md
