"""Which kind of archive a path is (mbox, Maildir, ``.eml`` folder), and indexing it.

Moved out of :mod:`backends.mbox` (issue 36).
"""

from __future__ import annotations

from pathlib import Path

from mailtriage.backends.mbox_files import _index_files, _maildir_time, _mtime, eml_files, maildir_files
from mailtriage.backends.mbox_index import ArchiveIndex
from mailtriage.backends.mbox_scan import _mbox_prefix, index_mbox
from mailtriage.core.collector import collector_paused

__all__ = ["index_archive", "sniff_archive"]


# ---------------------------------------------------------------------------
# Sniffing
# ---------------------------------------------------------------------------

def sniff_archive(path: Path) -> str:
    """``mbox``, ``maildir`` or ``eml``; raises ValueError with the reason when none fits."""
    if not path.exists():
        raise ValueError(f"archive path {path} does not exist")
    if path.is_dir():
        if (path / "cur").is_dir() and (path / "new").is_dir():
            return "maildir"
        try:
            has_eml = next((True for p in path.rglob("*.eml") if p.is_file()), False)
        except OSError as exc:
            raise ValueError(f"cannot read folder {path}: {exc.strerror or exc}") from exc
        if has_eml:
            return "eml"
        raise ValueError(f"folder {path} is neither a Maildir (cur/ and new/) nor a folder of .eml files")
    if not path.is_file():  # a FIFO or a device would block or never end
        raise ValueError(f"{path} is neither a regular file nor a folder")
    try:
        with open(path, "rb") as handle:
            head = handle.read(5)
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if head == b"" or head == b"From ":
        return "mbox"
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from exc
    start, _ = _mbox_prefix(head)
    if start:  # a BOM or blank lines before the first From line: read it, with a note
        return "mbox"
    raise ValueError(f"{path} is not an mbox file (it does not start with a 'From ' line)")


def index_archive(path: Path, *, parallel: bool = True) -> ArchiveIndex:
    """Sniff ``path`` and index it. Raises ValueError when it is not an archive."""
    fmt = sniff_archive(path)
    with collector_paused():
        if fmt == "mbox":
            return index_mbox(path, parallel=parallel)
        if fmt == "maildir":
            return _index_files("maildir", maildir_files(path), _maildir_time)
        return _index_files("eml", eml_files(path), _mtime)
