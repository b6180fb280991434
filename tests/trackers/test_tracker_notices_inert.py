"""A tracker's notices quote the server (a GitHub repository's new name, a transferred issue's
URL): server text is untrusted (docs/security.md, threat model), so `mailtriage tracker`
prints each notice through core/inert.py's terminal_text, secrets masked."""

from __future__ import annotations

import pytest

from tests.trackers.conftest import make_github_env

HOSTILE = "acme/arch\x1b]0;pwned\x07\x1b[2Jive\u202e"


@pytest.fixture
def gh(tmp_path):
    env = make_github_env(tmp_path)
    yield env
    env.tracker.close_backend()
    env.server.stop()


def test_a_transfer_notice_with_terminal_escapes_is_printed_inert(gh):
    gh.server.add_issue("moved away", "body")
    gh.server.transfer(1, HOSTILE)
    code, _out, err = gh.cli("view", "1")
    assert code == 0, err
    notes = [line for line in err.splitlines() if "transferred" in line]
    assert notes, err
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
    assert "\\x1b" in notes[0] and "U+202E" in notes[0]
