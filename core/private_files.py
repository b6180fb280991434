"""The one rule for every file we read or write: ours, regular, in a folder of ours.

Config (config.toml), caches (summary cache, mbox index, project-config cache, kept first
frames), the data folder (sync, import, poll state), the ``--trace`` file and attachment
targets all go through this module, on read and on write alike:

* the folder passes :func:`mailtriage.core.paths.check_private_dir` (owned by the user, not
  writable by others, inside folders of the user or root);
* the file is opened with ``O_NOFOLLOW`` (a symlink is refused, never followed) and
  ``O_NONBLOCK`` (a FIFO planted under the name cannot hang the open), then checked on the
  open descriptor: a regular file, owned by the user, writable by no one else;
* a file written whole is written to a temporary name beside it (created ``O_EXCL``,
  ``0600``), synced and renamed over the name (:func:`write_atomic`), or linked to a new
  name that must not exist yet (:func:`create_atomic`): a kill at any point leaves the old
  file or the new one, never a torn one. A temporary file a killed writer left behind is
  removed by the next write of that name (:func:`sweep_leftovers`).
"""

from __future__ import annotations

import errno
import fcntl
import itertools
import os
import re
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from mailtriage.core.errors import ConfigError
from mailtriage.core.lazy_re import lazy
from mailtriage.core.paths import UnsafePath, check_private_dir, private_dir

VALID = "a regular file you own, not a link or a FIFO, writable by you only, in a folder of yours"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_TMP_SUFFIX = ".tmp"
_LEFTOVER = lazy(r"([0-9]+)\.[0-9a-f]+" + re.escape(_TMP_SUFFIX))  # <pid>.<random hex>.tmp
_TEMP_NAME = lazy(r"\..+\." + _LEFTOVER.pattern)  # .<name>.<pid>.<random hex>.tmp


class UnsafeFile(ConfigError):
    """A file we would read or write could have been planted by someone else."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(path, "file", problem, VALID)


def _uid() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None


def check_open_file(fd: int, path: Path | str) -> os.stat_result:
    """Raise UnsafeFile unless the open ``fd`` is a regular file of the user that no one else can write."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFile(path, "is not a regular file (a FIFO, a device or a folder)")
    uid = _uid()
    if uid is None:
        return info
    if info.st_uid != uid:
        raise UnsafeFile(path, f"is owned by uid {info.st_uid}, not by you (uid {uid})")
    if info.st_mode & stat.S_IWOTH or (info.st_mode & stat.S_IWGRP and info.st_gid != os.getgid()):
        raise UnsafeFile(path, "is writable by other users")
    return info


def _open_checked(path: Path, flags: int, mode: int = 0o600) -> int:
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFile(path, "is a symbolic link (never followed)") from exc
        if exc.errno == errno.ENXIO:  # a FIFO no one reads, opened to write without waiting
            raise UnsafeFile(path, "is not a regular file (a FIFO, a device or a folder)") from exc
        raise
    try:
        check_open_file(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: Path | str, *, limit: int | None = None) -> bytes:
    """The whole file at ``path`` (at most ``limit`` bytes when given, more is refused).

    Raises:
        FileNotFoundError: there is no such file.
        UnsafePath / UnsafeFile: the folder or the file could have been planted by someone else.
        OSError: it cannot be read.
    """
    path = Path(path)
    os.lstat(path.parent)  # a missing folder: FileNotFoundError, as a missing file
    check_private_dir(path.parent)
    fd = _open_checked(path, os.O_RDONLY)
    chunks = []
    total = 0
    try:
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if limit is not None and total > limit:
                raise UnsafeFile(path, f"is larger than {limit:,} bytes")
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def open_read(path: Path | str) -> int:
    """A descriptor reading ``path`` under the rule (as :func:`read_bytes` opens it), for a
    caller that reads a part of a large file now and the rest later (the caller closes it).

    Raises FileNotFoundError, UnsafePath / UnsafeFile, OSError as :func:`read_bytes`."""
    path = Path(path)
    os.lstat(path.parent)  # a missing folder: FileNotFoundError, as a missing file
    check_private_dir(path.parent)
    return _open_checked(path, os.O_RDONLY)


def read_text(path: Path | str) -> str:
    """:func:`read_bytes` decoded as UTF-8 (UnicodeDecodeError when it is not)."""
    return read_bytes(path).decode("utf-8")


def open_append(path: Path | str) -> int:
    """A descriptor appending to ``path`` (created ``0600`` when missing), under the rule.

    Raises UnsafePath / UnsafeFile when refused, OSError when it cannot be opened."""
    path = Path(path)
    check_private_dir(path.parent)
    return _open_checked(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)


