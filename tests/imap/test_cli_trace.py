"""`--trace FILE` (or `-`) on every command: the redacted protocol trace (issue 20 §12)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from mailtriage.backends.imap.account import password_key
from mailtriage.cli.main import main
from mailtriage.core.secrets import set_secret
from mailtriage.core.trace import TRACE
from tests.imap.conftest import make_mail, write_imap_project, write_work_account

LIST = "security@example.org"


@pytest.fixture
def imap_project(tmp_path, monkeypatch, dovecot, dovecot_user, memory_keyring):
    config_dir = write_work_account(tmp_path / "config", dovecot, dovecot_user)
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(config_dir))
    set_secret(password_key("work"), dovecot_user.password)
    dovecot.append(dovecot_user, "INBOX", make_mail(1, subject="Bug \x1b]0;t\x07 report", message_id="<t@r>"))
    project = write_imap_project(tmp_path / "project", LIST)
    yield project, dovecot_user
    TRACE.enabled = False


def test_trace_file_holds_the_redacted_protocol(imap_project, tmp_path, capsys):
    project, user = imap_project
    trace = tmp_path / "trace.log"
    assert main(["--project", str(project), "mail", "read-thread", "imap:<t@r>", "--trace", str(trace)]) == 0
    text = trace.read_text(encoding="utf-8")
    assert "imap:" in text and "FETCH" in text.upper()
    assert "LOGIN" in text.upper() or "AUTHENTICATE" in text.upper()
    assert user.password not in text and "[REDACTED]" in text
    assert "\x1b" not in text and "\x07" not in text  # server data is inert in the trace too
    assert stat.S_IMODE(os.stat(trace).st_mode) == 0o600  # it can hold mail text: private
    out = capsys.readouterr()
    json.loads(out.out)  # stdout stays one JSON document


@pytest.mark.parametrize("where", ["before", "after"])
def test_trace_to_stderr_anywhere_on_the_line(imap_project, capsys, where):
    project, user = imap_project
    args = ["sources", "--json"]
    args = ["--trace", "-", "--project", str(project), *args] if where == "before" else \
        ["--project", str(project), *args, "--trace=-"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "imap:" in err and user.password not in err
    assert out.startswith("{")


def test_every_command_accepts_trace(tmp_path, capsys):
    for argv in (["tracker", "--help"], ["account", "--help"], ["modes", "--help"]):
        try:
            code = main([*argv, "--trace", str(tmp_path / "t.log")])
        except SystemExit as exit_:
            code = exit_.code
        assert code == 0, argv
        assert "unrecognized" not in capsys.readouterr().err
    assert "--trace" in _help(capsys, ["import", "--help"]) and "--trace" in _help(capsys, ["mail", "read-thread",
                                                                                              "--help"])


def _help(capsys, argv) -> str:
    with pytest.raises(SystemExit):
        main(argv)
    return capsys.readouterr().out


def test_create_draft_recap_is_inert(imap_project, capsys, monkeypatch):
    """`mail create-draft` prints the proposal recap on stderr: the subject's OSC 0 is a
    marker there, and the draft is written (issue 20 §1)."""
    import io
    import sys

    project, _user = imap_project
    monkeypatch.setattr(sys, "stdin", io.StringIO("Thanks.\n"))
    code = main(["--project", str(project), "mail", "create-draft", "imap:<t@r>", "--body-file", "-", "--yes"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "\x1b" not in err and "\x07" not in err and "\x1b" not in out and "\x07" not in out
    assert "Subject: Re: Bug" in err
    assert json.loads(out)["written"] is True
