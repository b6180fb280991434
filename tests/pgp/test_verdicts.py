"""Our verdicts against gpg's on the same bytes (the corpus of tests/pgp/corpus.py).

gpg and neomutt read every genuine signature of the corpus as Good: mailtriage must say what gpg
says, on each layout, and show the signed text in its own charset.
"""

from __future__ import annotations

import pytest

from mailtriage.backends import mime, pgp

from .corpus import CPYTHON_EMAIL_DATA, cases, gpg_verdict, real_world_cases


def test_every_corpus_verdict_is_gpgs(homes):
    session = homes.session()
    differ = []
    if not CPYTHON_EMAIL_DATA.is_dir():
        pytest.fail(f"{CPYTHON_EMAIL_DATA} is missing: install Debian libpython3.11-testsuite (scripts/test does)")
    for case in cases(homes) + real_world_cases():
        expected = gpg_verdict(homes.user, case)
        message = pgp.open_message(mime.parse_message(case.raw), session)
        states = [s.state for s in message.crypto.signatures] if message.crypto else []
        if states != [expected]:
            differ.append(f"{case.name}: gpg says {expected}, we say {states} {message.crypto.lines()}")
        elif case.shown not in message.body_text:
            differ.append(f"{case.name}: {case.shown!r} not shown in {message.body_text!r}")
    assert not differ, "\n".join(differ)


def test_the_corpus_holds_the_nine_genuine_layouts_gpg_reads_as_good(homes):
    corpus = cases(homes)
    verdicts = {case.name: gpg_verdict(homes.user, case) for case in corpus}
    genuine = [case.name for case in corpus if case.issue_layout]
    assert len(genuine) == 9 and all(verdicts[name] == "valid" for name in genuine), verdicts
    assert verdicts["pgp/mime tampered"] == "bad" and verdicts["inline latin-1 tampered"] == "bad"
    assert verdicts["pgp/mime by a key not in the keyring"] == "unknown-key"
