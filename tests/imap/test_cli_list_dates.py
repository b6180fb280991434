"""`mailtriage list` shows the date the app shows (issue 35 item 6): the sender's Date: by
default, the arrival with `date_column = "arrival"`, and its header says which."""

from __future__ import annotations

from datetime import datetime, timezone

from mailtriage.backends.imap.account import password_key
from mailtriage.cli.main import main
from mailtriage.core.secrets import set_secret
from tests.imap.conftest import make_mail, write_imap_project, write_work_account

LIST = "security@example.org"


def test_list_prints_the_senders_date_like_the_app_or_the_arrival_when_set(tmp_path, monkeypatch, capsys,
                                                                          dovecot, dovecot_user, memory_keyring):
    config_dir = write_work_account(tmp_path / "config", dovecot, dovecot_user)
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(config_dir))
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(tmp_path / "data"))
    set_secret(password_key("work"), dovecot_user.password)
    # Written on the 1st at 09:00, delivered on the 3rd at 18:30.
    dovecot.append(dovecot_user, "INBOX", make_mail(1, subject="Late report", date=datetime(2026, 10, 1, 9, 0)),
                   when=datetime(2026, 10, 3, 18, 30, tzinfo=timezone.utc))
    project = write_imap_project(tmp_path / "project", LIST)

    assert main(["--project", str(project), "list", "--since", "2026-09-01"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("sent (Date:)")
    assert lines[2].startswith("2026-10-01 09:00") and "Late report" in lines[2]

    settings = config_dir / "config.toml"
    settings.write_text('date_column = "arrival"\n' + settings.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["--project", str(project), "list", "--since", "2026-09-01"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("arrived")
    assert lines[2].startswith("2026-10-03 18:30")
