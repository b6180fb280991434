"""Thread identity across backends: read through one backend, draft through another.

DESIGN.md: a stored ID is tagged with its *shape* (the contract's ``thread_id_kind``),
not with the backend that emitted it, and every backend resolves a root Message-ID to
its own thread. The ``pair`` fixture runs every read backend of the suite against every
drafting backend (IMAP, Gmail, Microsoft Graph), each loaded with the same corpus, in a
project where the read backend is the primary and the drafting backend is ``preferred
for create_draft, list_drafts, list_sent_since``: every pair the resolution rule can
produce. The reply proposal is built by the same workflow the CLI and the TUI use.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from mailtriage.backends.contract import DraftRequest, MailSource, Op, OutgoingAttachment, ThreadId
from mailtriage.backends.errors import NotSupported
from mailtriage.backends.maildir import MaildirDraftsSource
from mailtriage.backends.registry import SourceSet
from mailtriage.application.flows.proposals import BlockedBy
from mailtriage.core.projectconfig import load_project
from mailtriage.application.flows.compose import REPLY
from mailtriage.application.flows.reply import propose_reply, reply_form
from tests.contract.conftest import HARNESSES, Harness
from tests.contract.corpus import CORPUS, LIST, T1, T2
from tests.core.helpers import write_project

DRAFTERS = [h for h in HARNESSES if h.name in ("imap", "gmail", "graph")]
PAIRS = [(reader, drafter) for reader in HARNESSES for drafter in DRAFTERS]
DRAFT_ROLE = "preferred for create_draft, list_drafts, list_sent_since"


@dataclass
class Pair:
    reader: MailSource
    drafter: MailSource
    reader_harness: Harness
    sources: SourceSet


@pytest.fixture(params=PAIRS, ids=lambda p: f"{p[0].name}->{p[1].name}")
def pair(request, tmp_path: Path):
    reader_h, drafter_h = request.param
    for sub in ("read", "draft", "project"):
        (tmp_path / sub).mkdir()
    reader = reader_h.load(request, tmp_path / "read", CORPUS).source
    same = reader_h.name == drafter_h.name
    drafter = reader if same else drafter_h.load(request, tmp_path / "draft", CORPUS).source
    rows = [("reader", "primary", "no")] + ([] if same else [("drafter", DRAFT_ROLE, "no")])
    write_project(tmp_path / "project", rows, config={"security_list": LIST})
    backends = {"reader": reader} if same else {"reader": reader, "drafter": drafter}
    sources = SourceSet(load_project(tmp_path / "project"), backends=backends)
    try:
        yield Pair(reader, drafter, reader_h, sources)
    finally:
        sources.close()


def _listed(pair: Pair, root: str) -> ThreadId:
    rows = {r.root_message_id: r for r in pair.reader.list_recent_threads(pair.reader_harness.list_name,
                                                                           CORPUS[0].date.replace(year=2000))}
    return rows[root].thread_id


def test_a_thread_read_through_one_backend_is_drafted_through_another(pair):
    thread_id = _listed(pair, T1)
    assert thread_id.root == T1, "a thread reference carries its root Message-ID"
    read = pair.sources.dispatch(Op.READ_THREAD, lambda b: b.read_thread(thread_id))
    assert read.resolution.chosen == "reader"

    proposal = propose_reply(pair.sources, read.value, "Thanks, we are looking into it.\n")
    assert not [n for n in proposal.notes if n.startswith("could not check")], proposal.notes
    assert proposal.facts["pending_drafts"] == 0  # the duplicate check ran on the drafting backend
    if pair.reader_harness.name == "mailman3":
        # HyperKitty shows senders obfuscated ("alice (a) reporter.example"): no address to
        # draft to, whichever backend drafts. Thread identity is not what blocks it.
        assert proposal.blocked.reason is BlockedBy.RECIPIENT and not proposal.writes
        return
    assert proposal.blocked is None, proposal.render_text()
    (write,) = proposal.writes
    assert write.backend == ("reader" if pair.drafter is pair.reader else "drafter")
    report = proposal.apply(confirmed=True)
    assert report.ok, report.describe()

    # The draft exists on the drafting backend, on that backend's own thread, threaded to T1.
    drafts = pair.drafter.list_drafts(read.value.thread_id)
    assert len(drafts) == 1
    assert drafts[0].in_reply_to in {"<t1-nested@reporter.example>", T1}
    assert LIST in " ".join(drafts[0].cc)

    # Duplicate protection still holds across backends: the next proposal shows the pending draft.
    again = propose_reply(pair.sources, pair.sources.dispatch(
        Op.READ_THREAD, lambda b: b.read_thread(thread_id)).value, "Second try.\n")
    assert again.blocked.reason is BlockedBy.PENDING_DRAFT and not again.writes


def test_the_drafting_backend_resolves_the_readers_reference(pair):
    """Each backend resolves another backend's reference by its root Message-ID."""
    thread_id = _listed(pair, T2)
    own = pair.drafter.own_thread_id(thread_id)
    assert own.kind in pair.drafter.own_kinds()
    thread = pair.drafter.read_thread(thread_id)
    assert T2 in [m.message_id for m in thread.messages]
    # Printed and parsed back (a tracker link, a rollup Thread: line), it still resolves.
    again = ThreadId.parse(str(thread_id))
    assert again == thread_id and again.root == T2
    assert pair.drafter.own_thread_id(again) == own


