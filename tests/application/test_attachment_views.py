"""What the attachment viewer and the user's own command get (issue 14 §1): a hex dump that
is inert whatever the bytes, text detection, and a command run without a shell, bounded."""

from __future__ import annotations

import os
import stat

import pytest

from mailtriage.application import UsageError, hex_lines, run_command
from mailtriage.application.attachments import command_argv, looks_like_text
from mailtriage.application.errors import AttachmentError
from mailtriage.application.flows.attachments import AttachmentItem


def test_hex_lines_show_only_printable_ascii():
    data = bytes(range(256))
    lines = hex_lines(data)
    assert len(lines) == 16 and lines[0].startswith("00000000  00 01 02")
    assert lines[4] == "00000040  40 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f  |@ABCDEFGHIJKLMNO|"
    assert all(0x20 <= ord(ch) < 0x7f for line in lines for ch in line)
    assert hex_lines(data, 15, 5) == lines[15:]
    assert hex_lines(b"abc", width=8) == [f"00000000  {'61 62 63':<23}  |abc|"]


@pytest.mark.parametrize("data, kind, expected", [
    (b"#!/bin/sh\necho hi\n", "application/octet-stream", True),
    ("héllo\n".encode(), "text/plain", True),
    (b"MZ\x90\x00\x03", "application/octet-stream", False),
    (b"\x1b[2Jtext", "application/octet-stream", False),
    (b"\x1b[2Jtext", "text/plain", True),  # shown as text, escapes as markers
    (b"\xff\xfe\x00a", "text/plain", False),
    ("abc é".encode()[:-1], "text/plain", True),  # a cut last character
])
def test_looks_like_text(data, kind, expected):
    assert looks_like_text(data, kind) is expected


ITEM = AttachmentItem(1, 0, "<m@x>", "ref", "../../evil; rm -rf ~.txt", "text/plain", 3)


def test_run_command_gets_the_safe_named_file_without_a_shell(tmp_path):
    seen = tmp_path / "seen"
    script = tmp_path / "viewer"
    script.write_text(f'#!/bin/sh\nprintf "%s|" "$@" > {seen}\ncat "$2" >> {seen}\n', encoding="utf-8")
    script.chmod(0o755)
    assert run_command([str(script), "--flag; touch pwned"], ITEM, b"abc") == 0
    flag, path, content = seen.read_text().split("|")
    assert flag == "--flag; touch pwned" and content == "abc"
    assert os.path.basename(path) == "evil; rm -rf ~.txt" and stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert not (tmp_path / "pwned").exists()


def test_run_command_failures_are_clear(tmp_path):
    with pytest.raises(AttachmentError, match="no program 'no-such-viewer'"):
        run_command("no-such-viewer", ITEM, b"")
    slow = tmp_path / "slow"
    slow.write_text("#!/bin/sh\nsleep 5\n", encoding="utf-8")
    slow.chmod(0o755)
    with pytest.raises(AttachmentError, match="did not finish within 0.5 s"):
        run_command(str(slow), ITEM, b"", timeout=0.5)
    with pytest.raises(UsageError):
        command_argv("   ")
    with pytest.raises(UsageError):
        command_argv("viewer 'unclosed")
