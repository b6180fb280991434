"""List reads on the command line when the configuration leaves them nothing to read
(issue 30 §7).

* With no list configured, ``list``, ``poll`` and ``mail list-recent-threads`` skip the read
  with a configuration warning naming ``security_list`` (mail-source contract: "When a list
  read has no configured list, skip that read with a configuration warning (or stop if
  mandatory)"), instead of reading the whole folder.
* When the only backend for an op is unavailable, stderr says why.
"""

from __future__ import annotations

import io
import json
import sys

from mailtriage.cli.main import main
from tests.application.flows.conftest import report_thread, write_mbox

LIST = "security@frobnicator.example.org"


def run(capsys, monkeypatch, env, *args: str):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code = main(["--project", str(env.project), *args])
    out, err = capsys.readouterr()
    return code, out, err


def _no_list(env, mandatory: str = "no"):
    """An archive that holds the list, and a project whose security_list is unset (null)."""
    archive = write_mbox(env.project / "security.mbox", report_thread(with_reply=True))
    env.write_project([("mbox", "primary", mandatory)],
                      extra={"security_list": None, "mail_sources.mbox": {"path": archive.name, "list": LIST}})


def test_list_reads_without_a_configured_list_are_skipped_with_a_warning(env, capsys, monkeypatch):
    _no_list(env)
    for args in (["list"], ["mail", "list-recent-threads"], ["poll"]):
        code, out, err = run(capsys, monkeypatch, env, *args)
        assert code == 3, (args, code, err)
        assert "CONFIGURATION WARNING" in err and "security_list" in err and "skipped" in err, (args, err)
        assert "Heap overflow" not in out, args  # nothing was read
        assert f"--list {LIST}" in err, args  # the list the archive says it holds is offered
    doc = json.loads(run(capsys, monkeypatch, env, "mail", "list-recent-threads")[1])
    assert doc["result"] is None and "security_list" in doc["skipped"]


def test_a_given_list_is_read(env, capsys, monkeypatch):
    _no_list(env)
    code, out, err = run(capsys, monkeypatch, env, "list", "--list", LIST, "--since", "2026-08-01")
    assert code == 0, err
    assert "Heap overflow in the frob parser" in out and "CONFIGURATION WARNING" not in err


def test_a_mandatory_list_read_without_a_list_stops(env, capsys, monkeypatch):
    _no_list(env, mandatory="yes")
    for args in (["list"], ["mail", "list-recent-threads"], ["poll"]):
        code, out, err = run(capsys, monkeypatch, env, *args)
        assert code == 2, (args, code, err)
        assert "security_list" in err and "run aborted" in err, (args, err)
        assert "Heap overflow" not in out


def test_stderr_says_why_the_only_backend_is_unavailable(env, capsys, monkeypatch):
    env.write_project([("mbox", "primary", "no")],
                      extra={"mail_sources.mbox": {"path": "missing.mbox", "list": LIST}})
    for args in (["list"], ["mail", "list-recent-threads"], ["mail", "read-thread", "msgid:<a@b.example>"]):
        code, out, err = run(capsys, monkeypatch, env, *args)
        assert code == 4, (args, code, err)
        assert "no backend available for" in err and "missing.mbox does not exist" in err, (args, err)
