"""The resolution rule's four steps, roles and mandatory flag."""

import pytest

from mailtriage.backends.contract import MailSource, Op
from mailtriage.backends.errors import MandatoryBackendUnavailable, NoBackendAvailable, Unavailable
from mailtriage.backends.resolution import AvailabilityCache, mandatory_preflight, resolve
from mailtriage.core.projectconfig import load_project

from .helpers import write_project

READ_ONLY = frozenset({Op.LIST_RECENT_THREADS, Op.READ_THREAD, Op.THREAD_URL})
FULL = frozenset(Op)


def backend(name, caps, down=None):
    """A backend that declares a capability set; ``down`` makes it unavailable with that reason."""

    class Declared(MailSource):
        kind = name
        thread_id_kind = name
        capabilities = frozenset(caps)

        def check_available(self):
            if down:
                raise Unavailable(self.name, down)

    return Declared(name)


def setup(tmp_path, rows, backends):
    config = load_project(write_project(tmp_path, rows))
    by_name = {b.name: b for b in backends}
    return config.mail_sources, by_name, AvailabilityCache(by_name)


def test_step1_preferred_for_op_wins(tmp_path):
    entries, bs, av = setup(tmp_path, [("gmail", "preferred for create_draft", "no"), ("imap", "primary", "no")],
                            [backend("gmail", FULL), backend("imap", FULL)])
    res = resolve(Op.CREATE_DRAFT, entries, bs, av)
    assert (res.chosen, res.rule_step) == ("gmail", 1)
    assert [s.outcome for s in res.steps] == ["chosen", "not tried: an earlier backend was chosen"]
    # For another op the preferred backend is not in the chain at all.
    res = resolve(Op.READ_THREAD, entries, bs, av)
    assert (res.chosen, res.rule_step) == ("imap", 2)
    assert ("gmail", "preferred only for create_draft") in [(s.backend, s.outcome) for s in res.steps]


def test_step2_primary_when_preferred_declines_or_is_down(tmp_path):
    entries, bs, av = setup(tmp_path, [("pony", "preferred for create_draft", "no"), ("imap", "primary", "no")],
                            [backend("pony", READ_ONLY), backend("imap", FULL)])
    res = resolve(Op.CREATE_DRAFT, entries, bs, av)
    assert (res.chosen, res.rule_step) == ("imap", 2)
    assert res.steps[0].outcome == "declines create_draft"

    entries, bs, av = setup(tmp_path, [("gmail", "preferred for create_draft", "no"), ("imap", "primary", "no")],
                            [backend("gmail", FULL, down="token expired"), backend("imap", FULL)])
    res = resolve(Op.CREATE_DRAFT, entries, bs, av)
    assert res.chosen == "imap"
    assert res.steps[0].outcome == "unavailable: token expired"
    assert "skipped gmail (unavailable: token expired)" in res.summary()


def test_step3_fallbacks_in_declared_order(tmp_path):
    rows = [("gmail", "primary", "no"), ("mbox", "fallback", "no"), ("pony", "fallback", "no"),
            ("mm3", "fallback", "no")]
    entries, bs, av = setup(tmp_path, rows, [backend("gmail", FULL, down="offline"), backend("mbox", {Op.READ_THREAD}),
                                             backend("pony", READ_ONLY), backend("mm3", READ_ONLY)])
    res = resolve(Op.THREAD_URL, entries, bs, av)
    assert (res.chosen, res.rule_step) == ("pony", 3)
    assert [(s.backend, s.outcome) for s in res.steps] == [
        ("gmail", "unavailable: offline"),
        ("mbox", "declines thread_url"),
        ("pony", "chosen"),
        ("mm3", "not tried: an earlier backend was chosen"),
    ]


def test_optional_is_never_in_the_chain(tmp_path):
    entries, bs, av = setup(tmp_path, [("mbox", "primary", "no"), ("gmail", "optional", "no")],
                            [backend("mbox", READ_ONLY), backend("gmail", FULL)])
    res = resolve(Op.CREATE_DRAFT, entries, bs, av)
    assert res.chosen is None
    assert res.note == "no backend available for create_draft"
    assert ("gmail", "optional: never in the resolution chain") in [(s.backend, s.outcome) for s in res.steps]
    with pytest.raises(NoBackendAvailable) as info:
        res.raise_if_unresolved()
    assert str(info.value) == "no backend available for create_draft"
    assert info.value.some_unavailable is False


def test_step4_aborts_when_a_mandatory_backend_is_unavailable(tmp_path):
    entries, bs, av = setup(tmp_path, [("gmail", "primary", "yes"), ("pony", "fallback", "no")],
                            [backend("gmail", FULL, down="auth missing"), backend("pony", READ_ONLY)])
    res = resolve(Op.CREATE_DRAFT, entries, bs, av)
    assert res.chosen is None and res.rule_step == 4
    assert res.aborted == "mandatory backend gmail unavailable: auth missing; run aborted"
    with pytest.raises(MandatoryBackendUnavailable) as info:
        res.raise_if_unresolved()
    assert str(info.value) == "mandatory backend gmail unavailable: auth missing; run aborted"
    # An op another backend can serve still resolves: step 4 is not reached.
    assert resolve(Op.READ_THREAD, entries, bs, av).chosen == "pony"


