"""Every CLI printer, fed the hostile corpus: no neutralized character reaches stdout or
stderr raw, and no decoded CR/LF forges a line of the proposal recap."""

from __future__ import annotations

import io
import json
import sys

import pytest

from mailtriage.cli.main import main
from tests.hostile.corpus import assert_inert, cases, message_id, thread_root
from tests.mbox.mboxes import write_mbox

CASES = cases()


@pytest.fixture
def hostile_env(env):
    archive = write_mbox(env.project / "hostile.mbox", [raw.replace(b"\r\n", b"\n") for raw in CASES.values()])
    env.write_project([("mbox", "primary", "yes")],
                      extra={"mail_sources.mbox": {"path": archive.name, "list": "security@frobnicator.example.org"}})
    env.archive = archive
    return env


def run(capsys, monkeypatch, env, *args: str, stdin: str = "n\n"):
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(["--project", str(env.project), *args])
    out, err = capsys.readouterr()
    return code, out, err


def _no_forged_lines(err: str, where: str) -> None:
    for line in err.splitlines():
        stripped = line.strip()
        assert not stripped.startswith(("Cc: attacker", "Bcc:", "Cc:_attacker")), f"{where}: forged line {line!r}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_import_and_read_thread_print_inert(capsys, monkeypatch, hostile_env, name):
    mid = thread_root(CASES[name])
    code, out, err = run(capsys, monkeypatch, hostile_env, "import", f"mbox:{mid}")
    assert code in (0, 3), err
    assert_inert(out, f"{name}: import stdout")
    assert_inert(err, f"{name}: import stderr")
    _no_forged_lines(err, name)
    json.loads(out)
    code, out, err = run(capsys, monkeypatch, hostile_env, "mail", "read-thread", f"mbox:{mid}")
    assert code == 0, err
    assert_inert(out, f"{name}: read-thread stdout")
    doc = json.loads(out)
    assert doc["result"]["messages"], name


def test_list_and_recent_threads_print_inert(capsys, monkeypatch, hostile_env):
    code, out, err = run(capsys, monkeypatch, hostile_env, "list", "--since", "2026-01-01")
    assert code == 0, err
    assert_inert(out + err, "list")
    assert len(out.splitlines()) >= len(CASES)
    code, out, err = run(capsys, monkeypatch, hostile_env, "mail", "list-recent-threads", "--since", "2026-01-01")
    assert code == 0, err
    assert_inert(out + err, "list-recent-threads")


def test_json_escapes_are_lossless(capsys, monkeypatch, hostile_env):
    # The subject decodes back to exactly what the mail said: scripts lose nothing.
    mid = message_id(CASES["11-bidi-subject.eml"])
    code, out, _ = run(capsys, monkeypatch, hostile_env, "mail", "read-thread", f"mbox:{mid}")
    assert code == 0
    assert "\\u202e" in out
    assert json.loads(out)["result"]["messages"][0]["subject"].startswith("Invoice \u202efdp.exe")


@pytest.mark.parametrize("name", ["15-spoofed-address-name.eml", "16-spoofed-fullwidth-at.eml"])
def test_import_proposal_marks_a_spoofed_sender(capsys, monkeypatch, hostile_env, name):
    code, out, err = run(capsys, monkeypatch, hostile_env, "import", f"mbox:{thread_root(CASES[name])}")
    assert code == 0, err
    proposal = json.loads(out)["proposal"]
    assert any("attacker@evil.example" in w and "not the sender" in w for w in proposal["warnings"]), proposal
    assert "attacker@evil.example" in err and "⚠" in err
    # The receipt draft's To: is the real address, marked.
    to = [f for w in proposal["writes"] for f in w["fields"] if f["label"] == "To"] + \
         [f for f in proposal["preview"] if f["label"] == "To"]
    assert to and all(f["value"] == "attacker@evil.example" and f["marker"] for f in to), to


@pytest.mark.parametrize("name", ["06-markdown-name.eml", "07-jira-wiki.eml", "09-backtick-message-id.eml"])
def test_imported_issue_renders_no_markup_from_mail(capsys, monkeypatch, hostile_env, name):
    """Imported for real (local-files tracker): the issue's Markdown, rendered, holds no
    image, link or mention from the mail, and the rollup still names the thread."""
    from markdown_it import MarkdownIt

    from mailtriage.backends.contract import ThreadId
    from mailtriage.application.flows.linking import rollup_state

    mid = thread_root(CASES[name])
    code, out, err = run(capsys, monkeypatch, hostile_env, "import", f"mbox:{mid}", "--yes", stdin="")
    assert code == 0, err
    issue = json.loads(out)["results"][0]["id"]
    tracker = hostile_env.tracker()
    body = tracker.body(issue)
    html = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(body)
    assert "<img" not in html and "<a " not in html and "<em>" not in html and "<strong>" not in html, html
    assert "@octocat" not in body
    assert rollup_state(tracker, issue).thread_id() == ThreadId("mbox", mid)
