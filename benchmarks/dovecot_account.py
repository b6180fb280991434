"""A benchmark's IMAP set-up, shared (bench_row_marks.py, bench_sync.py --imap): a temporary
folder holding mailtriage's data, config and cache folders, an in-memory keyring, a real
Dovecot (tests/servers) with one user, and the IMAP account ``work`` for that user in
config.toml (its password in the keyring).

    with dovecot_account("mt-bench-marks-") as bench:
        bench.base / "project" ...; bench.server.client(bench.user) ...

Import it from a benchmark run as a script (the benchmark folder is on sys.path then).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
ACCOUNT = "work"


@dataclass(frozen=True)
class DovecotAccount:
    base: Path  # the temporary folder: data/, config/ (config.toml), cache/ and whatever the benchmark adds
    server: Any  # tests.servers.dovecot.DovecotServer, started
    user: Any  # its user (name, password)


@contextmanager
def dovecot_account(prefix: str, *, access: str = "draft") -> Iterator[DovecotAccount]:
    """Start it all; at the end stop the server and remove the folder. The environment
    (MAILTRIAGE_DATA_DIR, _CONFIG_DIR, _CACHE_DIR) and the keyring stay set for the process."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # tests.servers: the test Dovecot
    import keyring

    from tests.servers.dovecot import DovecotServer
    from tests.servers.keyring_backend import MemoryKeyring

    base = Path(tempfile.mkdtemp(prefix=prefix))
    for name in ("DATA", "CONFIG", "CACHE"):
        os.environ[f"MAILTRIAGE_{name}_DIR"] = str(base / name.lower())
    keyring.set_keyring(MemoryKeyring())
    server = DovecotServer().start()
    try:
        from mailtriage.backends.imap.account import password_key
        from mailtriage.core.secrets import set_secret

        user = server.add_user()
        (base / "config").mkdir()
        (base / "config" / "config.toml").write_text(
            f'[accounts.{ACCOUNT}]\nkind = "imap"\nhost = "127.0.0.1"\nport = {server.port}\nsecurity = "plain"\n'
            f'username = "{user.name}"\naccess = "{access}"\n', encoding="utf-8")
        set_secret(password_key(ACCOUNT), user.password)
        yield DovecotAccount(base, server, user)
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