def test_mandatory_optional_backend_counts_for_abort(tmp_path):
    entries, bs, av = setup(tmp_path, [("mbox", "primary", "no"), ("imap", "optional", "yes")],
                            [backend("mbox", READ_ONLY), backend("imap", FULL, down="archive not mounted")])
    res = resolve(Op.CREATE_DRAFT, entries, bs, av)
    assert res.aborted == "mandatory backend imap unavailable: archive not mounted; run aborted"


def test_mandatory_preflight_refuses_the_run(tmp_path):
    entries, bs, av = setup(tmp_path, [("mbox", "primary", "yes")], [backend("mbox", READ_ONLY, down="not mounted")])
    with pytest.raises(MandatoryBackendUnavailable, match="mandatory backend mbox unavailable: not mounted; run aborted"):
        mandatory_preflight(entries, av)


def test_skip_note_when_the_only_backend_is_down(tmp_path):
    entries, bs, av = setup(tmp_path, [("imap", "primary", "no")], [backend("imap", FULL, down="connection refused")])
    res = resolve(Op.LIST_DRAFTS, entries, bs, av)
    # The reason is part of the note (issue 30 §7: it was left out, so stderr never said why).
    assert res.note == "no backend available for list_drafts; imap (primary) is unavailable: connection refused"
    with pytest.raises(NoBackendAvailable) as info:
        res.raise_if_unresolved()
    assert info.value.some_unavailable is True
    assert str(info.value) == res.note


def test_availability_is_checked_once_per_run(tmp_path):
    calls = []

    class Counting(MailSource):
        kind = thread_id_kind = "counting"
        capabilities = FULL

        def check_available(self):
            calls.append(1)

    entries, bs, av = setup(tmp_path, [("c", "primary", "no")], [Counting("c")])
    for op in Op:
        resolve(op, entries, bs, av)
    assert len(calls) == 1


def test_resolution_json_is_the_recap(tmp_path):
    entries, bs, av = setup(tmp_path, [("gmail", "primary", "yes"), ("pony", "fallback", "no")],
                            [backend("gmail", FULL, down="offline"), backend("pony", READ_ONLY)])
    doc = resolve(Op.READ_THREAD, entries, bs, av).to_json()
    assert doc["chosen"] == "pony" and doc["rule_step"] == 3
    assert doc["chain"][0] == {"backend": "gmail", "role": "primary, mandatory", "outcome": "unavailable: offline"}
    assert doc["summary"].startswith("read_thread → pony (first available fallback)")


def test_step4_abort_keeps_the_chain_as_walked(tmp_path):
    """The recap shows exactly what the rule walked, in order: a backend that declined
    stays "declines", even when it is the mandatory one whose absence aborts the run."""
    entries, bs, av = setup(tmp_path, [("mbox", "primary", "yes"), ("pony", "fallback", "no")],
                            [backend("mbox", READ_ONLY, down="not mounted"), backend("pony", READ_ONLY)])
    res = resolve(Op.CREATE_DRAFT, entries, bs, av)
    assert res.aborted == "mandatory backend mbox unavailable: not mounted; run aborted"
    assert [(s.backend, s.outcome) for s in res.steps] == [("mbox", "declines create_draft"),
                                                           ("pony", "declines create_draft")]


def _source_set(tmp_path, rows, backends):
    from mailtriage.backends.registry import SourceSet

    config = load_project(write_project(tmp_path, rows))
    return SourceSet(config, backends={b.name: b for b in backends})


def test_a_mandatory_fallback_down_refuses_every_dispatch(tmp_path):
    """The mandatory rule at run start: nothing runs, even an op the primary could serve."""
    sources = _source_set(tmp_path, [("mbox", "primary", "no"), ("backup", "fallback", "yes")],
                          [backend("mbox", FULL), backend("backup", READ_ONLY, down="not mounted")])
    called = []
    for op in (Op.READ_THREAD, Op.LIST_RECENT_THREADS, Op.CREATE_DRAFT):
        with pytest.raises(MandatoryBackendUnavailable, match="mandatory backend backup unavailable"):
            sources.dispatch(op, called.append)
        with pytest.raises(MandatoryBackendUnavailable):
            sources.dispatch(op, called.append, backend="mbox")
    assert called == []


def test_a_named_backend_is_recapped_as_named(tmp_path):
    sources = _source_set(tmp_path, [("gmail", "primary", "no"), ("pony", "fallback", "no")],
                          [backend("gmail", FULL), backend("pony", READ_ONLY)])
    res = sources.dispatch(Op.READ_THREAD, lambda b: b.name, backend="gmail").resolution
    assert res.chosen == "gmail" and res.rule_step is None
    assert res.summary() == "read_thread → gmail (named with --backend)"
    assert "fallback" not in res.summary()
    assert res.to_json()["chain"] == [{"backend": "gmail", "role": "primary", "outcome": "chosen: named with --backend"}]
