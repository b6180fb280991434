"""``mailtriage mail save-attachments`` on the mbox backend with hostile attachment names
(issue 14 §1): every file lands as a new plain child of ``--to`` under a safe name, the
real name is reported inert, and nothing is written without confirmation."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from email.message import EmailMessage

import pytest

from mailtriage.cli.main import main
from tests.hostile.corpus import assert_inert, cases
from tests.mbox.mboxes import write_mbox

LIST = "security@frobnicator.example.org"
NAMES = ["../../x", "/etc/passwd", "CON", "..", "\x1b]0;owned\x07.txt", "poc.py", "poc.py"]


def hostile_names_mail() -> bytes:
    msg = EmailMessage()
    msg["From"] = "Mallory <mallory@reporter.example>"
    msg["To"] = LIST
    msg["Subject"] = "Many PoCs"
    msg["Date"] = "Tue, 01 Sep 2026 10:00:00 +0000"
    msg["Message-ID"] = "<names@reporter.example>"
    msg.set_content("see attached\n")
    for n, name in enumerate(NAMES):
        msg.add_attachment(f"file {n}\n".encode(), maintype="application", subtype="octet-stream", filename=name)
    return msg.as_bytes()


@pytest.fixture
def archive_env(env, tmp_path):
    raws = [hostile_names_mail(), cases()["14-bidi-attachment.eml"].replace(b"\r\n", b"\n")]
    archive = write_mbox(env.project / "hostile.mbox", raws)
    env.write_project([("mbox", "primary", "yes")], extra={"mail_sources.mbox": {"path": archive.name, "list": LIST}})
    target = tmp_path / "downloads"
    target.mkdir()
    env.target = target
    return env


def run(capsys, monkeypatch, env, *args, stdin="n\n"):
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(["--project", str(env.project), "mail", "save-attachments", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_every_hostile_name_is_saved_inside_the_folder(capsys, monkeypatch, archive_env, tmp_path):
    code, out, err = run(capsys, monkeypatch, archive_env, "mbox:<names@reporter.example>",
                         "--to", str(archive_env.target), "--yes")
    assert code == 0, err
    assert_inert(out, "stdout")
    assert_inert(err, "stderr")
    doc = json.loads(out)
    assert doc["backend"] == "mbox" and doc["written"] is True
    assert [s["real_name"] for s in doc["saved"]] == NAMES
    assert [s["saved_as"] for s in doc["saved"]] == ["x", "passwd", "_CON", "attachment", "_]0;owned_.txt",
                                                     "poc.py", "poc (1).py"]
    for n, saved in enumerate(doc["saved"]):
        data = f"file {n}\n".encode()
        assert saved["size"] == len(data) and saved["sha256"] == hashlib.sha256(data).hexdigest()
        assert os.path.dirname(saved["path"]) == str(archive_env.target)
    assert sorted(os.listdir(archive_env.target)) == sorted(s["saved_as"] for s in doc["saved"])
    assert not (tmp_path / "x").exists()


def test_a_bidi_name_is_reported_escaped_and_saved_without_the_override(capsys, monkeypatch, archive_env):
    code, out, err = run(capsys, monkeypatch, archive_env, "mbox:<hostile-14@reporter.example>",
                         "--to", str(archive_env.target), "--name", "invoice\u202efdp.exe", "--yes")
    assert code == 0, err
    assert_inert(out + err, "bidi")
    (saved,) = json.loads(out)["saved"]
    assert saved["real_name"] == "invoice\u202efdp.exe" and "\\u202e" in out
    assert saved["saved_as"] == "invoicefdp.exe"
    assert (archive_env.target / "invoicefdp.exe").read_bytes() == b"MZ\x90\x00"


def test_nothing_is_written_without_confirmation(capsys, monkeypatch, archive_env):
    code, out, err = run(capsys, monkeypatch, archive_env, "mbox:<names@reporter.example>",
                         "--to", str(archive_env.target))
    assert code == 0 and "not confirmed" in err
    assert json.loads(out)["written"] is False and os.listdir(archive_env.target) == []


def test_a_thread_without_attachments_writes_nothing(capsys, monkeypatch, env, tmp_path):
    raw = cases()["01-osc0-title.eml"].replace(b"\r\n", b"\n")
    archive = write_mbox(env.project / "plain.mbox", [raw])
    env.write_project([("mbox", "primary", "yes")], extra={"mail_sources.mbox": {"path": archive.name, "list": LIST}})
    mid = raw.split(b"Message-ID: ", 1)[1].split(b"\n", 1)[0].decode()
    code, out, err = run(capsys, monkeypatch, env, f"mbox:{mid}", "--to", str(tmp_path), "--yes")
    assert code == 0 and json.loads(out)["saved"] == [] and "no attachments" in err


# -- the target folder and atomic writes (issue 31 item 2, issue 38 item 3) ----------------------------

BIG = 24 * 1024 * 1024


def big_mail(data: bytes, name: str = "poc-big.bin", mid: str = "<big@reporter.example>") -> bytes:
    msg = EmailMessage()
    msg["From"] = "Mallory <mallory@reporter.example>"
    msg["To"] = LIST
    msg["Subject"] = "A big PoC"
    msg["Date"] = "Tue, 01 Sep 2026 10:00:00 +0000"
    msg["Message-ID"] = mid
    msg.set_content("see attached\n")
    msg.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return msg.as_bytes()


@pytest.fixture
def big_env(env, tmp_path):
    data = os.urandom(BIG)
    archive = write_mbox(env.project / "big.mbox", [big_mail(data)])
    env.write_project([("mbox", "primary", "yes")],
                      extra={"mail_sources.mbox": {"path": archive.name, "list": LIST, "max_message_bytes": 0}})
    env.data = data
    target = tmp_path / "downloads"
    target.mkdir(mode=0o700)
    env.target = target
    return env


def save_big(env, target) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mailtriage.cli.main", "--project", str(env.project), "mail",
                             "save-attachments", "mbox:<big@reporter.example>", "--to", str(target), "--yes"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def kill_mid_write(env, target) -> list[str]:
    """Start a save and SIGKILL it the moment a file of it shows up in ``target`` while the real
    name is not whole yet (a temporary file, or the real name still short); what is left then.
    None when the save ended first (it was never seen mid-write)."""
    proc = save_big(env, target)
    try:
        while proc.poll() is None:
            names = os.listdir(target)
            if not names:
                # Not a wait for a time: the loop looks again in a millisecond, and leaves the core
                # to the save meanwhile (a busy loop here took a core from it while it started).
                time.sleep(0.001)
                continue
            try:
                if os.stat(target / "poc-big.bin").st_size == BIG:
                    return None  # saved whole before it was seen mid-write: too late for this try
            except FileNotFoundError:
                pass
            proc.send_signal(signal.SIGKILL)  # a file of the save is there, the real name not whole
            proc.wait(60)
            return sorted(os.listdir(target))
        return None
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(60)
        proc.stderr.close()


@pytest.mark.slow  # child processes killed mid-write
def test_a_save_killed_mid_write_leaves_no_torn_file_and_a_rerun_saves_under_the_real_name(big_env, tmp_path):
    left = None
    for attempt in range(5):  # the kill waits for the write to be seen, not for a time
        target = tmp_path / f"downloads-{attempt}"
        target.mkdir(mode=0o700)
        left = kill_mid_write(big_env, target)
        if left is not None:
            break
    assert left is not None, "the save was never seen mid-write in 5 tries"
    real = target / "poc-big.bin"
    assert not real.exists() or real.read_bytes() == big_env.data, f"a torn file under the real name: {left}"
    done = save_big(big_env, target)
    _out, err = done.communicate(timeout=300)
    assert done.returncode == 0, err.decode()
    assert real.read_bytes() == big_env.data
    assert sorted(os.listdir(target)) == ["poc-big.bin"]  # no "poc-big (1).bin", no temporary file left


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="giving a folder away needs root")
def test_a_target_folder_another_user_owns_is_refused(capsys, monkeypatch, archive_env):
    os.chown(archive_env.target, 65534, 65534)
    code, out, err = run(capsys, monkeypatch, archive_env, "mbox:<names@reporter.example>",
                         "--to", str(archive_env.target), "--yes")
    assert code == 2, err
    assert "owned by uid 65534" in err
    assert os.listdir(archive_env.target) == []


def test_a_target_folder_every_user_can_write_is_refused(capsys, monkeypatch, archive_env):
    archive_env.target.chmod(0o777)
    code, out, err = run(capsys, monkeypatch, archive_env, "mbox:<names@reporter.example>",
                         "--to", str(archive_env.target), "--yes")
    assert code == 2, err
    assert "writable by every user" in err
    assert os.listdir(archive_env.target) == []


# -- a part cut by a cap (issue 31 item 5) --------------------------------------------------------------

def test_an_attachment_cut_by_the_size_cap_is_refused_with_the_mark(capsys, monkeypatch, env, tmp_path):
    data = os.urandom(31_457_280)  # over the 25 MiB default cap once base64-encoded in the archive
    archive = write_mbox(env.project / "cut.mbox", [big_mail(data, mid="<cut@reporter.example>")])
    env.write_project([("mbox", "primary", "yes")], extra={"mail_sources.mbox": {"path": archive.name, "list": LIST}})
    target = tmp_path / "downloads"
    target.mkdir(mode=0o700)
    env.target = target
    code, out, err = run(capsys, monkeypatch, env, "mbox:<cut@reporter.example>", "--to", str(target), "--yes")
    doc = json.loads(out)
    assert os.listdir(target) == []
    assert doc["written"] is False and doc["saved"] == []
    assert code == 4, err
    (listed,) = doc["attachments"]
    assert listed["truncated_at"] == 26_214_400
    (refused,) = doc["refused"]
    assert refused["key"] == "1.1" and refused["truncated_at"] == 26_214_400
    assert "truncated at 26,214,400 bytes" in err  # in the proposal shown before confirming
    assert "truncated at 26,214,400 bytes" in refused["reason"]
