"""Build mbox files, Maildirs and .eml folders from raw messages for the tests."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Sequence

from mailtriage.core import cache_file

_FROM_LINE = re.compile(rb"^From ", re.MULTILINE)


def from_line(sender: str = "archive@example.org", when: str = "Mon Jan  1 00:00:00 2024") -> bytes:
    return f"From {sender} {when}\n".encode()


def mbox_bytes(messages: Sequence[bytes], from_lines: Sequence[bytes] | None = None) -> bytes:
    """mboxo: each message after a From_ line, body "From " lines escaped, a blank line after."""
    parts = []
    for n, raw in enumerate(messages):
        line = from_lines[n] if from_lines else from_line()
        head_end = raw.find(b"\n\n")
        if head_end >= 0:
            raw = raw[: head_end + 2] + _FROM_LINE.sub(b">From ", raw[head_end + 2:])
        if not raw.endswith(b"\n"):
            raw += b"\n"
        parts.append(line + raw + b"\n")
    return b"".join(parts)


def write_mbox(path: Path, messages: Sequence[bytes], from_lines: Sequence[bytes] | None = None) -> Path:
    path.write_bytes(mbox_bytes(messages, from_lines))
    return path


def write_maildir(root: Path, messages: Sequence[bytes]) -> Path:
    for sub in ("cur", "new", "tmp"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for n, raw in enumerate(messages):
        folder = "cur" if n % 2 else "new"
        name = f"{1700000000 + n}.M{n}P1.testhost" + (":2,S" if folder == "cur" else "")
        (root / folder / name).write_bytes(raw)
    return root


def write_eml_folder(root: Path, messages: Sequence[bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for n, raw in enumerate(messages):
        sub = root / ("nested" if n % 3 == 0 else "")
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"message-{n:04d}.eml").write_bytes(raw)
    return root


def snapshot(path: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``path`` (or the file itself): bytes and mtime, to prove nothing changed."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in files}


def damage_cache_file(path: Path, how: str, kind: str, version: int) -> None:
    """Damage a cache file as a crash, a disk or another version would: ``truncated``,
    ``flipped`` (one byte of the last section), ``other-version``, ``garbage`` or ``empty``."""
    blob = path.read_bytes()
    if how == "truncated":
        path.write_bytes(blob[: len(blob) // 2])
    elif how == "flipped":
        path.write_bytes(blob[:-10] + bytes([blob[-10] ^ 0xFF]) + blob[-9:])
    elif how == "other-version":
        cache_file.write(path, kind, version + 1, ("anything",))
    elif how == "garbage":
        path.write_bytes(os.urandom(len(blob) // 2 or 300))
    elif how == "empty":
        path.write_bytes(b"")
    else:
        raise ValueError(how)
