"""`mailtriage mail read-thread` decrypts with the user's GnuPG; `--no-decrypt` skips; listing never decrypts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.core.helpers import write_project

from .conftest import entity, pgp_mime_encrypted, plain

SECRET = "Reproducer: curl -H 'X: ' * 70000 http://frob/"


def write_mbox(path: Path, raws: list[bytes]) -> None:
    with path.open("wb") as out:
        for raw in raws:
            out.write(b"From rita@example.net Tue Dec  1 10:00:00 2026\n")
            out.write(raw.replace(b"\r\n", b"\n").replace(b"\nFrom ", b"\n>From "))
            out.write(b"\n")


def project(tmp_path: Path, homes, raws: list[bytes]) -> tuple[Path, dict]:
    folder = tmp_path / "project"
    folder.mkdir()
    write_mbox(folder / "security.mbox", raws)
    write_project(folder, [("mbox", "primary", "yes")], config={
        "security_list": "security@example.org",
        "mail_sources": {"mbox": {"path": "security.mbox", "list": "security@example.org"}},
        "pgp": {"team_key": homes.fprs["team"]},
    })
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text(f'[pgp]\ngnupg_home = "{homes.user}"\n', encoding="utf-8")
    env = dict(os.environ, MAILTRIAGE_CONFIG_DIR=str(config_dir), MAILTRIAGE_DATA_DIR=str(tmp_path / "data"))
    return folder, env


def cli(folder: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    # A ceiling, not a deadline: at load 20-30 a save-attachments child (two decryptions, a gpg-agent
    # started) ran past 120 s; quiet, it takes about a second.
    return subprocess.run([sys.executable, "-m", "mailtriage.cli.main", "--project", str(folder), *args],
                          capture_output=True, text=True, env=env, timeout=600)


def test_read_thread_decrypts_and_adds_a_crypto_field_per_message(tmp_path, homes):
    raws = [pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team", sign="reporter")),
            plain("a clear follow-up", mid="r2", extra="In-Reply-To: <r1@example.net>\r\n")]
    folder, env = project(tmp_path, homes, raws)
    done = cli(folder, env, "mail", "read-thread", "msgid:<r1@example.net>")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    first, second = doc["result"]["messages"]
    assert SECRET in first["text_parts"][0]["text"]
    assert first["crypto"]["encrypted"] and first["crypto"]["decrypted"]
    assert first["crypto"]["signatures"][0]["state"] == "valid"
    assert first["crypto"]["signatures"][0]["matches_from"] is True
    assert second["crypto"] is None  # a clear message has no OpenPGP status

    skipped = cli(folder, env, "mail", "read-thread", "--no-decrypt", "msgid:<r1@example.net>")
    assert skipped.returncode == 0, skipped.stderr
    first = json.loads(skipped.stdout)["result"]["messages"][0]
    assert SECRET not in skipped.stdout
    assert first["crypto"]["encrypted"] and first["crypto"]["skipped"] and not first["crypto"]["decrypted"]

    listed = cli(folder, env, "mail", "list-recent-threads", "--since", "3650d")
    assert listed.returncode == 0, listed.stderr
    assert SECRET not in listed.stdout


def test_read_thread_without_gpg_says_why_and_still_shows_the_thread(tmp_path, homes):
    raws = [pgp_mime_encrypted(homes.encrypt(entity(SECRET), "team")),
            plain("the clear reply", mid="r2", extra="In-Reply-To: <r1@example.net>\r\n")]
    folder, env = project(tmp_path, homes, raws)
    (tmp_path / "config" / "config.toml").write_text(
        f'[pgp]\ngnupg_home = "{homes.user}"\ngpg = "/nonexistent/gpg"\n', encoding="utf-8")
    done = cli(folder, env, "mail", "read-thread", "msgid:<r1@example.net>")
    assert done.returncode == 0, done.stderr
    first, second = json.loads(done.stdout)["result"]["messages"]
    assert any("install gnupg" in n for n in first["crypto"]["notes"])
    assert "the clear reply" in second["text_parts"][0]["text"]


def test_a_pgp_setting_of_the_wrong_type_is_a_configuration_error(tmp_path, homes):
    folder, env = project(tmp_path, homes, [plain("x")])
    text = (folder / "project.md").read_text(encoding="utf-8")
    (folder / "project.md").write_text(text.replace("pgp:\n", "pgp:\n  encrypt_replies: sometimes\n"),
                                       encoding="utf-8")
    done = cli(folder, env, "mail", "read-thread", "msgid:<r1@example.net>")
    assert done.returncode == 2
    assert "pgp.encrypt_replies" in done.stderr and "true or false" in done.stderr
