"""The flow commands as a user runs them: one JSON document on stdout, the proposal on stderr."""

from __future__ import annotations

import io
import json
import subprocess
import sys

from mailtriage.cli.main import main
from tests.application.flows.conftest import REPORT


def run(capsys, monkeypatch, env, *args: str, stdin: str = ""):
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(["--project", str(env.project), *args])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def test_import_yes_then_again_then_publish(capsys, monkeypatch, mbox_env):
    code, doc, err = run(capsys, monkeypatch, mbox_env, "import", f"mbox:{REPORT}", "--yes")
    assert code == 0, err
    assert doc["written"] is True and doc["report"]["ok"] is True
    issue = doc["results"][0]["id"]
    assert "== Import report: Heap overflow in the frob parser ==" in err
    # --yes alone never publishes: the review is shown and left for later
    assert doc["publish"]["offered"] is True and doc["publish"]["published"] is False
    assert "mailtriage publish" in err

    code, doc, err = run(capsys, monkeypatch, mbox_env, "import", REPORT, "--yes")  # bare Message-ID
    assert code == 0 and doc["written"] is False
    assert doc["proposal"]["facts"]["issue"] == issue

    code, doc, err = run(capsys, monkeypatch, mbox_env, "publish", "--yes")
    assert code == 0, err
    assert doc["report"]["ok"] and doc["results"][0]["pushed"] is True
    assert mbox_env.remote_log().startswith(f"security: import {issue}\n\nGenerated-by: mailtriage\n")


def test_interactive_no_writes_nothing(capsys, monkeypatch, mbox_env):
    code, doc, err = run(capsys, monkeypatch, mbox_env, "import", f"mbox:{REPORT}", stdin="n\n")
    assert code == 0 and doc["written"] is False
    assert "Write this? [y/N]" in err and "not confirmed" in err
    assert mbox_env.tracker().list(state="all").items == []


def test_interactive_yes_imports_and_publishes(capsys, monkeypatch, mbox_env):
    code, doc, err = run(capsys, monkeypatch, mbox_env, "import", f"mbox:{REPORT}", stdin="y\ny\n")
    assert code == 0, err
    assert doc["written"] and doc["publish"]["published"] is True
    assert "security: import SEC-0001" in mbox_env.remote_log()


def test_end_of_input_is_no(capsys, monkeypatch, mbox_env):
    code, doc, _ = run(capsys, monkeypatch, mbox_env, "import", f"mbox:{REPORT}", stdin="")
    assert code == 0 and doc["written"] is False


def test_bad_thread_id_and_unknown_thread(capsys, monkeypatch, mbox_env):
    code, doc, err = run(capsys, monkeypatch, mbox_env, "import", "mbox:<nope@example.org>", "--yes")
    assert code == 4 and "nope@example.org" in err
    assert doc is None  # errors go to stderr only


