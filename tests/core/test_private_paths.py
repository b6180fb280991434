"""No shared, predictable paths (issue 20 §13): every folder we keep state in is the
user's own, or we refuse it with a message."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from mailtriage.backends.send_ledger import SendLedger
from mailtriage.core.paths import UnsafePath, check_private_dir, private_dir
from mailtriage.demo.workspace import READY_MARK, demo_workspace_dir, ensure_demo_workspace
from mailtriage.application.flows.alerts import CursorStore

NOBODY = 65534
as_root = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                             reason="giving a folder to another user needs root")


def plant_demo(folder: Path) -> Path:
    """What another local user could leave at the demo path: a ready-looking project."""
    folder.mkdir(parents=True)
    (folder / READY_MARK).write_text("ok\n")
    (folder / "project.md").write_text("# Planted\n")
    return folder


def test_the_demo_workspace_is_in_the_users_data_dir_not_a_shared_temp_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("MAILTRIAGE_DEMO_DIR", raising=False)
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(tmp_path / "data"))
    import tempfile

    assert demo_workspace_dir() == tmp_path / "data" / "demo"
    assert not str(demo_workspace_dir()).startswith(tempfile.gettempdir() + "/mailtriage-demo")
    workspace = ensure_demo_workspace()
    assert (workspace / "project.md").is_file()
    assert stat.S_IMODE(os.stat(workspace).st_mode) & 0o077 == 0
    assert stat.S_IMODE(os.stat(tmp_path / "data").st_mode) & 0o077 == 0


@as_root
def test_a_demo_folder_made_by_another_user_is_refused(tmp_path, monkeypatch):
    planted = plant_demo(tmp_path / "demo")
    for path in (planted, planted / READY_MARK, planted / "project.md"):
        os.chown(path, NOBODY, NOBODY)
    monkeypatch.setenv("MAILTRIAGE_DEMO_DIR", str(planted))
    with pytest.raises(UnsafePath) as info:
        ensure_demo_workspace()
    assert str(planted) in str(info.value) and "owned by uid 65534" in str(info.value)


def test_a_demo_folder_others_can_write_is_refused(tmp_path, monkeypatch):
    planted = plant_demo(tmp_path / "demo")
    planted.chmod(0o777)
    monkeypatch.setenv("MAILTRIAGE_DEMO_DIR", str(planted))
    with pytest.raises(UnsafePath) as info:
        ensure_demo_workspace()
    assert "writable by every user" in str(info.value)


def test_the_cli_refuses_a_planted_demo_folder_with_exit_2(tmp_path):
    planted = plant_demo(tmp_path / "demo")
    planted.chmod(0o777)
    env = {**os.environ, "MAILTRIAGE_DEMO_DIR": str(planted), "MAILTRIAGE_DATA_DIR": str(tmp_path / "data"),
           "MAILTRIAGE_CONFIG_DIR": str(tmp_path / "config")}
    done = subprocess.run([sys.executable, "-m", "mailtriage.cli.main", "--demo", "sources"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert str(planted) in done.stderr and "writable by every user" in done.stderr
    assert "Planted" not in done.stdout


def test_a_folder_inside_a_world_writable_parent_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # no sticky bit: anyone may rename or replace what is inside
    with pytest.raises(UnsafePath) as info:
        private_dir(shared / "state")
    assert "every user can write" in str(info.value)
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)  # like /tmp: allowed for a folder we own
    assert private_dir(sticky / "state").is_dir()


@as_root
def test_a_symlink_planted_by_another_user_is_refused(tmp_path):
    target = tmp_path / "mine"
    target.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(target)
    os.chown(link, NOBODY, NOBODY, follow_symlinks=False)
    with pytest.raises(UnsafePath) as info:
        check_private_dir(link)
    assert "symbolic link" in str(info.value)


def test_the_send_ledger_refuses_a_folder_others_can_write(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    folder.chmod(0o777)
    ledger = SendLedger(folder / "send-ledger.json")
    with pytest.raises(UnsafePath):
        ledger.record("work")
    assert not (folder / "send-ledger.json").exists()


def test_the_alert_cursor_folder_is_private(tmp_path):
    store = CursorStore(tmp_path / "data" / "alerts" / "x.json")
    store.save({"v": 1, "seen": {}})
    assert stat.S_IMODE(os.stat(tmp_path / "data" / "alerts").st_mode) & 0o077 == 0
    (tmp_path / "data" / "alerts").chmod(0o777)
    with pytest.raises(UnsafePath):
        store.save({"v": 1, "seen": {}})


def test_the_modes_record_folder_is_checked(tmp_path):
    folder = tmp_path / "db"
    folder.mkdir()
    folder.chmod(0o777)
    config = tmp_path / "modes.toml"
    config.write_text(f'domain = "mas.test"\ndatabase = "{folder}/modes.sqlite3"\n')
    from mailtriage.cli.modes import main

    assert main(["cases", "--config", str(config)]) == 2
    assert not (folder / "modes.sqlite3").exists()


def test_the_tui_does_not_show_a_modes_record_from_a_folder_others_can_write(tmp_path):
    from mailtriage.modes.store import Store, StoreError
    from mailtriage.application.cases import case_record

    folder = tmp_path / "db"
    folder.mkdir(mode=0o700)
    Store(folder / "modes.sqlite3").close()
    folder.chmod(0o777)
    with pytest.raises(StoreError) as info:
        case_record(folder / "modes.sqlite3", None)
    assert "writable by every user" in str(info.value)


def test_a_shared_sticky_folder_is_refused_with_a_folder_of_ones_own_as_the_way_out(tmp_path):
    """A save into /tmp (``--to /tmp``) or a file right in it: the hint is a private folder
    inside, never ``chmod go-w`` on the shared folder."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    with pytest.raises(UnsafePath) as refused:
        check_private_dir(shared)
    assert "chmod" not in str(refused.value)
    assert f"mkdir -m 700 {shared}/" in str(refused.value)


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="giving a folder away needs root")
def test_inside_another_users_folder_the_way_out_is_a_folder_of_ones_own_elsewhere(tmp_path):
    """/tmp for a user who is not root (root owns it) gets "/tmp/<name>"; a folder another
    (non-root) user owns would refuse anything made inside it, so the hint is the home."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    theirs.chmod(0o1777)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(UnsafePath) as refused:
        check_private_dir(theirs)
    assert "owned by uid 65534" in str(refused.value)
    assert "mkdir -m 700 ~/<name>" in str(refused.value)
    assert f"{theirs}/<name>" not in str(refused.value)
