"""The case of issue 31 item 2 as reproduced: another user's config folder names the program
run as gpg; `mail read-thread` of an encrypted report ran it as the victim. Settings from a
folder another user owns are refused before anything is read or run (exit 2)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.core.helpers import write_project
from tests.pgp.test_cli import write_mbox

from .conftest import pgp_mime_encrypted

ARMORED = b"-----BEGIN PGP MESSAGE-----\r\n\r\nhQEMA1234567890abcdef\r\n=abcd\r\n-----END PGP MESSAGE-----\r\n"


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="planting a folder as another user needs root")
def test_a_gpg_named_by_another_users_config_folder_never_runs(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    write_mbox(folder / "security.mbox", [pgp_mime_encrypted(ARMORED)])
    write_project(folder, [("mbox", "primary", "yes")], config={
        "security_list": "security@example.org",
        "mail_sources": {"mbox": {"path": "security.mbox", "list": "security@example.org"}},
    })
    marker = tmp_path / "planted-gpg-ran"
    planted = tmp_path / "planted-gpg"
    planted.write_text(f"#!/bin/sh\ntouch {marker}\nexit 2\n")
    planted.chmod(0o755)
    config_dir = tmp_path / "config"
    config_dir.mkdir(mode=0o755)
    (config_dir / "config.toml").write_text(f'[pgp]\ngpg = "{planted}"\n', encoding="utf-8")
    for path in (config_dir / "config.toml", config_dir):
        os.chown(path, 65534, 65534)
    env = dict(os.environ, MAILTRIAGE_CONFIG_DIR=str(config_dir), MAILTRIAGE_DATA_DIR=str(tmp_path / "data"))
    done = subprocess.run([sys.executable, "-m", "mailtriage.cli.main", "--project", str(folder), "mail",
                           "read-thread", "msgid:<r1@example.net>"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert not marker.exists(), "the planted gpg ran"
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert str(config_dir) in done.stderr and "owned by uid 65534" in done.stderr