@pytest.fixture(params=HARNESSES, ids=lambda h: f"{h.name}->maildir")
def maildir_pair(request, tmp_path: Path):
    reader_h = request.param
    for sub in ("read", "project", "Mail"):
        (tmp_path / sub).mkdir()
    reader = reader_h.load(request, tmp_path / "read", CORPUS).source
    drafter = MaildirDraftsSource("drafter", {"path": str(tmp_path / "Mail"), "address": "triager@example.org"})
    write_project(tmp_path / "project", [("reader", "primary", "no"),
                                         ("drafter", "preferred for create_draft, list_drafts", "no")],
                  config={"security_list": LIST})
    sources = SourceSet(load_project(tmp_path / "project"), backends={"reader": reader, "drafter": drafter})
    try:
        yield Pair(reader, drafter, reader_h, sources)
    finally:
        sources.close()


def test_every_reader_drafts_into_a_local_maildir(maildir_pair):
    """The local Maildir drafts (issue 14 §8) on a thread any backend read, by its root Message-ID."""
    pair = maildir_pair
    thread_id = _listed(pair, T1)
    read = pair.sources.dispatch(Op.READ_THREAD, lambda b: b.read_thread(thread_id))
    proposal = propose_reply(pair.sources, read.value, "Thanks, we are looking into it.\n")
    assert proposal.facts["pending_drafts"] == 0
    if pair.reader_harness.name == "mailman3":
        assert proposal.blocked.reason is BlockedBy.RECIPIENT and not proposal.writes  # obfuscated senders
        return
    assert proposal.blocked is None, proposal.render_text()
    assert [w.backend for w in proposal.writes] == ["drafter"]
    assert proposal.apply(confirmed=True).ok
    drafts = pair.drafter.list_drafts(read.value.thread_id)
    assert len(drafts) == 1 and LIST in " ".join(drafts[0].cc)
    again = propose_reply(pair.sources, read.value, "Second try.\n")
    assert again.blocked.reason is BlockedBy.PENDING_DRAFT and not again.writes


MBOX = next(h for h in HARNESSES if h.name == "mbox")


@pytest.fixture(params=DRAFTERS, ids=lambda h: f"mbox->{h.name}")
def drafter_pair(request, tmp_path: Path):
    for sub in ("read", "draft", "project"):
        (tmp_path / sub).mkdir()
    reader = MBOX.load(request, tmp_path / "read", CORPUS).source
    drafter = request.param.load(request, tmp_path / "draft", CORPUS).source
    write_project(tmp_path / "project", [("reader", "primary", "no"), ("drafter", DRAFT_ROLE, "no")],
                  config={"security_list": LIST})
    sources = SourceSet(load_project(tmp_path / "project"), backends={"reader": reader, "drafter": drafter})
    try:
        yield Pair(reader, drafter, MBOX, sources)
    finally:
        sources.close()


def test_files_are_attached_only_by_a_drafting_backend_that_declares_it(drafter_pair, tmp_path):
    pair = drafter_pair
    thread = pair.sources.dispatch(Op.READ_THREAD, lambda b: b.read_thread(_listed(pair, T1))).value
    poc = tmp_path / "poc.txt"
    poc.write_text("proof\n")
    form = replace(reply_form(pair.sources.config, thread, REPLY), attach=(str(poc),))
    proposal = propose_reply(pair.sources, thread, form.body, form=form)
    if pair.drafter.features.draft_attachments:
        assert proposal.blocked is None and proposal.apply(confirmed=True).ok
        return
    # No file is ever dropped silently: the proposal is blocked, and the backend refuses too.
    assert proposal.blocked.reason is BlockedBy.ATTACHMENTS and not proposal.writes
    with pytest.raises(NotSupported):
        pair.drafter.create_draft(DraftRequest(thread.thread_id, "x\n", ("a@example.org",),
                                               attachments=(OutgoingAttachment("poc.txt", "text/plain", b"p"),)))