@contextmanager
def exclusive(path: Path | str) -> Iterator[bool]:
    """Hold an flock on ``path`` (an empty file, created ``0600`` under the rule) for the block:
    this user's processes pass one at a time. When the lock file cannot be had (no usable
    data folder) the block runs unserialised, as it would without one; yields whether held."""
    fd = None
    try:
        fd = open_append(path)
        fcntl.flock(fd, fcntl.LOCK_EX)
    except Exception:  # UnsafePath, UnsafeFile, OSError: unserialised
        if fd is not None:
            os.close(fd)
        fd = None
    try:
        yield fd is not None
    finally:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def temp_name(name: str) -> str:
    """A new temporary file name beside ``name``: the one shape :func:`sweep_leftovers` removes
    once its writer (the PID in it) is gone. Other writers of whole files use it too
    (trackers/localfiles.py), so their leftovers are swept alike."""
    return f".{name}.{os.getpid()}.{os.urandom(6).hex()}{_TMP_SUFFIX}"


def is_temp_name(name: str) -> bool:
    """Whether ``name`` (a file name, no folder) has the shape :func:`temp_name` makes: a
    whole-file write in flight (or its leftover), never a file of its own."""
    return _TEMP_NAME.fullmatch(name) is not None


_temp_name = temp_name


def _write_temp(dir_fd: int, name: str, chunks: Iterable[bytes], mode: int) -> tuple[str, int]:
    """A new temporary file beside ``name`` holding ``chunks``, synced; its name and size."""
    tmp = _temp_name(name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=dir_fd)
    size = 0
    try:
        try:
            for chunk in chunks:
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
                size += len(chunk)
            if mode != 0o600:
                os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        _unlink(tmp, dir_fd)
        raise
    return tmp, size


def _open_dir(folder: Path) -> int:
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC)
    try:
        info = os.fstat(fd)
        uid = _uid()
        if uid is not None and info.st_uid != uid:  # swapped after the check: refuse
            raise UnsafePath(folder, f"is owned by uid {info.st_uid}, not by you (uid {uid})")
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_atomic(path: Path | str, data: bytes | Iterable[bytes], *, mode: int = 0o600) -> int:
    """Replace ``path`` with ``data`` whole: a kill at any point leaves the old file or the new
    one. The folder is created ``0700`` when missing, else checked; returns the bytes written.

    Raises UnsafePath when the folder is refused, OSError when it cannot be written."""
    path = Path(path)
    private_dir(path.parent)
    chunks = [data] if isinstance(data, (bytes, bytearray, memoryview)) else data
    dir_fd = _open_dir(path.parent)
    try:
        tmp, size = _write_temp(dir_fd, path.name, chunks, mode)
        try:
            os.replace(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            _unlink(tmp, dir_fd)
            raise
        _sync_dir(dir_fd)
    finally:
        os.close(dir_fd)
    sweep_leftovers(path)
    return size


def create_atomic(folder: Path | str, names: Iterable[str], data: bytes, *, mode: int = 0o600) -> str:
    """Write ``data`` as a NEW file in ``folder`` (which must pass the folder rule), under the
    first of ``names`` that does not exist yet; returns that name. Nothing is ever replaced
    or written through a link: the file is written whole under a temporary name, synced and
    then hard-linked to its name (which fails when the name exists).

    Raises UnsafePath when the folder is refused, FileExistsError when every name is taken,
    OSError when it cannot be written."""
    folder = Path(folder)
    check_private_dir(folder)
    dir_fd = _open_dir(folder)
    try:
        names = iter(names)
        first = next(names)
        _sweep(folder, first)
        tmp, _size = _write_temp(dir_fd, first, [data], mode)
        try:
            for name in itertools.chain((first,), names):
                try:
                    os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
                except FileExistsError:
                    continue
                _sync_dir(dir_fd)
                return name
            raise FileExistsError(errno.EEXIST, "every name is taken")
        finally:
            _unlink(tmp, dir_fd)
    finally:
        os.close(dir_fd)


def _sync_dir(dir_fd: int) -> None:
    try:
        os.fsync(dir_fd)
    except OSError:  # some file systems cannot sync a folder: the rename is still atomic
        pass


def sweep_leftovers(path: Path | str) -> None:
    """Remove the temporary files of ``path`` that a writer killed mid-write left behind:
    those of a process no longer running (a running writer's file is left alone). Never raises."""
    path = Path(path)
    _sweep(path.parent, path.name)


def _sweep(folder: Path, name: str) -> None:
    try:
        leftovers = list(folder.glob(f".{_glob_escape(name)}.*{_TMP_SUFFIX}"))
    except (OSError, ValueError):
        return
    for leftover in leftovers:
        # only the exact shape _temp_name makes: a file of the user's that merely looks alike stays
        shape = _LEFTOVER.fullmatch(leftover.name[len(name) + 2:])
        if shape is None or int(shape.group(1)) == os.getpid():
            continue
        pid = shape.group(1)
        try:
            os.kill(int(pid), 0)
            continue  # still running: maybe writing right now
        except ProcessLookupError:
            pass
        except OSError:  # another user's process (EPERM): running, not ours to judge
            continue
        try:
            os.unlink(leftover)
        except OSError:
            pass


def _glob_escape(name: str) -> str:
    return "".join(f"[{ch}]" if ch in "*?[" else ch for ch in name)


def _unlink(name: str, dir_fd: int) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass
