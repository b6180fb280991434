"""The send cap's memory: timestamps of sends per account, for Principle 10's cap.

:func:`mailtriage.backends.send_policy.check_send` takes ``sent_recently`` (sends inside
the cap window); this ledger counts them. It keeps only timestamps, per account, in a
small JSON file in the data dir (``send-ledger.json``) — nothing about the mail itself.
An unreadable ledger refuses sending rather than resetting the cap to zero.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from mailtriage.backends.send_policy import CAP_REACHED, SendRefusal, SendRefused
from mailtriage.core import private_files
from mailtriage.core.settings import data_dir

WINDOW_SECONDS = 24 * 3600


class SendLedger:
    def __init__(self, path: Path | None = None, window: float = WINDOW_SECONDS) -> None:
        if path is None:
            path = data_dir() / "send-ledger.json"
        self.path = path
        self.window = window
        self._lock = threading.Lock()

    def _load(self) -> dict[str, list[float]]:
        try:
            # The rule of every file of ours: one another user could have planted raises UnsafePath.
            data = json.loads(private_files.read_text(self.path))
            return {str(k): [float(t) for t in v] for k, v in data.items() if isinstance(v, list)}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise SendRefused(SendRefusal(CAP_REACHED, "send-cap",
                                          f"the send ledger {self.path} is unreadable ({exc}); refusing rather "
                                          "than forgetting earlier sends")) from exc

    def count(self, account_id: str, now: float | None = None) -> int:
        """Sends of ``account_id`` inside the window (the cap's ``sent_recently``)."""
        now = time.time() if now is None else now
        with self._lock:
            return sum(1 for t in self._load().get(account_id, []) if now - t < self.window)

    def record(self, account_id: str, now: float | None = None) -> None:
        now = time.time() if now is None else now
        with self._lock:
            data = self._load()
            data[account_id] = [*(t for t in data.get(account_id, []) if now - t < self.window), now]
            # A ledger others can rewrite would lift the send cap: a private folder, written whole.
            private_files.write_atomic(self.path, json.dumps(data).encode("utf-8"))
