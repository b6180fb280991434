"""The contract suite must fail on a backend that breaks the contract.

Each broken backend below is the mbox backend with one rule broken on purpose;
the matching contract test is run on it and must fail. If one of these passes,
the contract test it calls can no longer see the fault it exists for.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from mailtriage.backends.contract import Thread, ThreadId
from mailtriage.backends.mbox import MboxSource
from tests.contract import test_contract as suite
from tests.contract.conftest import HARNESSES, Loaded
from tests.contract.corpus import CORPUS, LIST

MBOX = next(h for h in HARNESSES if h.name == "mbox")


class FakesDrafts(MboxSource):
    def list_drafts(self, thread_id):  # an undeclared op that answers instead of declining
        return []


class WrongKind(MboxSource):  # emits another shape (a Gmail thread ID) than it declares
    def list_recent_threads(self, list_name, since):
        return [replace(r, thread_id=ThreadId("gmail", r.thread_id.value)) for r in super().list_recent_threads(list_name, since)]


class IgnoresSince(MboxSource):
    def list_recent_threads(self, list_name, since):
        return super().list_recent_threads(list_name, since.replace(year=1980))


class ReverseOrder(MboxSource):
    def read_thread(self, thread_id):
        thread = super().read_thread(thread_id)
        return Thread(thread.thread_id, thread.subject, tuple(reversed(thread.messages)), thread.notes)


class AcceptsAnyKind(MboxSource):
    def _accepts(self, thread_id):  # takes any shape as its own, root or not
        return thread_id

    def thread_url(self, thread_id):
        return "file:///x#" + thread_id.value


class AnswersWithJson(MboxSource):
    def read_thread(self, thread_id):  # a declared op that answers with a dict, not a Thread
        return super().read_thread(thread_id).to_json()


class WritesWhileReading(MboxSource):
    def read_thread(self, thread_id):
        with open(self.path, "ab") as handle:
            handle.write(b"\n")
        return super().read_thread(thread_id)


def load(cls, tmp_path: Path) -> Loaded:
    path = tmp_path / "security.mbox"
    path.write_bytes(b"".join(b"From a@example.org Mon Jan  1 00:00:00 2024\n" + m.raw + b"\n" for m in CORPUS))
    return Loaded(cls("mbox", {"path": str(path), "list": LIST}), lambda: (path.read_bytes(), path.stat().st_mtime_ns))


@pytest.mark.parametrize("cls, check", [
    (FakesDrafts, lambda s, l: suite.test_every_undeclared_op_declines_with_not_supported(s, MBOX)),
    (WrongKind, lambda s, l: suite.test_thread_ids_carry_the_backend_kind(s, MBOX)),
    (IgnoresSince, lambda s, l: suite.test_listing_honours_since(s, MBOX)),
    (ReverseOrder, lambda s, l: suite.test_read_thread_is_chronological_with_the_expected_messages(
        s, MBOX, "<t1-root@reporter.example>")),
    (AcceptsAnyKind, lambda s, l: suite.test_thread_id_of_another_kind_is_refused(s, MBOX)),
    (WritesWhileReading, lambda s, l: suite.test_reads_leave_the_source_unchanged(l, MBOX)),
    (AnswersWithJson, lambda s, l: suite.test_every_declared_read_op_answers(s, MBOX)),
], ids=lambda v: v.__name__ if isinstance(v, type) else "")
def test_contract_suite_fails_a_broken_backend(tmp_path, cls, check):
    loaded = load(cls, tmp_path)
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        check(loaded.source, loaded)


def test_the_unbroken_backend_passes_the_same_checks(tmp_path):
    loaded = load(MboxSource, tmp_path)
    suite.test_every_undeclared_op_declines_with_not_supported(loaded.source, MBOX)
    suite.test_thread_ids_carry_the_backend_kind(loaded.source, MBOX)
    suite.test_listing_honours_since(loaded.source, MBOX)
    suite.test_read_thread_is_chronological_with_the_expected_messages(loaded.source, MBOX, "<t1-root@reporter.example>")
    suite.test_thread_id_of_another_kind_is_refused(loaded.source, MBOX)
    suite.test_reads_leave_the_source_unchanged(loaded, MBOX)
    suite.test_every_declared_read_op_answers(loaded.source, MBOX)
