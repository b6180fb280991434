"""One rule for every file we read or write (issue 31 item 2): a regular file of the user, not a
symlink or a FIFO, in a folder the user owns that no one else can write; the same check on read
and on write. Each case plants the file or its folder as another local user (uid 65534)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mailtriage.core import cache_file, config_cache, private_files
from mailtriage.core.errors import ConfigError
from mailtriage.core.settings import load_settings

NOBODY = 65534
as_root = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                             reason="planting a file as another user needs root")


def give_away(*paths: Path) -> None:
    """What another local user left there: each path (not what a link points to) is theirs."""
    for path in paths:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)


def planted_folder(parent: Path, name: str) -> Path:
    folder = parent / name
    folder.mkdir(mode=0o755)
    return folder


# -- config.toml -----------------------------------------------------------------------------------

@as_root
def test_settings_in_a_folder_another_user_owns_are_refused(tmp_path):
    folder = planted_folder(tmp_path, "config")
    path = folder / "config.toml"
    path.write_text('[pgp]\ngpg = "/tmp/planted-gpg"\n', encoding="utf-8")
    give_away(path, folder)
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert str(folder) in str(info.value) and "owned by uid 65534" in str(info.value)


@as_root
def test_a_settings_file_another_user_owns_is_refused(tmp_path):
    folder = tmp_path / "config"
    folder.mkdir(mode=0o700)
    path = folder / "config.toml"
    path.write_text('attachment_command = "/tmp/planted"\n', encoding="utf-8")
    give_away(path)
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert "owned by uid 65534" in str(info.value)


def test_a_settings_file_that_is_a_symlink_is_refused(tmp_path):
    folder = tmp_path / "config"
    folder.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text('attachment_command = "/tmp/planted"\n', encoding="utf-8")
    (folder / "config.toml").symlink_to(elsewhere)
    with pytest.raises(ConfigError) as info:
        load_settings(folder / "config.toml")
    assert "symbolic link" in str(info.value)


@as_root
def test_the_cli_refuses_planted_settings_with_exit_2(tmp_path):
    folder = planted_folder(tmp_path, "config")
    marker = tmp_path / "ran"
    planted = tmp_path / "planted-gpg"
    planted.write_text(f"#!/bin/sh\ntouch {marker}\n")
    planted.chmod(0o755)
    (folder / "config.toml").write_text(f'[pgp]\ngpg = "{planted}"\n', encoding="utf-8")
    give_away(folder / "config.toml", folder)
    env = {**os.environ, "MAILTRIAGE_CONFIG_DIR": str(folder), "MAILTRIAGE_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-m", "mailtriage.cli.main", "account", "status", "work"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "owned by uid 65534" in done.stderr
    assert not marker.exists()


def test_saving_settings_is_atomic_and_private(tmp_path):
    from mailtriage.core.settings import UserSettings

    path = tmp_path / "config" / "config.toml"
    settings = UserSettings(path, {"theme": "dark"})
    settings.save()
    assert load_settings(path).theme == "dark"
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)
    assert sorted(p.name for p in path.parent.iterdir()) == ["config.toml"]


# -- --trace FILE ------------------------------------------------------------------------------------

def run_trace(target: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mailtriage.cli.main", "--trace", str(target), "--help"],
                          capture_output=True, text=True, timeout=120)


@as_root
def test_the_trace_never_follows_a_planted_symlink(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir(mode=0o700)
    victim = tmp_path / "theirs.log"
    victim.write_text("their file\n")
    give_away(victim)
    (folder / "trace.log").symlink_to(victim)
    done = run_trace(folder / "trace.log")
    assert done.returncode == 2, done.stderr
    assert "symbolic link" in done.stderr
    assert victim.read_text() == "their file\n"


@as_root
def test_the_trace_is_not_written_in_a_folder_another_user_owns(tmp_path):
    folder = planted_folder(tmp_path, "shared")
    give_away(folder)
    done = run_trace(folder / "trace.log")
    assert done.returncode == 2, done.stderr
    assert "owned by uid 65534" in done.stderr
    assert not (folder / "trace.log").exists()


def test_a_fifo_as_the_trace_is_refused_at_once(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir(mode=0o700)
    os.mkfifo(folder / "trace.log")
    done = run_trace(folder / "trace.log")
    assert done.returncode == 2, done.stderr
    assert "not a regular file" in done.stderr


def test_a_trace_in_a_shared_sticky_folder_says_what_to_do_not_to_chmod_it(tmp_path):
    """``--trace /tmp/x.log``: a shared folder (every user can write it, sticky like /tmp) is
    refused, and the message says how to go on: a folder of one's own, or stderr. It must never
    advise ``chmod go-w`` on a shared folder (done to /tmp that breaks the machine)."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    done = run_trace(shared / "trace.log")
    assert done.returncode == 2, done.stderr
    assert "chmod go-w" not in done.stderr
    assert f"mkdir -m 700 {shared}/" in done.stderr
    assert "--trace -" in done.stderr
    assert not (shared / "trace.log").exists()


