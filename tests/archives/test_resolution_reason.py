"""Resolution with an optional archive as the only backend that can serve the op (issue 12 §7)."""

from __future__ import annotations

import pytest

from mailtriage.backends.contract import MailSource, Op
from mailtriage.backends.errors import NoBackendAvailable
from mailtriage.backends.resolution import AvailabilityCache, resolve
from mailtriage.core.projectconfig import load_project
from tests.core.helpers import write_project


class DraftsOnly(MailSource):
    """A primary that declares create_draft alone (declines every listing)."""

    kind = "drafts-only"
    thread_id_kind = "drafts-only"
    capabilities = frozenset({Op.CREATE_DRAFT})


def test_an_unavailable_optional_archive_gives_its_own_reason(tmp_path, pm_source):
    config = load_project(write_project(tmp_path, [("drafts", "primary", "no"), ("pony", "optional", "no")]))
    archive = pm_source(list="private")  # a private list read anonymously: unavailable, with the reason
    backends = {"drafts": DraftsOnly("drafts"), "pony": archive}
    res = resolve(Op.LIST_RECENT_THREADS, config.mail_sources, backends, AvailabilityCache(backends))
    assert res.chosen is None
    assert res.note.startswith("no backend available for list_recent_threads")
    assert "pony" in res.note and "optional" in res.note and "not visible anonymously" in res.note
    with pytest.raises(NoBackendAvailable) as info:
        res.raise_if_unresolved()
    assert "not visible anonymously" in str(info.value)  # what `mail list-recent-threads` prints


def test_an_available_optional_backend_keeps_the_plain_note(tmp_path, pm_source):
    config = load_project(write_project(tmp_path, [("drafts", "primary", "no"), ("pony", "optional", "no")]))
    backends = {"drafts": DraftsOnly("drafts"), "pony": pm_source()}
    res = resolve(Op.LIST_RECENT_THREADS, config.mail_sources, backends, AvailabilityCache(backends))
    assert res.note == "no backend available for list_recent_threads"  # nothing is wrong with it
