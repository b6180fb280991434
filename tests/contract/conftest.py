"""The contract suite's one parametrized fixture: ``source`` runs every test on every backend.

A backend joins by appending a :class:`Harness` to :data:`HARNESSES` (see README.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from mailtriage.backends.contract import SourceOrigin
from mailtriage.backends.contract import MailSource
from tests.contract.corpus import CORPUS, LIST, CorpusMessage


@dataclass
class Loaded:
    """A backend loaded with the corpus, and how to observe its stored state."""

    source: MailSource
    # Returns something comparable that changes if the backend's store changed
    # (files and mtimes, IMAP flags and UIDs, server-side state...).
    snapshot: Callable[[], Any]


@dataclass(frozen=True)
class Harness:
    name: str
    # (pytest request, a fresh temp dir, the corpus) -> a loaded backend.
    # Use request.getfixturevalue(...) to reach session fixtures (a Dovecot, an emulator).
    load: Callable[[pytest.FixtureRequest, Path, tuple[CorpusMessage, ...]], Loaded]
    # The list name list_recent_threads is called with.
    list_name: str | None = LIST
    # False for a backend whose store drops or renames mail without a Message-ID.
    keeps_messages_without_id: bool = True
    # False for an archive that threads by In-Reply-To alone and files a reply whose
    # parent it never received as a thread of its own (HyperKitty does). The reply must
    # then still be listed and readable, under its own root.
    joins_replies_to_missing_parents: bool = True


# --- mbox ---------------------------------------------------------------------


def _mbox_snapshot(path: Path) -> Callable[[], Any]:
    def snap():
        return path.read_bytes(), path.stat().st_mtime_ns
    return snap


def load_mbox(request: pytest.FixtureRequest, tmp: Path, corpus: tuple[CorpusMessage, ...]) -> Loaded:
    from mailtriage.backends.mbox import MboxSource

    path = tmp / "security.mbox"
    path.write_bytes(b"".join(b"From archive@example.org Mon Jan  1 00:00:00 2024\n" + m.raw + b"\n"
                              for m in corpus))
    source = MboxSource("mbox", {"path": path.name, "list": LIST}, origin=SourceOrigin(project_dir=Path(tmp)))
    return Loaded(source, _mbox_snapshot(path))


def load_maildir(request: pytest.FixtureRequest, tmp: Path, corpus: tuple[CorpusMessage, ...]) -> Loaded:
    from mailtriage.backends.mbox import MboxSource

    root = tmp / "Maildir"
    for sub in ("cur", "new", "tmp"):
        (root / sub).mkdir(parents=True)
    for n, message in enumerate(corpus):
        (root / ("new" if n % 2 else "cur") / f"{1709280000 + n}.M{n}P1.host").write_bytes(message.raw)

    def snap():
        return sorted((str(p.relative_to(root)), p.read_bytes(), p.stat().st_mtime_ns)
                      for p in root.rglob("*") if p.is_file())
    return Loaded(MboxSource("maildir", {"path": str(root), "list": LIST}), snap)


HARNESSES: list[Harness] = [
    Harness("mbox", load_mbox),
    Harness("mbox-maildir", load_maildir),
]

# --- list archives (emulated HyperKitty and Pony Mail on loopback) ---------------

from tests.archives.contract_harness import load_hyperkitty, load_ponymail  # noqa: E402

HARNESSES += [
    # HyperKitty refuses mail without a Message-ID and starts a new thread for a reply
    # whose parent it never archived.
    Harness("mailman3", load_hyperkitty, keeps_messages_without_id=False, joins_replies_to_missing_parents=False),
    # Foal names every message by its own permalink, Message-ID or not.
    Harness("ponymail", load_ponymail, keeps_messages_without_id=False),
]

# --- IMAP (a real Dovecot on loopback, one per xdist worker; a fresh user per test) ---

from tests.imap.contract_harness import load_imap  # noqa: E402
from tests.servers.fixtures import memory_keyring  # noqa: E402,F401  (dovecot: tests/conftest.py, one per worker)

HARNESSES.append(Harness("imap", load_imap))

# --- Gmail (the Google emulator of tests/oauth) ------------------------------------
from tests.oauth.fixtures import google_emulator  # noqa: E402,F401
from tests.oauth.gmail_harness import load_gmail  # noqa: E402

HARNESSES.append(Harness("gmail", load_gmail))

# --- Microsoft Graph (the Graph emulator of tests/oauth) ---------------------------
from tests.oauth.fixtures import microsoft_emulator, oauth_certificate  # noqa: E402,F401
from tests.oauth.graph_harness import load_graph  # noqa: E402

HARNESSES.append(Harness("graph", load_graph))


@pytest.fixture(params=HARNESSES, ids=lambda h: h.name)
def harness(request) -> Harness:
    return request.param


@pytest.fixture
def loaded(request, harness: Harness, tmp_path: Path):
    result = harness.load(request, tmp_path, CORPUS)
    try:
        yield result
    finally:
        result.source.close()


@pytest.fixture
def source(loaded: Loaded) -> MailSource:
    return loaded.source
