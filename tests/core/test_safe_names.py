"""Safe names for a stranger's files (issue 14 §1): whatever the name, the file lands as a
new plain child of the folder the user chose; nothing is replaced or written through a symlink."""

from __future__ import annotations

import os
import stat
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mailtriage.core.safe_names import MAX_NAME_BYTES, SaveError, safe_name, save_bytes

# The hostile names corpus: (real name, safe name).
HOSTILE = [
    ("../../x", "x"),
    ("../../../../etc/passwd", "passwd"),
    ("/etc/cron.d/evil", "evil"),
    ("..\\..\\Windows\\System32\\evil.dll", "evil.dll"),
    ("C:\\Users\\me\\evil.exe", "evil.exe"),
    ("C:evil.bat", "evil.bat"),
    ("invoice\u202efdp.exe", "invoicefdp.exe"),
    ("photo\u200b.jpg\u2066", "photo.jpg"),
    ("a\x1b]52;c;ZWNobyBvd25lZA==\x07b.txt", "a_]52;c;ZWNobyBvd25lZA==_b.txt"),
    ("line\nbreak\r.txt", "line_break_.txt"),
    ("NUL\x00hidden.txt", "NUL_hidden.txt"),
    ("CON", "_CON"),
    ("con.txt", "_con.txt"),
    ("NUL.tar.gz", "_NUL.tar.gz"),
    ("COM1", "_COM1"),
    ("lpt9.log", "_lpt9.log"),
    ("COM¹.txt", "_COM¹.txt"),
    ("CONSOLE.txt", "CONSOLE.txt"),
    ("", "attachment"),
    (".", "attachment"),
    ("..", "attachment"),
    ("...", "attachment"),
    ("/", "attachment"),
    ("   ", "attachment"),
    (".bashrc", "bashrc"),
    ("trailing. . .", "trailing"),
    ('what?<>:"|*.txt', "what_______.txt"),
    ("tag\U000e0041\U000e0042s.txt", "tags.txt"),
    ("poc.py", "poc.py"),
    ("rapport d'audit (v2).pdf", "rapport d'audit (v2).pdf"),
    ("Zürich.txt", "Zürich.txt"),
]


@pytest.mark.parametrize("real, safe", HOSTILE)
def test_hostile_names_become_safe_names(real, safe):
    assert safe_name(real) == safe


def test_an_over_long_name_keeps_its_extension_within_the_limit():
    name = safe_name("é" * 400 + ".tar")
    assert name.endswith(".tar") and len(name.encode("utf-8")) <= MAX_NAME_BYTES
    assert safe_name("x" * 1000).encode("utf-8") == b"x" * MAX_NAME_BYTES


@pytest.mark.parametrize("real, safe", HOSTILE)
def test_each_hostile_name_is_saved_inside_the_folder(tmp_path, real, safe):
    target = tmp_path / "saved"
    target.mkdir()
    saved = save_bytes(target, real, b"data")
    assert saved.path == target / safe and saved.path.read_bytes() == b"data"
    assert os.listdir(tmp_path) == ["saved"]  # nothing beside the folder
    assert stat.S_IMODE(saved.path.stat().st_mode) == 0o600


def test_collisions_are_numbered_and_nothing_is_replaced(tmp_path):
    (tmp_path / "poc.py").write_bytes(b"mine")
    first = save_bytes(tmp_path, "poc.py", b"one")
    second = save_bytes(tmp_path, "../poc.py", b"two")
    assert (first.path.name, second.path.name) == ("poc (1).py", "poc (2).py")
    assert (tmp_path / "poc.py").read_bytes() == b"mine"
    assert save_bytes(tmp_path, "README", b"a").path.name == "README"
    assert save_bytes(tmp_path, "README", b"b").path.name == "README (1)"


def test_a_symlink_in_the_folder_is_never_written_through(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = tmp_path / "target"
    target.mkdir()
    (target / "report.txt").symlink_to(outside / "victim.txt")
    (target / "dangling").symlink_to("/nonexistent/x")
    saved = save_bytes(target, "report.txt", b"payload")
    assert saved.path == target / "report (1).txt"
    assert not (outside / "victim.txt").exists()
    assert save_bytes(target, "dangling", b"payload").path == target / "dangling (1)"
    assert os.listdir(outside) == []


def test_a_target_that_is_not_a_folder_is_refused(tmp_path):
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(SaveError):
        save_bytes(tmp_path / "file", "x", b"")
    with pytest.raises(SaveError):
        save_bytes(tmp_path / "missing", "x", b"")


def test_a_chosen_name_is_made_safe_too(tmp_path):
    assert save_bytes(tmp_path, "evil.sh", b"", name="../mine.txt").path == tmp_path / "mine.txt"


_FORBIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def _check_plain(name: str) -> None:
    assert name not in ("", ".", "..") and not name.startswith(".")
    assert "/" not in name and "\\" not in name and "\0" not in name
    assert len(name.encode("utf-8")) <= MAX_NAME_BYTES
    assert not any(unicodedata.category(ch) in _FORBIDDEN_CATEGORIES for ch in name)
    assert name.split(".")[0].strip().upper() not in {"CON", "PRN", "AUX", "NUL", "COM1", "LPT1"}


@given(st.text(max_size=600))
@settings(max_examples=400, deadline=None)
def test_any_text_becomes_a_plain_name(real):
    _check_plain(safe_name(real))


_PIECES = st.sampled_from(["..", ".", "/", "\\", "C:", "CON", "nul", "\u202e", "\u200b", "\x00", "\x1b", "\n",
                           "a", "é", "poc", ".py", " ", "~", "$HOME", "\U000e0041", "?*"])


@given(st.lists(st.one_of(_PIECES, st.text(max_size=20)), max_size=30).map("".join))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_any_name_is_saved_as_a_plain_child_of_the_folder(tmp_path, real):
    target = tmp_path / "t"
    target.mkdir(exist_ok=True)
    saved = save_bytes(target, real, b"x")
    try:
        _check_plain(saved.path.name)
        assert saved.path.parent == target
        assert Path(os.path.realpath(saved.path)).parent == Path(os.path.realpath(target))
        assert saved.path.is_file() and not saved.path.is_symlink()
        assert sorted(os.listdir(tmp_path)) == ["t"]
    finally:
        saved.path.unlink()


@pytest.mark.parametrize("filler", ["\u3164", "\uffa0", "\u115f", "\u1160", "\u2800"])
def test_invisible_fillers_are_dropped_from_saved_names(filler):
    """Hangul and halfwidth fillers and the blank Braille pattern look like nothing: a name
    keeps none of them (issue 31 item 6), and a name of nothing else becomes the fallback."""
    assert safe_name(f"report{filler}.pdf{filler}") == "report.pdf"
    assert safe_name(f"invoice.pdf{filler * 40}.exe") == "invoice.pdf.exe"
    assert safe_name(filler * 3) == "attachment"


_FILLERS = st.sampled_from(["\u3164", "\uffa0", "\u115f", "\u1160", "\u2800", "\u180e", "\u034f", "a", ".", " "])


@given(st.lists(st.one_of(_FILLERS, st.text(max_size=10)), max_size=20).map("".join))
@settings(max_examples=300, deadline=None)
def test_no_saved_name_holds_a_character_the_output_boundary_marks(real):
    from mailtriage.core.inert import has_hidden_characters

    assert not has_hidden_characters(safe_name(real))
    assert "\u2800" not in safe_name(real)
