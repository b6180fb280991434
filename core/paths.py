"""Folders we create or reuse for per-user state: private, or refused.

A folder that someone else owns, or that others can write, could be swapped or filled
by another local user (a planted demo project with a git hook, a forged alert cursor, a
send ledger reset to zero). Every folder mailtriage keeps state in goes through
:func:`private_dir`: created ``0700`` when missing; when it exists it must be owned by
the user and not writable by others (group write only for the user's own primary
group); a symlink must be the user's too. Its ancestors must belong to the user or to
root, and any of them that others can write must have the sticky bit (like ``/tmp``).

Caches (the IMAP summary cache, the mbox index) live under :func:`cache_dir`: derived data
only, so deleting that folder is always safe.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import platformdirs

from mailtriage.core.errors import ConfigError  # not core.projectconfig: that loads yaml, which a cache path does not need

VALID = "a folder you own that no one else can write (remove it, or chmod go-w it)"


def _own_folder_instead(path: Path | str, info: os.stat_result, uid: int) -> str:
    """What to use instead of a shared folder (/tmp) or another user's: neither is ours to
    chmod. Inside a sticky folder of root's or the user's a private folder passes the check
    (as /tmp/<name>); inside another user's folder nothing does, so one under the home."""
    shared_ok = info.st_mode & stat.S_ISVTX and info.st_uid in (uid, 0)
    where = f"{path}/<name>" if shared_ok else "~/<name>"
    return f"a folder you own that no one else can write, e.g. one made with mkdir -m 700 {where}"


class UnsafePath(ConfigError):
    """A folder we would use belongs to someone else or is writable by others."""

    def __init__(self, path: Path | str, problem: str, valid: str = VALID) -> None:
        super().__init__(path, "folder", problem, valid)


def _uid() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None


def check_private_dir(path: Path | str) -> Path:
    """Raise UnsafePath unless the existing folder ``path`` is safe to keep our state in."""
    path = Path(path)
    uid = _uid()
    if uid is None:  # no POSIX ownership (Windows): the profile folders are per-user already
        return path
    gid = os.getgid()
    try:
        link = os.lstat(path)
    except FileNotFoundError as exc:
        raise UnsafePath(path, "does not exist",
                         f"an existing folder you own that no one else can write: mkdir -m 700 {path}") from exc
    if stat.S_ISLNK(link.st_mode) and link.st_uid != uid:
        raise UnsafePath(path, f"is a symbolic link owned by uid {link.st_uid}, not by you (uid {uid})")
    info = os.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePath(path, "is not a folder")
    if info.st_uid != uid:
        raise UnsafePath(path, f"is owned by uid {info.st_uid}, not by you (uid {uid})",
                         _own_folder_instead(path, info, uid))
    if info.st_mode & stat.S_IWOTH and info.st_mode & stat.S_ISVTX:
        raise UnsafePath(path, "is writable by every user (a shared folder, as /tmp)",
                         _own_folder_instead(path, info, uid))
    if info.st_mode & stat.S_IWOTH:
        raise UnsafePath(path, "is writable by every user")
    if info.st_mode & stat.S_IWGRP and info.st_gid != gid:
        raise UnsafePath(path, f"is writable by group {info.st_gid}")
    for parent in Path(os.path.realpath(path)).parents:
        try:
            pinfo = os.stat(parent)
        except OSError:
            continue
        if pinfo.st_uid not in (uid, 0):
            raise UnsafePath(path, f"lies inside {parent}, owned by uid {pinfo.st_uid}")
        if pinfo.st_mode & stat.S_IWOTH and not pinfo.st_mode & stat.S_ISVTX:
            raise UnsafePath(path, f"lies inside {parent}, which every user can write")
    return path


def private_dir(path: Path | str) -> Path:
    """Create ``path`` (mode 0700, parents as needed) or check the existing one; return it."""
    path = Path(path)
    try:
        os.lstat(path)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass  # made meanwhile (by us or by someone else): the check below decides
    return check_private_dir(path)


def cache_dir() -> Path:
    """The folder for caches that are safe to delete at any time (``MAILTRIAGE_CACHE_DIR``
    overrides the platformdirs user cache folder). Not created here: see :func:`private_cache_dir`."""
    override = os.environ.get("MAILTRIAGE_CACHE_DIR")
    if override:
        return Path(override)
    return Path(platformdirs.user_cache_dir("mailtriage"))


def private_cache_dir(*parts: str) -> Path:
    """``cache_dir()/parts…``, each level created ``0700`` (or checked private); returns it."""
    path = private_dir(cache_dir())
    for part in parts:
        path = private_dir(path / part)
    return path


def user_allows_caches(data: dict, account: dict | None = None) -> bool:
    """Whether mail metadata may be cached on disk: ``cache_summaries`` of the account table
    (``[accounts.<id>]``) when it says, else of the ``[settings]`` table of the user settings;
    true by default."""
    for table in (account, data.get("settings")):
        if isinstance(table, dict) and "cache_summaries" in table:
            return table["cache_summaries"] is not False
    return True
