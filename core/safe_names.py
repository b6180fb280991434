"""Saving a stranger's file under a safe name inside a folder the user chose (UI-free).

An attachment's file name is untrusted: it may try path traversal (``../../x``), an
absolute path (``/etc/cron.d/x``, ``C:\\x``), a right-to-left override that hides the
real extension (``invoice\\u202efdp.exe``), control characters, a Windows device name
(``CON``, ``NUL``, ``COM1.txt``), invisible fillers (U+3164, U+FFA0, U+115F, U+2800 …: what
core/inert.py marks, dropped), an empty or dot name, a name longer than the file
system takes, or a name that already exists. :func:`safe_name` turns any of these into
one plain file name; :func:`save_bytes` writes the bytes as a new file directly inside
the target folder (one of the user's, see core/private_files.py), never through a symlink
and never over an existing file (written whole under a temporary name, then linked to the
name, which fails when the name exists), adding `` (1)``, `` (2)``… before the extension on
a collision.

The real name is never lost: callers show it (inert) beside the safe one.
"""

from __future__ import annotations

import errno
import hashlib
import os
import unicodedata
from pathlib import Path

from mailtriage.core import private_files
from mailtriage.core.errors import ConfigError, CoreError
from mailtriage.core.inert import is_neutralized
from mailtriage.core.lean_dataclass import frozen_dataclass

#: Bytes of UTF-8 a safe name may take (NAME_MAX is 255; room is kept for `` (NNNN)``).
MAX_NAME_BYTES = 200
#: Bytes of an extension that are kept when a long name is cut.
MAX_EXTENSION_BYTES = 24
#: What an empty name becomes.
FALLBACK_NAME = "attachment"
#: Collisions tried before giving up.
MAX_COLLISIONS = 10_000

# Windows device names, reserved with any extension (CON.txt is CON) and any case.
_DEVICES = {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$", "CLOCK$",
            *(f"COM{c}" for c in "0123456789¹²³"), *(f"LPT{c}" for c in "0123456789¹²³")}
# Characters no Windows file name may hold, and the path separators of every system.
_RESERVED = set('<>:"|?*\\/')
# Letters that draw as nothing though core/inert.py does not mark them (the blank Braille pattern).
_BLANK_LOOKING = {"\u2800"}


def _plain(ch: str) -> str:
    """One character of a name: dropped (format/bidi/zero-width, surrogates), replaced
    (controls, separators, reserved punctuation) or kept."""
    category = unicodedata.category(ch)
    if category in ("Cf", "Cs", "Co", "Cn"):
        return ""  # bidi controls, zero-width and tag characters, surrogates, unassigned
    if category.startswith("C") or category in ("Zl", "Zp") or ch in _RESERVED:
        return "_"
    if is_neutralized(ch) or ch in _BLANK_LOOKING:
        return ""  # what the output boundary marks as invisible (Hangul fillers …), and blank Braille
    if category == "Zs":
        return " "
    return ch


def _last_component(name: str) -> str:
    """The last non-empty component of a path written with ``/`` or ``\\`` (a drive dropped)."""
    parts = [p for p in name.replace("\\", "/").split("/") if p.strip() not in ("", ".", "..")]
    last = parts[-1] if parts else ""
    if len(last) >= 2 and last[1] == ":" and last[0].isascii() and last[0].isalpha():
        last = last[2:]  # C:name (a drive-relative path)
    return last


def _cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` bytes of UTF-8, on a character boundary."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore")


def _split_extension(name: str) -> tuple[str, str]:
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem or len(ext.encode("utf-8")) > MAX_EXTENSION_BYTES or " " in ext:
        return name, ""
    return stem, "." + ext


def safe_name(real_name: str | None) -> str:
    """A plain file name for ``real_name``: one component, no separators, controls, bidi or
    zero-width characters, no leading dot, no Windows device name, at most
    :data:`MAX_NAME_BYTES` bytes of UTF-8, never empty, ``.`` or ``..``."""
    text = unicodedata.normalize("NFC", real_name or "")
    text = _last_component(text)
    text = "".join(_plain(ch) for ch in text)
    text = " ".join(text.split())  # runs of spaces become one; ends trimmed
    text = text.strip(" .")  # no hidden files, no trailing dots (Windows drops them)
    if not text:
        text = FALLBACK_NAME
    stem, ext = _split_extension(text)
    if stem.split(".")[0].strip().upper() in _DEVICES:
        stem = "_" + stem
    if len((stem + ext).encode("utf-8")) > MAX_NAME_BYTES:
        stem = _cut(stem, MAX_NAME_BYTES - len(ext.encode("utf-8"))).rstrip(" .") or FALLBACK_NAME
    return stem + ext


def numbered(name: str, n: int) -> str:
    """``name`` with `` (n)`` before its extension (``poc (2).py``)."""
    if n == 0:
        return name
    stem, ext = _split_extension(name)
    return f"{stem} ({n}){ext}"


@frozen_dataclass
class SavedFile:
    """One file written by :func:`save_bytes`."""

    real_name: str  # the name the sender gave (untrusted: show it inert)
    path: Path  # where it was written: a plain child of the target folder
    size: int
    sha256: str

    @property
    def safe_name(self) -> str:
        return self.path.name

    def to_json(self) -> dict:
        return {"real_name": self.real_name, "saved_as": self.path.name, "path": str(self.path),
                "size": self.size, "sha256": self.sha256}


class SaveError(OSError, CoreError):
    """The target folder cannot take the file (not a folder, not writable, too many collisions)."""


def save_bytes(target_dir: str | os.PathLike, real_name: str | None, data: bytes, *,
               name: str | None = None, mode: int = 0o600) -> SavedFile:
    """Write ``data`` as a new file directly inside ``target_dir``, under the safe form of
    ``name`` (or of ``real_name``), numbered on a collision. The folder must follow the rule of
    every file of ours (core/private_files.py: owned by the user, writable by no one else).
    The file is written whole under a temporary name, synced, then linked to its name: a kill
    leaves no torn file under it (the next save of that name removes the leftover). Never
    follows a symlink and never replaces a file. The file is private (``mode``, 0600 by default).

    Raises:
        SaveError: ``target_dir`` is not a folder, is refused, cannot be written, or every
            numbered name is taken.
    """
    folder = Path(target_dir)
    base = safe_name(name if name is not None else real_name)
    try:
        saved = private_files.create_atomic(folder, (numbered(base, n) for n in range(MAX_COLLISIONS)), data,
                                            mode=mode)
    except ConfigError as exc:
        raise SaveError(errno.EACCES, f"{folder}: {exc.problem} ({exc.valid})") from exc
    except FileExistsError as exc:
        raise SaveError(errno.EEXIST, f"{folder} already holds {MAX_COLLISIONS} files named like {base!r}") from exc
    except NotADirectoryError as exc:
        raise SaveError(errno.ENOTDIR, f"{folder} is not a folder") from exc
    except OSError as exc:
        raise SaveError(exc.errno, f"cannot write {base!r} in {folder}: {exc.strerror or exc}") from exc
    return SavedFile(real_name or "", folder / saved, len(data), hashlib.sha256(data).hexdigest())