def test_process_exit_codes_and_single_json_document(mbox_env):
    proc = subprocess.run([sys.executable, "-m", "mailtriage.cli.main", "--project", str(mbox_env.project),
                           "import", f"mbox:{REPORT}", "--yes"], capture_output=True, text=True,
                          env={**__import__("os").environ}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)  # exactly one document
    mbox_env.archive.unlink()
    proc = subprocess.run([sys.executable, "-m", "mailtriage.cli.main", "--project", str(mbox_env.project),
                           "import", f"mbox:{REPORT}", "--yes"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 4
    assert json.loads(proc.stdout)["proposal"]["blocked"].startswith("mandatory backend mbox unavailable")


def test_sync_with_picks_from_the_command_line(capsys, monkeypatch, mbox_env):
    from tests.application.flows.conftest import mail, write_mbox

    assert run(capsys, monkeypatch, mbox_env, "import", f"mbox:{REPORT}", "--yes")[0] == 0
    write_mbox(mbox_env.archive, [mail("<f1@reporter.example>", "Rita <rita@reporter.example>", "Re: x",
                                       "Patch attached.\n", "Thu, 03 Sep 2026 12:00:00 +0000", in_reply_to=REPORT)])
    code, doc, err = run(capsys, monkeypatch, mbox_env, "sync", "--add-label", "1=valid", "--yes", "--publish")
    assert code == 0, err
    assert doc["report"]["written"] == ["status rollup entry Sync on SEC-0001", "labels of SEC-0001: +valid"]
    assert "Signals (yours to judge)" in err and "status (patch)" in err
    assert doc["publish"]["published"] is True
    assert "security: import SEC-0001" in mbox_env.remote_log()  # import and sync published together
    code, doc, err = run(capsys, monkeypatch, mbox_env, "sync", "--add-label", "SEC-1=valid", "--yes")
    assert code == 0 and doc["written"] is False  # no new mail, and the label is already there
    assert "SEC-0001 already has the label 'valid'" in doc["proposal"]["notes"]


def test_sync_usage_errors(capsys, monkeypatch, mbox_env):
    code, doc, err = run(capsys, monkeypatch, mbox_env, "sync", "--add-label", "valid")
    assert code == 2 and "ISSUE=VALUE" in err
    code, doc, err = run(capsys, monkeypatch, mbox_env, "sync", "--issue", "SEC-0042")
    assert code == 3 and "SEC-0042" in err


def test_poll_baseline_then_news_printed_once(capsys, monkeypatch, mbox_env):
    import time

    from tests.application.flows.conftest import mail, write_mbox

    code, doc, err = run(capsys, monkeypatch, mbox_env, "poll")
    assert code == 0 and doc["baseline"] is True and doc["new_threads"] == []
    now = time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime())
    write_mbox(mbox_env.archive, [mail("<n1@x.example>", "Nina <nina@x.example>", "New report", "x\n", now)])
    code, doc, err = run(capsys, monkeypatch, mbox_env, "poll")
    assert code == 0 and [t["subject"] for t in doc["new_threads"]] == ["New report"]
    code, doc, err = run(capsys, monkeypatch, mbox_env, "poll")
    assert doc["new_threads"] == [] and doc["baseline"] is False


def test_poll_watch_prints_one_line_per_news(mbox_env, tmp_path):
    import os
    import time

    from tests.application.flows.conftest import mail, write_mbox

    env = dict(os.environ, MAILTRIAGE_DATA_DIR=str(tmp_path / "watchdata"))
    proc = subprocess.Popen([sys.executable, "-m", "mailtriage.cli.main", "--project", str(mbox_env.project),
                             "poll", "--watch", "--interval", "0.2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        deadline = time.monotonic() + 30
        while not list((tmp_path / "watchdata").glob("alerts/*.json")) and time.monotonic() < deadline:
            time.sleep(0.05)  # the silent baseline is saved
        now = time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime())
        write_mbox(mbox_env.archive, [mail("<w1@x.example>", "W <w@x.example>", "Watched report", "x\n", now)])
        line = json.loads(proc.stdout.readline())
        assert [t["subject"] for t in line["new_threads"]] == ["Watched report"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_alert_polling_setting_holds_in_the_cli_as_in_the_app(mbox_env, tmp_path):
    """``[alerts] poll_seconds`` of the user settings is read by the one application service both
    front ends call (issue 36 §1): 0 turns the app's polling off and ``poll --watch`` says so;
    a value that is not a number of seconds is the same configuration error in both."""
    import os
    from pathlib import Path

    import pytest

    from mailtriage.application.service import Service
    from mailtriage.core.errors import ConfigError
    from mailtriage.core.settings import load_settings

    settings_file = Path(os.environ["MAILTRIAGE_CONFIG_DIR"]) / "config.toml"
    settings_file.parent.mkdir(exist_ok=True)

    def watch() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mailtriage.cli.main", "--project", str(mbox_env.project),
                               "poll", "--watch"], capture_output=True, text=True, timeout=30)

    settings_file.write_text("[alerts]\npoll_seconds = 0\n", encoding="utf-8")
    app = Service(mbox_env.project, demo=False, settings=load_settings())
    app.open()
    assert app.alert_watch() is None  # the app polls nothing
    cli = watch()
    assert cli.returncode == 3 and "polling is off" in cli.stderr and "poll_seconds = 0" in cli.stderr

    settings_file.write_text('[alerts]\npoll_seconds = "soon"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="poll_seconds"):
        Service(mbox_env.project, demo=False, settings=load_settings()).poll_interval()
    cli = watch()
    assert cli.returncode == 2 and "alerts.poll_seconds" in cli.stderr and "config.toml" in cli.stderr


def test_a_broken_settings_file_stops_only_the_commands_that_need_a_value_from_it(capsys, monkeypatch, mbox_env):
    """Invalid TOML in the user settings: the diagnostic and the commands that read nothing from
    the file run, with a warning naming the file and the problem; a command that needs a value
    from it (``poll --watch`` without ``--interval``: ``[alerts] poll_seconds``) stops, exit 2."""
    import os
    from pathlib import Path

    settings_file = Path(os.environ["MAILTRIAGE_CONFIG_DIR"]) / "config.toml"
    settings_file.parent.mkdir(exist_ok=True)
    settings_file.write_text("theme = = broken\n", encoding="utf-8")

    def said_broken(text: str) -> bool:
        return "config.toml" in text and "not valid TOML" in text

    code = main(["--project", str(mbox_env.project), "sources"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Resolution:" in out and said_broken(out)  # the matrix, and that the settings file is broken
    code = main(["--project", str(mbox_env.project), "sources", "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and said_broken(json.loads(out)["settings_problem"])

    code, doc, err = run(capsys, monkeypatch, mbox_env, "mail", "list-recent-threads", "--since", "2000-01-01")
    assert code == 0 and doc is not None and said_broken(err) and "warning" in err

    code, doc, err = run(capsys, monkeypatch, mbox_env, "poll")
    assert code == 0 and doc["baseline"] is True and said_broken(err)

    code, doc, err = run(capsys, monkeypatch, mbox_env, "poll", "--watch")
    assert code == 2 and said_broken(err) and doc is None
