"""The durable thread record: one SQLite file (default ``<data dir>/modes.sqlite3``).

It holds cases, pending intakes, inbound and outbound mail *references* (Message-ID,
mailbox, UID, the headers Principle 10 reads; never bodies), every handoff status,
the notes of what happened, the processed message ids with the response we gave (so a
retry after a crash gets the same answer), and the outbox of contract messages not yet
accepted by their receiver (the only place a message text lives, and only until it
was delivered).

Every change that belongs together is written in one transaction
(:meth:`Store.transaction`), so a crash leaves either all of it or none.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.modes.clock import stamp
from mailtriage.modes.errors import ModesError

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cases (
    key TEXT PRIMARY KEY,
    address TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('master', 'slave')),
    participant TEXT,
    autonomous_send INTEGER,
    transfers TEXT,
    intake_ref TEXT,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS intakes (
    intake_ref TEXT PRIMARY KEY,
    resource_type TEXT NOT NULL,
    requested_mode TEXT,
    message_ref TEXT NOT NULL,
    state TEXT NOT NULL,
    case_key TEXT,
    detail TEXT,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS mails (
    ref TEXT PRIMARY KEY,
    direction TEXT NOT NULL CHECK (direction IN ('in', 'out')),
    case_key TEXT,
    intake_ref TEXT,
    message_id TEXT NOT NULL,
    mailbox TEXT,
    uidvalidity INTEGER,
    uid INTEGER,
    sender TEXT,
    recipient TEXT,
    subject TEXT,
    guard_headers TEXT,
    in_reply_to TEXT,
    purpose TEXT,
    handoff_id TEXT,
    request_id TEXT,
    details TEXT,
    body TEXT,
    state TEXT NOT NULL,
    detail TEXT,
    next_attempt TEXT,
    at TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS mails_inbound_message_id ON mails(message_id) WHERE direction = 'in';
CREATE INDEX IF NOT EXISTS mails_case ON mails(case_key);
CREATE TABLE IF NOT EXISTS handoffs (
    handoff_id TEXT PRIMARY KEY,
    case_key TEXT NOT NULL,
    mode TEXT NOT NULL,
    role TEXT NOT NULL,
    status TEXT NOT NULL,
    last_seq INTEGER,
    relay_seq INTEGER NOT NULL DEFAULT 0,
    endpoint TEXT,
    forwarded INTEGER NOT NULL DEFAULT 1,
    deadline TEXT,
    needs TEXT,
    request_ref TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS handoffs_case ON handoffs(case_key);
CREATE TABLE IF NOT EXISTS statuses (
    n INTEGER PRIMARY KEY AUTOINCREMENT,
    handoff_id TEXT NOT NULL,
    case_key TEXT NOT NULL,
    status TEXT NOT NULL,
    seq INTEGER,
    source TEXT NOT NULL,
    fields TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS notes (
    n INTEGER PRIMARY KEY AUTOINCREMENT,
    case_key TEXT,
    intake_ref TEXT,
    handoff_id TEXT,
    kind TEXT NOT NULL,
    detail TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS processed (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    http_status INTEGER NOT NULL,
    response TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS outbox (
    id TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    type TEXT NOT NULL,
    case_key TEXT,
    handoff_id TEXT,
    intake_ref TEXT,
    body TEXT,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt TEXT NOT NULL,
    http_status INTEGER,
    response TEXT,
    last_error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_due ON outbox(state, next_attempt);
CREATE TABLE IF NOT EXISTS cursors (
    mailbox TEXT PRIMARY KEY,
    uidvalidity INTEGER NOT NULL,
    last_uid INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


class StoreError(ModesError):
    """The database file cannot be opened or has an unknown schema."""


@frozen_dataclass
class Case:
    key: str
    address: str
    resource_type: str
    resource_id: str
    role: str
    participant: str | None
    autonomous_send: bool | None  # None: the type's default
    transfers: Any  # None: the type's default
    intake_ref: str | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> "Case":
        return cls(row["key"], row["address"], row["resource_type"], row["resource_id"], row["role"],
                   row["participant"], None if row["autonomous_send"] is None else bool(row["autonomous_send"]),
                   None if row["transfers"] is None else json.loads(row["transfers"]), row["intake_ref"])


@frozen_dataclass
class Handoff:
    handoff_id: str
    case_key: str
    mode: str
    role: str
    status: str
    last_seq: int | None
    relay_seq: int
    endpoint: str | None
    forwarded: bool
    deadline: str | None
    needs: tuple[str, ...]
    request_ref: str | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> "Handoff":
        return cls(row["handoff_id"], row["case_key"], row["mode"], row["role"], row["status"], row["last_seq"],
                   row["relay_seq"], row["endpoint"], bool(row["forwarded"]), row["deadline"],
                   tuple(json.loads(row["needs"] or "[]")), row["request_ref"])


def _dict(row: sqlite3.Row | None) -> dict[str, Any] | None:
    return None if row is None else {k: row[k] for k in row.keys()}


class Store:
    """One connection to the thread record. Not shared between threads; open one per thread."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the modes database {self.path}: {exc}") from exc
        self._db.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._depth = 0
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(SCHEMA)
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None:
                self._db.execute("INSERT INTO meta (key, value) VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            elif int(row["value"]) != SCHEMA_VERSION:
                raise StoreError(f"{self.path} has schema {row['value']}, this mailtriage knows {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise StoreError(f"{self.path} is not a usable modes database: {exc}") from exc

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator["Store"]:
        """All writes inside happen together or not at all. Nests (inner blocks join the outer)."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self
                finally:
                    self._depth -= 1
                return
            self._db.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            else:
                self._db.execute("COMMIT")
            finally:
                self._depth = 0

    def _one(self, sql: str, args: tuple = ()) -> sqlite3.Row | None:
        with self._lock:
            return self._db.execute(sql, args).fetchone()

    def _all(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _run(self, sql: str, args: tuple = ()) -> sqlite3.Cursor:
        with self._lock:
            return self._db.execute(sql, args)

    # -- idempotency -------------------------------------------------------------

    def processed(self, message_id: str) -> tuple[int, dict] | None:
        row = self._one("SELECT http_status, response FROM processed WHERE id = ?", (message_id,))
        return None if row is None else (row["http_status"], json.loads(row["response"]))

    def processed_type(self, message_id: str) -> str | None:
        """The type of the message first processed under ``message_id`` (as it was sent)."""
        row = self._one("SELECT type FROM processed WHERE id = ?", (message_id,))
        return None if row is None else row["type"]

    def remember(self, message_id: str, type_: str, http_status: int, response: dict, now: datetime) -> None:
        self._run("INSERT OR IGNORE INTO processed (id, type, http_status, response, at) VALUES (?, ?, ?, ?, ?)",
                  (message_id, type_, http_status, json.dumps(response), stamp(now)))

    # -- counters ------------------------------------------------------------------

    def next_number(self, name: str) -> int:
        with self.transaction():
            row = self._one("SELECT value FROM counters WHERE name = ?", (name,))
            value = (row["value"] if row else 0) + 1
            self._run("INSERT OR REPLACE INTO counters (name, value) VALUES (?, ?)", (name, value))
            return value

    # -- cases and intakes ---------------------------------------------------------

    def add_case(self, *, key: str, address: str, resource_type: str, resource_id: str, role: str,
                 participant: str | None, now: datetime, intake_ref: str | None = None,
                 autonomous_send: bool | None = None, transfers: Any = None) -> Case:
        self._run("INSERT INTO cases (key, address, resource_type, resource_id, role, participant, autonomous_send,"
                  " transfers, intake_ref, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  (key, address, resource_type, resource_id, role, participant,
                   None if autonomous_send is None else int(autonomous_send),
                   None if transfers is None else json.dumps(transfers), intake_ref, stamp(now)))
        return self.case(key)  # type: ignore[return-value]

    def case(self, key: str) -> Case | None:
        row = self._one("SELECT * FROM cases WHERE key = ?", (key,))
        return None if row is None else Case.from_row(row)

    def cases(self) -> list[Case]:
        return [Case.from_row(r) for r in self._all("SELECT * FROM cases ORDER BY created_at, key")]

    def set_policy(self, key: str, *, autonomous_send: bool | None, transfers: Any) -> None:
        self._run("UPDATE cases SET autonomous_send = ?, transfers = ? WHERE key = ?",
                  (None if autonomous_send is None else int(autonomous_send),
                   None if transfers is None else json.dumps(transfers), key))

    def set_participant(self, key: str, participant: str) -> None:
        self._run("UPDATE cases SET participant = ? WHERE key = ?", (participant, key))

    def add_intake(self, *, intake_ref: str, resource_type: str, requested_mode: str | None, message_ref: str,
                   now: datetime) -> None:
        self._run("INSERT INTO intakes (intake_ref, resource_type, requested_mode, message_ref, state, created_at)"
                  " VALUES (?, ?, ?, ?, 'pending', ?)", (intake_ref, resource_type, requested_mode, message_ref,
                                                          stamp(now)))

    def intake(self, intake_ref: str) -> dict[str, Any] | None:
        return _dict(self._one("SELECT * FROM intakes WHERE intake_ref = ?", (intake_ref,)))

    def intakes(self, state: str | None = None) -> list[dict[str, Any]]:
        if state:
            rows = self._all("SELECT * FROM intakes WHERE state = ? ORDER BY created_at", (state,))
        else:
            rows = self._all("SELECT * FROM intakes ORDER BY created_at")
        return [_dict(r) for r in rows]  # type: ignore[misc]

    def set_intake(self, intake_ref: str, state: str, *, case_key: str | None = None, detail: str | None = None) -> None:
        self._run("UPDATE intakes SET state = ?, case_key = COALESCE(?, case_key), detail = COALESCE(?, detail)"
                  " WHERE intake_ref = ?", (state, case_key, detail, intake_ref))

    # -- mail references -----------------------------------------------------------

    def add_mail(self, *, ref: str, direction: str, message_id: str, now: datetime, state: str,
                 case_key: str | None = None, intake_ref: str | None = None, mailbox: str | None = None,
                 uidvalidity: int | None = None, uid: int | None = None, sender: str | None = None,
                 recipient: str | None = None, subject: str | None = None,
                 guard_headers: list[tuple[str, str]] | None = None, in_reply_to: str | None = None,
                 purpose: str | None = None, handoff_id: str | None = None, request_id: str | None = None,
                 details: dict[str, str] | None = None, body: str | None = None, detail: str | None = None) -> None:
        """Record one mail.

        ``details``: the mode fields read from a handoff-request mail (what the mode will get
        anyway). ``body``: only for texts email writes itself, never received or master text.
        """
        self._run(
            "INSERT INTO mails (ref, direction, case_key, intake_ref, message_id, mailbox, uidvalidity, uid, sender,"
            " recipient, subject, guard_headers, in_reply_to, purpose, handoff_id, request_id, details, body, state,"
            " detail, next_attempt, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (ref, direction, case_key, intake_ref, message_id, mailbox, uidvalidity, uid, sender, recipient, subject,
             None if guard_headers is None else json.dumps(guard_headers), in_reply_to, purpose, handoff_id,
             request_id, None if details is None else json.dumps(details), body, state, detail, stamp(now),
             stamp(now)))

    def mail(self, ref: str) -> dict[str, Any] | None:
        row = _dict(self._one("SELECT * FROM mails WHERE ref = ?", (ref,)))
        if row and row["guard_headers"]:
            row["guard_headers"] = [tuple(pair) for pair in json.loads(row["guard_headers"])]
        if row:
            row["details"] = json.loads(row["details"]) if row["details"] else {}
        return row

    def inbound_by_message_id(self, message_id: str) -> dict[str, Any] | None:
        row = self._one("SELECT ref FROM mails WHERE direction = 'in' AND message_id = ?", (message_id,))
        return None if row is None else self.mail(row["ref"])

    def outbound_for_request(self, request_id: str) -> dict[str, Any] | None:
        row = self._one("SELECT ref FROM mails WHERE direction = 'out' AND request_id = ?", (request_id,))
        return None if row is None else self.mail(row["ref"])

    def mails(self, *, case_key: str | None = None, intake_ref: str | None = None) -> list[dict[str, Any]]:
        if case_key is not None:
            rows = self._all("SELECT ref FROM mails WHERE case_key = ? ORDER BY at, rowid", (case_key,))
        else:
            rows = self._all("SELECT ref FROM mails WHERE intake_ref = ? ORDER BY at, rowid", (intake_ref,))
        return [self.mail(r["ref"]) for r in rows]  # type: ignore[misc]

    def attach_mails_to_case(self, intake_ref: str, case_key: str) -> None:
        self._run("UPDATE mails SET case_key = ? WHERE intake_ref = ? AND case_key IS NULL", (case_key, intake_ref))

    def set_mail_state(self, ref: str, state: str, detail: str | None = None,
                       next_attempt: datetime | None = None) -> None:
        self._run("UPDATE mails SET state = ?, detail = COALESCE(?, detail), next_attempt = COALESCE(?, next_attempt)"
                  " WHERE ref = ?", (state, detail, None if next_attempt is None else stamp(next_attempt), ref))

    def queued_mails(self, now: datetime) -> list[dict[str, Any]]:
        """Mails email wrote itself that wait for SMTP (new, or failed and due again)."""
        rows = self._all("SELECT ref FROM mails WHERE direction = 'out' AND state = 'queued' AND next_attempt <= ?"
                         " ORDER BY at, rowid", (stamp(now),))
        return [self.mail(r["ref"]) for r in rows]  # type: ignore[misc]

    def latest_inbound(self, case_key: str) -> dict[str, Any] | None:
        row = self._one("SELECT ref FROM mails WHERE case_key = ? AND direction = 'in' ORDER BY at DESC, rowid DESC",
                        (case_key,))
        return None if row is None else self.mail(row["ref"])

    def sends_since(self, since: datetime) -> int:
        row = self._one("SELECT COUNT(*) AS n FROM mails WHERE direction = 'out' AND state IN ('sending', 'sent')"
                        " AND at >= ?", (stamp(since),))
        return int(row["n"]) if row else 0

    def outbound_mail_for(self, handoff_id: str, purpose: str) -> dict[str, Any] | None:
        row = self._one("SELECT ref FROM mails WHERE direction = 'out' AND handoff_id = ? AND purpose = ?",
                        (handoff_id, purpose))
        return None if row is None else self.mail(row["ref"])

    # -- handoffs and statuses -----------------------------------------------------

    def add_handoff(self, *, handoff_id: str, case_key: str, mode: str, role: str, status: str, now: datetime,
                    endpoint: str | None, forwarded: bool = True, deadline: datetime | None = None,
                    request_ref: str | None = None) -> None:
        self._run("INSERT INTO handoffs (handoff_id, case_key, mode, role, status, endpoint, forwarded, deadline,"
                  " request_ref, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  (handoff_id, case_key, mode, role, status, endpoint, int(forwarded),
                   None if deadline is None else stamp(deadline), request_ref, stamp(now), stamp(now)))

    def handoff(self, handoff_id: str) -> Handoff | None:
        row = self._one("SELECT * FROM handoffs WHERE handoff_id = ?", (handoff_id,))
        return None if row is None else Handoff.from_row(row)

    def handoffs(self, case_key: str) -> list[Handoff]:
        return [Handoff.from_row(r) for r in
                self._all("SELECT * FROM handoffs WHERE case_key = ? ORDER BY created_at, rowid", (case_key,))]

    def update_handoff(self, handoff_id: str, now: datetime, **fields: Any) -> None:
        if "deadline" in fields and isinstance(fields["deadline"], datetime):
            fields["deadline"] = stamp(fields["deadline"])
        if "needs" in fields:
            fields["needs"] = json.dumps(list(fields["needs"]))
        names = ", ".join(f"{name} = ?" for name in fields)
        self._run(f"UPDATE handoffs SET {names}, updated_at = ? WHERE handoff_id = ?",
                  (*fields.values(), stamp(now), handoff_id))

    def open_handoffs_past(self, now: datetime, terminal: frozenset[str]) -> list[Handoff]:
        marks = ", ".join("?" for _ in terminal)
        rows = self._all(f"SELECT * FROM handoffs WHERE deadline IS NOT NULL AND deadline <= ?"
                         f" AND status NOT IN ({marks}) ORDER BY deadline", (stamp(now), *sorted(terminal)))
        return [Handoff.from_row(r) for r in rows]

    def add_status(self, *, handoff_id: str, case_key: str, status: str, seq: int | None, source: str,
                   fields: dict[str, Any], now: datetime) -> None:
        self._run("INSERT INTO statuses (handoff_id, case_key, status, seq, source, fields, at)"
                  " VALUES (?, ?, ?, ?, ?, ?, ?)",
                  (handoff_id, case_key, status, seq, source, json.dumps(fields), stamp(now)))

    def statuses(self, handoff_id: str) -> list[dict[str, Any]]:
        rows = self._all("SELECT * FROM statuses WHERE handoff_id = ? ORDER BY n", (handoff_id,))
        out = []
        for row in rows:
            item = _dict(row)
            item["fields"] = json.loads(item["fields"])  # type: ignore[index]
            out.append(item)
        return out  # type: ignore[return-value]

    # -- notes -------------------------------------------------------------------

    def note(self, kind: str, detail: str, now: datetime, *, case_key: str | None = None,
             intake_ref: str | None = None, handoff_id: str | None = None) -> None:
        self._run("INSERT INTO notes (case_key, intake_ref, handoff_id, kind, detail, at) VALUES (?, ?, ?, ?, ?, ?)",
                  (case_key, intake_ref, handoff_id, kind, detail, stamp(now)))

    def notes(self, *, case_key: str | None = None, intake_ref: str | None = None) -> list[dict[str, Any]]:
        if case_key is not None:
            rows = self._all("SELECT * FROM notes WHERE case_key = ? ORDER BY n", (case_key,))
        elif intake_ref is not None:
            rows = self._all("SELECT * FROM notes WHERE intake_ref = ? ORDER BY n", (intake_ref,))
        else:
            rows = self._all("SELECT * FROM notes ORDER BY n")
        return [_dict(r) for r in rows]  # type: ignore[misc]

    # -- outbox ------------------------------------------------------------------

    def enqueue(self, message: dict[str, Any], url: str, now: datetime, *, handoff_id: str | None = None,
                intake_ref: str | None = None) -> None:
        case = message.get("case") or {}
        self._run("INSERT INTO outbox (id, url, type, case_key, handoff_id, intake_ref, body, state, next_attempt,"
                  " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)",
                  (message["id"], url, message["type"], case.get("key"), handoff_id, intake_ref,
                   json.dumps(message), stamp(now), stamp(now), stamp(now)))

    def due(self, now: datetime, limit: int = 50) -> list[dict[str, Any]]:
        rows = self._all("SELECT * FROM outbox WHERE state = 'pending' AND next_attempt <= ?"
                         " ORDER BY created_at, rowid LIMIT ?", (stamp(now), limit))
        return [_dict(r) for r in rows]  # type: ignore[misc]

    def outbox(self, *, state: str | None = None) -> list[dict[str, Any]]:
        if state:
            rows = self._all("SELECT * FROM outbox WHERE state = ? ORDER BY created_at, rowid", (state,))
        else:
            rows = self._all("SELECT * FROM outbox ORDER BY created_at, rowid")
        return [_dict(r) for r in rows]  # type: ignore[misc]

    def withdraw(self, handoff_id: str, types: tuple[str, ...], now: datetime) -> int:
        """Pending messages of these types for a handoff that ended: they will not be sent."""
        marks = ", ".join("?" for _ in types)
        cursor = self._run(f"UPDATE outbox SET state = 'withdrawn', body = NULL, updated_at = ?"
                           f" WHERE handoff_id = ? AND state = 'pending' AND type IN ({marks})",
                           (stamp(now), handoff_id, *types))
        return cursor.rowcount

    def has_queued(self, handoff_id: str, type_: str) -> bool:
        """Whether email queued (or sent) a message of this type for the handoff; withdrawn ones do not count."""
        return self._one("SELECT 1 FROM outbox WHERE handoff_id = ? AND type = ? AND state != 'withdrawn' LIMIT 1",
                         (handoff_id, type_)) is not None

    def outbox_item(self, message_id: str) -> dict[str, Any] | None:
        return _dict(self._one("SELECT * FROM outbox WHERE id = ?", (message_id,)))

    def outbox_attempted(self, message_id: str, *, attempts: int, next_attempt: datetime, error: str,
                         now: datetime) -> None:
        self._run("UPDATE outbox SET attempts = ?, next_attempt = ?, last_error = ?, updated_at = ? WHERE id = ?",
                  (attempts, stamp(next_attempt), error, stamp(now), message_id))

    def outbox_finished(self, message_id: str, *, state: str, attempts: int, http_status: int | None,
                        response: Any, error: str | None, now: datetime) -> None:
        # The message text may carry mail content: once the receiver has it, keep only the envelope.
        row = self._one("SELECT body FROM outbox WHERE id = ?", (message_id,))
        body = json.loads(row["body"]) if row and row["body"] else {}
        kept = {k: body[k] for k in ("mas_modes_version", "type", "id", "case", "handoff_id", "intake_ref", "seq",
                                     "status", "mode", "forwarded", "message_ref") if k in body}
        self._run("UPDATE outbox SET state = ?, attempts = ?, http_status = ?, response = ?, last_error = ?,"
                  " body = ?, updated_at = ? WHERE id = ?",
                  (state, attempts, http_status, None if response is None else json.dumps(response), error,
                   json.dumps(kept), stamp(now), message_id))

    # -- mailbox cursor ----------------------------------------------------------

    def cursor(self, mailbox: str) -> tuple[int, int] | None:
        row = self._one("SELECT uidvalidity, last_uid FROM cursors WHERE mailbox = ?", (mailbox,))
        return None if row is None else (row["uidvalidity"], row["last_uid"])

    def set_cursor(self, mailbox: str, uidvalidity: int, last_uid: int) -> None:
        self._run("INSERT OR REPLACE INTO cursors (mailbox, uidvalidity, last_uid) VALUES (?, ?, ?)",
                  (mailbox, uidvalidity, last_uid))

    # -- the thread --------------------------------------------------------------

    def find_case(self, text: str) -> Case | None:
        """A case by its key, its address or its resource id (first match)."""
        row = self._one("SELECT * FROM cases WHERE key = ? OR address = ? OR resource_id = ? ORDER BY created_at",
                        (text, text, text))
        return None if row is None else Case.from_row(row)

    def thread(self, case_key: str) -> dict[str, Any] | None:
        """The whole durable record of one case as a JSON-ready document."""
        case = self.case(case_key)
        if case is None:
            return None
        handoffs = []
        for handoff in self.handoffs(case_key):
            handoffs.append({
                "handoff_id": handoff.handoff_id, "mode": handoff.mode, "status": handoff.status,
                "endpoint": handoff.endpoint, "forwarded": handoff.forwarded, "deadline": handoff.deadline,
                "needs": list(handoff.needs),
                "statuses": [{"status": s["status"], "seq": s["seq"], "source": s["source"], "at": s["at"],
                              **s["fields"]} for s in self.statuses(handoff.handoff_id)],
            })
        mails = []
        for mail in self.mails(case_key=case_key):
            mails.append({k: mail[k] for k in ("ref", "direction", "message_id", "sender", "recipient", "subject",
                                               "purpose", "handoff_id", "in_reply_to", "state", "detail", "at",
                                               "mailbox", "uid")})
        return {
            "case": {"address": case.address, "key": case.key}, "role": case.role,
            "resource_type": case.resource_type, "resource_id": case.resource_id, "participant": case.participant,
            "policy": {"autonomous_send": case.autonomous_send, "transfers": case.transfers},
            "intake_ref": case.intake_ref, "mails": mails, "handoffs": handoffs,
            "notes": [{"kind": n["kind"], "detail": n["detail"], "handoff_id": n["handoff_id"], "at": n["at"]}
                      for n in self.notes(case_key=case_key)],
        }

    def case_key_for_message_ids(self, message_ids: list[str]) -> str | None:
        """The case one of these Message-IDs (inbound or outbound mail) belongs to, if any."""
        for message_id in message_ids:
            row = self._one("SELECT case_key FROM mails WHERE message_id = ? AND case_key IS NOT NULL"
                            " ORDER BY at, rowid", (message_id,))
            if row is not None:
                return str(row["case_key"])
        return None
