"""A capped sweep resumes (issue 30 §7): a truncated result names where it stopped — the
received time plus a tiebreaker (the Message-ID) — so N runs with ``--cap k`` see every
message exactly once, even when more than k messages were received in the same second.
On an mbox archive (through the CLI, as an orchestrator calls it) and on a real Dovecot.
"""

from __future__ import annotations

import io
import json
import sys
from datetime import timedelta

from mailtriage.cli.main import main
from mailtriage.application.flows.sweep import open_reader, parse_source, parse_sweep_cursor, run_sweep
from tests.application.flows import feedback_mail as fm
from tests.application.flows.test_e2e_imap import imap_env  # noqa: F401  (the fixture)
from tests.application.flows.test_sweep import write_archive

CROWD = 7  # messages received in one second, more than the cap


def _person(n: int, when) -> bytes:
    return fm.simple(f"""From: Person {n} <person{n}@customer.example>
To: feedback@frobnicator.example
Date: {{date}}
Subject: Feedback number {n}
Message-ID: <crowd-{n:02d}@customer.example>""", f"Feedback text {n}.\n", when)


def _mailbox():
    """(raw, received) of a crowded second (people and a bounce), then two later messages,
    in an arrival order that is not the Message-ID order."""
    crowd = [(_person(n, fm.BASE), fm.BASE) for n in (5, 1, 7, 3, 2, 6, 4)]
    crowd.insert(3, (fm.postfix_bounce(fm.BASE), fm.BASE))
    later = [(_person(n, fm.BASE + timedelta(seconds=1)), fm.BASE + timedelta(seconds=1)) for n in (9, 8)]
    return [fm.before_cursor()] + crowd + later


EXPECTED = sorted(f"<crowd-{n:02d}@customer.example>" for n in range(1, 10))


def _drain(run, first_cursor: str, cap: int) -> tuple[list[str], list[str], int]:
    """Run capped sweeps from ``first_cursor``, each from the last one's resume cursor."""
    items, skipped, cursor = [], [], first_cursor
    for runs in range(1, 30):
        result = run(cursor, cap)
        items += [i["id"] for i in result["items"]]
        skipped += [s["id"] for s in result["skipped"]]
        if not result["truncated"]:
            assert result["resume_cursor"] is None
            return items, skipped, runs
        assert result["resume_cursor"] != cursor, "a capped run made no progress"
        cursor = result["resume_cursor"]
    raise AssertionError(f"never finished; items so far {items}")


def test_capped_cli_runs_see_every_message_once(tmp_path, capsys, monkeypatch):
    path = write_archive(tmp_path / "crowd.mbox", _mailbox())
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))

    def run(cursor, cap):
        code = main(["sweep", "--source", f"mbox:{path}", "--cursor", cursor, "--entry", "email:feedback",
                     "--cap", str(cap)])
        out, err = capsys.readouterr()
        assert code == 0, err
        return json.loads(out)

    for cap in (1, 2, 3):
        items, skipped, runs = _drain(run, "2026-11-02T08:00:00Z", cap)
        assert sorted(items) == EXPECTED and len(items) == len(set(items)), (cap, items)
        assert len(skipped) == 1  # the bounce, reported once
        assert runs == -(-len(EXPECTED) // cap)  # no empty run at the end
    first = run("2026-11-02T08:00:00Z", 2)
    assert first["resume_cursor"] == "2026-11-02T09:00:00Z#<crowd-02@customer.example>"
    assert first["cursor"] == "2026-11-02T08:00:00Z"  # echoed, never moved


def test_a_resume_cursor_is_checked(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code = main(["sweep", "--source", f"mbox:{tmp_path / 'x.mbox'}", "--cursor", "2026-11-02T09:00:00Z#",
                 "--entry", "e"])
    assert code == 2 and "--cursor" in capsys.readouterr().err


def test_capped_imap_runs_see_every_message_once(imap_env):
    for raw, when in _mailbox():
        imap_env.seed(raw, when=when, folder="Feedback")
    source = parse_source("work/Feedback")

    def run(cursor, cap):
        return run_sweep(open_reader(source), entry="e", cursor=parse_sweep_cursor(cursor), source=source.describe(), cap=cap).to_json()

    items, skipped, _ = _drain(run, "2026-11-02T08:00:00Z", 2)
    assert sorted(items) == EXPECTED and len(items) == len(set(items)), items
    assert len(skipped) == 1
