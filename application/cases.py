"""The MAS case a thread belongs to, read from the modes record (issue 36 §7: the app used to
open the record itself).

The case is found by the thread's Message-IDs (mails the record holds) or by a case address
in To/Cc. Read only, and only when a record exists: the configured ``database`` (user settings
``[modes] database``, else ``database`` in ``modes.toml`` of the config dir) or the default
``<data dir>/modes.sqlite3``. Nothing here creates a record.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from mailtriage.core import private_files
from mailtriage.core.errors import ConfigError
from mailtriage.core.paths import UnsafePath, check_private_dir
from mailtriage.core.settings import config_dir, data_dir


def modes_database(settings) -> Path:
    """Where the modes record would be (it may not exist)."""
    table = settings.data.get("modes") if settings is not None else None
    if isinstance(table, dict) and isinstance(table.get("database"), str) and table["database"].strip():
        return Path(table["database"]).expanduser()
    modes_toml = config_dir() / "modes.toml"
    try:  # the one file rule: a modes.toml another user could plant names no record for us
        data = tomllib.loads(private_files.read_text(modes_toml))
    except (OSError, ValueError, ConfigError):
        data = {}
    if isinstance(data.get("database"), str) and data["database"].strip():
        return Path(data["database"]).expanduser()
    return data_dir() / "modes.sqlite3"


def case_record(database: Path, thread) -> dict[str, Any] | None:
    """``Store.thread`` of the case ``thread`` belongs to, or None (no record, no case).

    Blocking (SQLite): call from a worker. Raises StoreError for an unusable record file.
    """
    if not database.is_file():
        return None
    # lazy: the modes record (SQLite) loads only when a thread with a case is read
    from mailtriage.modes.store import Store, StoreError

    try:  # a record in a folder others can write could be forged: not shown
        check_private_dir(database.parent)
    except UnsafePath as exc:
        raise StoreError(str(exc)) from exc
    # Store() would turn an empty or foreign file into a new record: look before opening.
    with database.open("rb") as head:
        if head.read(16) != b"SQLite format 3\x00":
            raise StoreError(f"{database} is not a modes database (not an SQLite file)")

    store = Store(database)
    try:
        ids = [m.message_id for m in thread.messages if m.message_id and not m.synthetic_id]
        key = store.case_key_for_message_ids(ids)
        if key is None:
            for message in thread.messages:
                for address in (*message.to, *message.cc):
                    case = store.find_case(address.email) if address.email else None
                    if case is not None:
                        key = case.key
                        break
                if key is not None:
                    break
        return store.thread(key) if key is not None else None
    finally:
        store.close()
