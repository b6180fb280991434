"""Contract-suite harnesses for the list-archive backends (see tests/contract/README.md).

Each loader imports the corpus into a fresh loopback emulator the way the real archive
stores mail (HyperKitty's add_to_list, Foal's archiver) and returns the backend. The
snapshot is the emulator's stored data plus every request that was not a GET, so a
read that wrote anything would show.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.archives.fakehttp import FakeHttpServer


def _snapshot(server: FakeHttpServer, data):
    def snap():
        return repr(data()), [(r.method, r.path) for r in list(server.requests) if r.method != "GET"]
    return snap


def load_hyperkitty(request: pytest.FixtureRequest, tmp: Path, corpus):
    from mailtriage.backends.contract import SourceOrigin
    from mailtriage.backends.hyperkitty import HyperKittySource
    from tests.archives.hyperkitty_server import HyperKittyArchive
    from tests.contract.corpus import LIST

    archive = HyperKittyArchive()
    archive.add_list(LIST)
    for message in corpus:
        archive.import_message(LIST, message.raw)  # refuses mail without a Message-ID, as HyperKitty does
    server = FakeHttpServer(archive).start()
    request.addfinalizer(server.stop)
    source = HyperKittySource("mailman3", {"base_url": server.base_url, "list": LIST, "page_size": 3},
                              origin=SourceOrigin(project_dir=Path(tmp)))
    from tests.contract.conftest import Loaded

    stored = lambda: {a: (m.archive_policy, [t.emails for t in m.threads])  # noqa: E731 - not the caches
                      for a, m in archive.lists.items()}
    return Loaded(source, _snapshot(server, stored))


def load_ponymail(request: pytest.FixtureRequest, tmp: Path, corpus):
    from mailtriage.backends.contract import SourceOrigin
    from mailtriage.backends.ponymail import PonyMailSource
    from tests.archives.keyrings import use_memory_keyring
    from tests.archives.ponymail_server import PonyMailArchive, import_message
    from tests.contract.conftest import Loaded
    from tests.contract.corpus import LIST

    use_memory_keyring(request)
    archive = PonyMailArchive()
    for message in corpus:
        import_message(archive, "<" + LIST.replace("@", ".") + ">", message.raw)
    server = FakeHttpServer(archive).start()
    request.addfinalizer(server.stop)
    source = PonyMailSource("ponymail", {"base_url": server.base_url, "list": LIST}, origin=SourceOrigin(project_dir=Path(tmp)))
    return Loaded(source, _snapshot(server, lambda: archive.emails))