def test_a_trace_in_a_missing_folder_says_to_create_it_not_to_remove_it(tmp_path):
    missing = tmp_path / "traces"
    done = run_trace(missing / "trace.log")
    assert done.returncode == 2, done.stderr
    assert "does not exist" in done.stderr
    assert "remove it" not in done.stderr and "chmod" not in done.stderr
    assert f"mkdir -m 700 {missing}" in done.stderr


def test_a_trace_file_of_ours_is_appended_to_and_private(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir(mode=0o700)
    (folder / "trace.log").write_text("before\n")
    (folder / "trace.log").chmod(0o600)
    done = run_trace(folder / "trace.log")
    assert done.returncode == 0, done.stderr
    assert (folder / "trace.log").read_text().startswith("before\n")


# -- caches: the kept first frame, the summary cache, the mbox index, the project-config cache -----

def plant_cache_file(folder: Path, name: str, kind: str, version: int, *sections) -> Path:
    """A well-formed cache file, written by another user in a folder of theirs."""
    path = folder / name
    cache_file.write(path, kind, version, *sections)
    give_away(path, folder)
    return path


@pytest.fixture
def terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("LINES", "30")
    master, slave = os.openpty()
    yield slave, master
    os.close(master)
    os.close(slave)


def _frame_setup(tmp_path, cache):
    from mailtriage.tui import first_paint

    settings_path = tmp_path / "config.toml"
    settings_path.write_text('name = "T"\n')
    project = tmp_path / "project"
    project.mkdir()
    path = first_paint.frame_path(project, demo=False, size=(100, 30))
    key = first_paint.signature(project, demo=False, size=(100, 30), settings_path=settings_path)
    return first_paint, settings_path, project, path, key


def _written(master: int) -> bytes:
    import select

    out = b""
    while select.select([master], [], [], 0.1)[0]:
        out += os.read(master, 65536)
    return out


@as_root
def test_a_frame_planted_in_a_cache_folder_another_user_owns_is_not_shown(tmp_path, cache, terminal):
    first_paint, settings_path, project, path, key = _frame_setup(tmp_path, cache)
    cache.mkdir(mode=0o700)
    path.parent.mkdir(mode=0o755)
    plant_cache_file(path.parent, path.name, first_paint.KIND, first_paint.VERSION,
                     {"signature": key, "frame": "PLANTED FRAME"})
    slave, master = terminal
    assert first_paint.show(project, demo=False, settings_path=settings_path, fd=slave) is None
    assert b"PLANTED" not in _written(master)


def test_a_fifo_under_the_frames_name_does_not_hang_the_start(tmp_path, cache, terminal):
    first_paint, settings_path, project, path, _key = _frame_setup(tmp_path, cache)
    path.parent.mkdir(parents=True, mode=0o700)
    cache.chmod(0o700)
    os.mkfifo(path)
    slave, _master = terminal
    result = []
    worker = threading.Thread(target=lambda: result.append(
        first_paint.show(project, demo=False, settings_path=settings_path, fd=slave)), daemon=True)
    worker.start()
    worker.join(60)
    hung = worker.is_alive()
    if hung:  # let the old code's blocked open go
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        worker.join(10)
    assert not hung, "showing the kept frame waited on a FIFO"
    assert result == [None]


@as_root
def test_keeping_a_frame_in_a_cache_folder_another_user_owns_is_refused_quietly(tmp_path, cache):
    first_paint, settings_path, project, path, _key = _frame_setup(tmp_path, cache)
    cache.mkdir(mode=0o700)
    path.parent.mkdir(mode=0o755)
    give_away(path.parent)
    assert first_paint.keep(project, demo=False, size=(100, 30), frame="a frame", settings_path=settings_path,
                            settings_data={}) is False
    assert list(path.parent.iterdir()) == []


@as_root
def test_a_summary_cache_planted_by_another_user_is_not_read(tmp_path):
    from mailtriage.backends.imap import summary_cache

    folder = planted_folder(tmp_path, "imap")
    path = plant_cache_file(folder, "INBOX.cache", summary_cache.KIND, summary_cache.VERSION,
                            (1, 1, 2, 1, 1, None, ()))
    cache, why = summary_cache.read_file(path)
    assert cache is None
    assert "owned by uid 65534" in why


@as_root
def test_an_mbox_index_planted_by_another_user_is_not_read(tmp_path):
    from mailtriage.backends import mbox_index_store

    folder = planted_folder(tmp_path, "mbox")
    path = plant_cache_file(folder, "x.index", mbox_index_store.KIND, mbox_index_store.VERSION, {"planted": 1})
    sections, _main, why = mbox_index_store._read_file(path, mbox_index_store.KIND, mbox_index_store.VERSION, 1)
    assert sections is None
    assert "owned by uid 65534" in why


@as_root
def test_a_project_config_cache_planted_by_another_user_is_not_used(tmp_path, cache):
    cache.mkdir(mode=0o700)
    project = tmp_path / "project.md"
    text = "tracker:\n  platform: github\n"
    calls = []

    def parse(block):
        calls.append(block)
        return {"tracker": {"platform": "github"}}

    config_cache.parsed(text, project, parse)  # kept once, as the user
    kept = config_cache._cache_path(project)
    assert kept is not None and kept.exists()
    payload, _ = cache_file.read(kept, config_cache.KIND, config_cache.VERSION)
    fingerprint = payload[0]
    os.unlink(kept)
    folder = kept.parent
    cache_file.write(kept, config_cache.KIND, config_cache.VERSION,
                     (fingerprint, text, {"tracker": {"platform": "planted"}}))
    give_away(kept)
    assert config_cache.parsed(text, project, parse) == {"tracker": {"platform": "github"}}
    assert len(calls) == 2
    assert folder.exists()


def test_a_cache_file_that_is_a_symlink_is_not_read(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    real = tmp_path / "real.cache"
    cache_file.write(real, "k", 1, "payload")
    (folder / "x.cache").symlink_to(real)
    payload, why = cache_file.read(folder / "x.cache", "k", 1)
    assert payload is None and "symbolic link" in why


# -- the data folder: import's thread index, sync's facts, poll's cursor --------------------------------

@as_root
def test_the_thread_index_is_not_read_from_a_data_folder_another_user_owns(tmp_path):
    from mailtriage.application.flows.threadindex import VERSION, ThreadIndex

    root = tmp_path / "tracker"
    root.mkdir()
    issue = root / "SEC-1.md"
    issue.write_text("# an issue that names no thread\n")
    st = issue.stat()
    folder = planted_folder(tmp_path, "tracker-threads")
    index = folder / "x.json"
    index.write_text(json.dumps({"v": VERSION, "files": {"SEC-1.md": [st.st_mtime_ns, st.st_size, ["planted@x"]]}}))
    give_away(index, folder)
    assert ThreadIndex(root, index).candidates("<planted@x>") == []
    assert sorted(p.name for p in folder.iterdir()) == ["x.json"]  # and nothing written there


@as_root
def test_sync_facts_are_not_read_from_a_data_folder_another_user_owns(tmp_path):
    from mailtriage.application.flows.sync import _IssueFacts

    folder = planted_folder(tmp_path, "sync-issues")
    path = folder / "x.json"
    path.write_text(json.dumps({"v": 1, "files": {"SEC-1.md": [1, 2, {"planted": True}]}}))
    give_away(path, folder)
    facts = _IssueFacts(tmp_path, path)
    assert facts.facts == {}


@as_root
def test_the_alert_cursor_is_not_read_from_a_data_folder_another_user_owns(tmp_path):
    from mailtriage.application.flows.alerts import CursorStore

    folder = planted_folder(tmp_path, "alerts")
    path = folder / "x.json"
    path.write_text(json.dumps({"v": 1, "seen": {"<planted@x>": ""}}))
    give_away(path, folder)
    store = CursorStore(path)
    assert store.load() is None
    assert "owned by uid 65534" in store.problem


# -- the helper itself ----------------------------------------------------------------------------------

def test_a_write_replaces_the_file_whole_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "state" / "x.json"
    private_files.write_atomic(path, b"old")
    private_files.write_atomic(path, [b"n", b"ew"])
    assert private_files.read_bytes(path) == b"new"
    assert [p.name for p in path.parent.iterdir()] == ["x.json"]


def test_a_temporary_file_left_by_a_killed_writer_is_removed_by_the_next_write(tmp_path):
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    (folder / f".x.json.{dead}.abcdef.tmp").write_bytes(b"torn")
    private_files.write_atomic(folder / "x.json", b"whole")
    assert [p.name for p in folder.iterdir()] == ["x.json"]


@as_root
def test_a_send_ledger_planted_by_another_user_refuses_sending_rather_than_trusting_it(tmp_path):
    from mailtriage.backends.send_ledger import SendLedger

    folder = planted_folder(tmp_path, "data")
    path = folder / "send-ledger.json"
    path.write_text(json.dumps({"work": []}))  # "nothing sent lately": the cap lifted
    give_away(path, folder)
    with pytest.raises(ConfigError) as info:  # the command stops: exit 2, nothing sent
        SendLedger(path).count("work")
    assert "owned by uid 65534" in str(info.value)


@as_root
def test_an_imap_label_registry_planted_by_another_user_is_not_read(tmp_path, monkeypatch):
    from mailtriage.backends.imap import labels

    folder = planted_folder(tmp_path, "data")
    (folder / "imap-labels.json").write_text(json.dumps({"work": ["planted"]}))
    give_away(folder / "imap-labels.json", folder)
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(folder))
    assert labels._load() == {}


def test_the_save_proposal_is_blocked_for_a_folder_every_user_can_write(tmp_path):
    """The app's save dialog goes through the same proposal as the command line."""
    from mailtriage.application.flows.attachments import AttachmentItem, propose_save

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    item = AttachmentItem(1, 0, "<m@x>", "ref", "poc.py", "text/x-python", 3)
    proposal = propose_save([item], shared, lambda _item: b"abc", source="mbox")
    assert proposal.blocked and "writable by every user" in proposal.blocked.text
    with pytest.raises(PermissionError):
        proposal.apply(confirmed=True)
    assert os.listdir(shared) == []


def test_a_users_own_file_shaped_like_a_leftover_is_never_removed(tmp_path):
    """Saving ``report.pdf`` into a folder of the user's removes only temporary files our own
    writer made (``.<name>.<pid>.<12 hex>.tmp``); a file of the user's that merely looks
    similar (here: a dead pid, no random part) stays."""
    folder = tmp_path / "downloads"
    folder.mkdir(mode=0o700)
    mine = folder / ".report.pdf.99999999.tmp"
    mine.write_bytes(b"the user's own notes")
    ours = folder / ".report.pdf.99999999.0123456789ab.tmp"  # what a killed writer leaves
    ours.write_bytes(b"half")
    name = private_files.create_atomic(folder, ["report.pdf"], b"%PDF")
    assert name == "report.pdf"
    assert mine.read_bytes() == b"the user's own notes"
    assert not ours.exists()
