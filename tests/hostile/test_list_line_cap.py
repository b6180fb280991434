"""`mailtriage list` caps a hostile subject's line and says it was cut (issue 31, item 4);
the JSON of `mail list-recent-threads` keeps the whole subject (scripts lose nothing)."""

from __future__ import annotations

import io
import json
import sys

import pytest

from mailtriage.cli.main import main
from mailtriage.cli.output import LINE_LIMIT, capped_line
from tests.mbox.mboxes import write_mbox

SUBJECT = "A" * 200_000 + "\u202e-end"


def _mail(subject: str) -> bytes:
    return (f"From: Rita Reporter <rita@reporter.example>\nTo: security@frobnicator.example.org\n"
            f"Subject: {subject}\nDate: Mon, 02 Mar 2026 10:00:00 +0000\nMessage-ID: <long-subject@reporter.example>\n"
            f"Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\nbody\n").encode("utf-8")


@pytest.fixture
def long_env(env):
    archive = write_mbox(env.project / "long.mbox", [_mail(SUBJECT)])
    env.write_project([("mbox", "primary", "yes")],
                      extra={"mail_sources.mbox": {"path": archive.name, "list": "security@frobnicator.example.org"}})
    return env


def run(capsys, monkeypatch, env, *args: str):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code = main(["--project", str(env.project), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_list_caps_a_200_kb_subject_and_says_it_was_cut(capsys, monkeypatch, long_env):
    # failed first on main: one line of 200,049 characters
    code, out, err = run(capsys, monkeypatch, long_env, "list", "--since", "2026-01-01")
    assert code == 0, err
    rows = [line for line in out.splitlines() if "AAAA" in line]
    assert len(rows) == 1
    assert len(rows[0]) <= LINE_LIMIT + 80  # date, count and sender columns before the subject
    assert "cut" in rows[0] and "200,005" in rows[0]  # says how long the subject was
    code, out, _ = run(capsys, monkeypatch, long_env, "mail", "list-recent-threads", "--since", "2026-01-01")
    assert code == 0 and json.loads(out)["result"][0]["subject"] == SUBJECT


def test_capped_line_marks_before_cutting_and_never_splits_a_marker():
    text = "\u202e" * 5000  # every character becomes a 8-character marker
    line = capped_line(text, 100)
    assert len(line) <= 100 + 40 and "\u202e" not in line
    body = line.split(" … ")[0]
    assert body.endswith("⟩") and body.count("⟨U+202E⟩") == len(body) // 8
    assert capped_line("short subject", 100) == "short subject"
