"""The committed archive is exactly what the generator writes, whatever the environment."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import pytest

from mailtriage.demo import build_demo, demo_archive
from mailtriage.demo.threads import HOSTILE, THREADS

MAX_ARCHIVE_BYTES = 300_000


def test_committed_archive_is_up_to_date(tmp_path):
    written = build_demo.write_mbox(tmp_path / "security.mbox")
    assert written.read_bytes() == demo_archive().read_bytes(), (
        "demo/security.mbox is stale: run `python -m mailtriage.demo.build_demo` and commit the result"
    )


def test_generator_output_ignores_clock_timezone_locale_and_hash_seed(tmp_path):
    out = tmp_path / "other-env.mbox"
    env = dict(os.environ, TZ="Pacific/Chatham", PYTHONHASHSEED="4711", LC_ALL="C", LANG="C")
    subprocess.run([sys.executable, "-m", "mailtriage.demo.build_demo", "-o", str(out)],
                   env=env, check=True, capture_output=True, timeout=60)
    assert out.read_bytes() == demo_archive().read_bytes()


def test_archive_stays_small():
    assert demo_archive().stat().st_size < MAX_ARCHIVE_BYTES


def test_every_subject_and_sender_survives_the_round_trip(messages):
    """What the generator meant is what a stdlib parser reads back, encoded words included."""
    built = {b.message_id: b for b in build_demo.build_messages() if b.message_id}
    checked = 0
    for message in messages:
        b = built.get(str(message["Message-ID"]))
        if b is None:
            continue
        assert str(message["Subject"]) == b.subject
        sender = message["From"].addresses[0]
        assert sender.addr_spec == b.author.address
        assert sender.display_name == b.author.name
        checked += 1
    assert checked == len(built) == len(messages) - 1  # all but the message without an ID


def test_every_plain_body_reads_back_as_written(messages):
    built = {b.message_id: b for b in build_demo.build_messages() if b.message_id}
    checked = 0
    for message in messages:
        b = built.get(str(message["Message-ID"]))
        if b is None or message.get_content_type() != "text/plain":
            continue
        # mboxo quoting is lossy by design: a body line "From ..." is stored as ">From ...".
        assert message.get_content() == b.body.replace("\nFrom ", "\n>From ")
        checked += 1
    assert checked >= 110


def test_generator_refuses_a_reply_older_than_its_parent():
    """The generator checks its own data: a reply dated before its parent is an error."""
    thread = next(t for t in THREADS if t.slug == "admin-xss")
    early = replace(thread.mails[1], when="2026-09-01 00:00")
    with pytest.raises(ValueError, match="written before its parent"):
        build_demo.build_messages([replace(thread, mails=[thread.mails[0], early])])


def test_hostile_sender_is_one_parseable_address(messages):
    hostile = [m for m in messages if m["From"].addresses[0].addr_spec == HOSTILE.address]
    assert len(hostile) == 1
    assert hostile[0]["From"].addresses[0].display_name == HOSTILE.name
