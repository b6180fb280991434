"""Importing a backend loads only what a listing from headers needs (issue 15, goals 1 and 3).

A guard without timing, as tests/tui/test_startup_imports.py is for the app: each check runs
in a fresh interpreter and looks at ``sys.modules``. The stdlib's full MIME parser and writer
(email.policy, email.parser, email.generator, email.utils, mailbox), the HTML entities and
the OpenPGP status types, and what runs a password_command (subprocess, shlex) were measured as import cost (python -X importtime: ~20 ms of the
mbox backend's ~70 ms) and load where a body is parsed, a draft written or OpenPGP met.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Loaded where used, never by importing a backend that lists from headers.
NOT_AT_IMPORT = ("email", "email.policy", "email.parser", "email.generator", "email.message", "email.utils",
                 "mailbox", "html", "mailtriage.backends.outgoing", "mailtriage.backends.pgp_status",
                 # the body's side of backends/mime.py: the walk over the MIME tree, HTML, OpenPGP pieces
                 "mailtriage.backends.mime_walk", "mailtriage.backends.mime_html", "mailtriage.backends.mime_pgp",
                 # a password_command runs through them (core/secrets.py), which every backend imports
                 "subprocess", "shlex")


def _loaded_after(code: str, watched: tuple[str, ...]) -> list[str]:
    script = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {list(watched)!r} if m in sys.modules]))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", ["mailtriage.backends.mbox", "mailtriage.backends.maildir",
                                    "mailtriage.backends.mime", "mailtriage.core.trace"])
def test_importing_a_backend_loads_no_mime_parser_and_no_openpgp(module):
    assert _loaded_after(f"import {module}", NOT_AT_IMPORT) == []


def test_reading_a_header_block_loads_no_mime_parser():
    code = """
from mailtriage.backends import mime_dates, mime_header_text, mime_headers
block, _ = mime_headers.split_header_block(b"From: Ann <ann@example.org>\\nSubject: =?utf-8?q?caf=C3=A9?=\\n\\nbody\\n")
fields = mime_headers.header_fields(block)
assert mime_header_text.decode_header_text(fields[b"subject"])[0] == "caf\\u00e9"
assert mime_header_text.parse_address(fields[b"from"]).email == "ann@example.org"
assert mime_dates.parse_date_epoch(b"Tue, 1 Dec 2026 10:00:00 +0000") is not None
"""
    assert _loaded_after(code, NOT_AT_IMPORT) == []


def test_a_full_parse_still_loads_the_parser_it_needs():
    """The guard can fail: parsing a body loads email.policy (so the list above is watched)."""
    code = """
from mailtriage.backends import mime
message = mime.parse_message(b"From: a@example.org\\nMessage-ID: <1@example.org>\\nSubject: s\\n\\nhello\\n")
assert message.body_text.strip() == "hello"
"""
    watched = ("email.policy", "email.parser", "mailtriage.backends.mime_walk")
    assert _loaded_after(code, watched) == list(watched)


def test_the_queue_loads_no_imap_client():
    """The queue reads the feedback sweep's rules (application/flows/sweep.py ``classify``); the
    sweep's IMAP reader loads the IMAP adapter and imapclient when an IMAP sweep runs, not at
    import (they cost ``queue --json`` about 0.1 s for nothing)."""
    watched = ("imapclient", "mailtriage.backends.imap.adapter", "mailtriage.backends.imap.account")
    assert _loaded_after("import mailtriage.application.queue", watched) == []
