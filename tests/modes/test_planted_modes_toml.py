"""modes.toml names a CA file, password variables and the thread record's path, so it is read
under the one file rule (core/private_files.py) like config.toml: by `mailtriage modes …`
(modes/config.py) and by the app's Case pane (tui/case.py). Each case plants the file or its
folder as another local user (uid 65534), as tests/core/test_files_trust.py does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mailtriage.core.errors import ConfigError
from mailtriage.modes.config import load_config
from mailtriage.application.cases import modes_database

NOBODY = 65534
as_root = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                             reason="planting a file as another user needs root")


def planted_modes_toml(tmp_path: Path, *, folder_too: bool = True) -> Path:
    folder = tmp_path / "config"
    folder.mkdir(mode=0o755 if folder_too else 0o700)
    path = folder / "modes.toml"
    path.write_text(f'domain = "d.test"\ndatabase = "{tmp_path / "forged" / "modes.sqlite3"}"\n', encoding="utf-8")
    os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    if folder_too:
        os.chown(folder, NOBODY, NOBODY, follow_symlinks=False)
    return path


@as_root
@pytest.mark.parametrize("folder_too", [True, False], ids=["folder", "file"])
def test_a_planted_modes_toml_is_refused(tmp_path, folder_too):
    path = planted_modes_toml(tmp_path, folder_too=folder_too)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "owned by uid 65534" in str(info.value)


def test_a_modes_toml_that_is_a_symlink_is_refused(tmp_path):
    folder = tmp_path / "config"
    folder.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text('domain = "d.test"\n', encoding="utf-8")
    (folder / "modes.toml").symlink_to(elsewhere)
    with pytest.raises(ConfigError) as info:
        load_config(folder / "modes.toml")
    assert "symbolic link" in str(info.value)


@as_root
def test_the_modes_cli_refuses_a_planted_modes_toml_with_exit_2(tmp_path):
    path = planted_modes_toml(tmp_path)
    env = {**os.environ, "MAILTRIAGE_CONFIG_DIR": str(path.parent), "MAILTRIAGE_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-m", "mailtriage.cli.modes", "token"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert str(path.parent) in done.stderr and "owned by uid 65534" in done.stderr
    assert not (tmp_path / "forged").exists()


@as_root
def test_the_case_pane_ignores_the_database_a_planted_modes_toml_names(tmp_path, monkeypatch):
    path = planted_modes_toml(tmp_path)
    data = tmp_path / "data"
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(path.parent))
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(data))
    assert modes_database(None) == data / "modes.sqlite3"


def test_the_case_pane_reads_the_users_own_modes_toml(tmp_path, monkeypatch):
    folder = tmp_path / "config"
    folder.mkdir(mode=0o700)
    (folder / "modes.toml").write_text(f'database = "{tmp_path / "mine.sqlite3"}"\n', encoding="utf-8")
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(folder))
    assert modes_database(None) == tmp_path / "mine.sqlite3"
