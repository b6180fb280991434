"""Issue 30: a model-based test of the one rule for outgoing mail, over the application layer
(the calls the app's session makes, no Pilot), on a real Dovecot and aiosmtpd.

Random sequences choose the list, an account, a folder, go back, search, and reply, reply to
all, forward or write new mail on a row (confirmed or not). After every step: no mail sent
over SMTP answers a security-list thread, every draft that answers one carries the security
CC, every proposal on a security-list row is the project's draft with the CC or refused, and
nothing is written but what was confirmed. The account ``work`` is also the project's source
(its INBOX is the security list folder); its Archive holds a private follow-up of a report, a
list copy the project does not hold, and a personal reply."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from email.utils import getaddresses

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from mailtriage.application.flows.reply import ReplyFlow
from mailtriage.application.project import Project
from mailtriage.application.search import search_project, search_request
from mailtriage.application.accounts import Mailboxes
from mailtriage.application.flows.compose import ComposeFlow, route_compose
from mailtriage.application.flows.security_thread import OutgoingRule
from mailtriage.application.search import search_mailbox
from mailtriage.backends.send_ledger import SendLedger
from mailtriage.core.settings import load_settings
from mailtriage.application.flows.proposals import WriteKind
from tests.tui.test_compose import LIST, PERSONAL, report, sending_project, smtp  # noqa: F401 (fixtures)
from tests.tui.test_imap_drafts import drafts
from tests.tui.test_security_cc_paths import FOLLOW_UP

#: Every message of a security-list thread in the mailbox (the ground truth of the model).
SECURITY_IDS = {"<r1@example.com>", "<r2@example.com>", "<r1-private@example.com>", "<r7@example.com>"}
TIMELINE_REPLY = PERSONAL.replace(b"<timeline-1@example.net>", b"<timeline-2@example.net>\r\n"
                                  b"In-Reply-To: <timeline-1@example.net>\r\nReferences: <timeline-1@example.net>")
QUERIES = ("overflow", "Heap", "timeline", "report", "frob")
KINDS = ("reply", "reply_all", "forward", "new")
SECONDS = 20  # the machine's share of the suite


def answers_security(message) -> bool:
    ids = {message.get("In-Reply-To", "")} | set((message.get("References") or "").split())
    return bool(ids & SECURITY_IDS)


def ccs(message) -> set[str]:
    return {a.lower() for _n, a in getaddresses(message.get_all("Cc", []))}


@pytest.mark.slow  # a state machine over the compose paths
def test_every_path_keeps_the_security_cc(sending_project, dovecot, dovecot_user, smtp):  # noqa: F811
    when = datetime(2026, 10, 4, 9, 0, tzinfo=timezone.utc)
    for raw in (FOLLOW_UP, report(7, "Stray copy of a report"), TIMELINE_REPLY.replace(b"TO", b"me@example.org")):
        dovecot.append(dovecot_user, "Archive", raw, when=when)
    user = load_settings()
    project = Project.open(sending_project, user_settings=user)
    boxes = Mailboxes(user)
    rule_ = OutgoingRule(project)
    written = {"count": 0}

    class OutgoingMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            SendLedger().path.unlink(missing_ok=True)  # each run starts under the send cap
            self.folder: str | None = None  # the folder in the thread list (None: the security list)
            self.rows: list[tuple] = []
            self.choose_list()

        # -- contexts (what the thread list shows) ------------------------------------------
        @rule()
        def choose_list(self) -> None:
            self.folder = None
            listed = project.list_threads(LIST).value
            self.rows = [("thread", s.thread_id, s.thread_id.root) for s in listed]

        @rule(folder=st.sampled_from(["INBOX", "Archive"]))
        def choose_folder(self, folder: str) -> None:
            self.folder = folder
            page = boxes.page("work", folder, 0, 50)
            self.rows = [("mail", h.id, h.message_id) for h in page.messages]

        @rule()
        def choose_account_or_go_back(self) -> None:
            """The sources pane (an account) or "← project lists": the thread list stays as it is."""

        @rule(query=st.sampled_from(QUERIES))
        def search(self, query: str) -> None:
            if self.folder is None:
                request = search_request(query, list_name=LIST)
                page = search_project(project, request).page
                self.rows = [("thread", s.thread_id, s.thread_id.root) for s in page.items]
            else:
                request = search_request(query, folder=self.folder)
                page = search_mailbox(boxes.get("work"), request).page
                self.rows = [("mail", h.id, h.message_id) for h in page.items]

        # -- composing on a row ---------------------------------------------------------------
        @rule(data=st.data(), kind=st.sampled_from(KINDS), confirm=st.booleans())
        def compose(self, data, kind: str, confirm: bool) -> None:
            self._compose(data, kind, confirm)

        @rule(data=st.data(), kind=st.sampled_from(KINDS))
        def compose_and_confirm(self, data, kind: str) -> None:
            """Composing is what the rule is about: drawn as often as any two contexts."""
            self._compose(data, kind, True)

        def _compose(self, data, kind: str, confirm: bool) -> None:
            if kind == "new":
                if self.folder is None:
                    return  # the app says new mail is written from an account's folder
                route = route_compose(rule_, "new", account_id="work")
                security = False
            else:
                if not self.rows:
                    return
                what, ref, mid = data.draw(st.sampled_from(self.rows))
                security = mid in SECURITY_IDS
                if what == "thread":
                    route = route_compose(rule_, kind, thread_id=ref)
                else:
                    source = boxes.message("work", ref).content
                    route = route_compose(rule_, kind, account_id="work", message_id=ref,
                                                      source=source)
            proposal = self._propose(route, kind, data)
            if security:
                assert route.refused is not None or route.project, (kind, mid, route)
                assert proposal.blocked or all(
                    w.kind is WriteKind.DRAFT and not w.backend.startswith("account")
                    and LIST in {f.value for f in w.fields if f.label == "Cc"} for w in proposal.writes), \
                    proposal.render_text()
            if confirm and not proposal.blocked and proposal.writes:
                report_ = proposal.apply(confirmed=True)
                written["count"] += len(report_.written)

        def _propose(self, route, kind: str, data):
            """The proposal exactly as the app builds it for the route (the session's calls)."""
            if route.refused is not None:
                return route.refused
            if route.project:
                thread = route.thread or project.read_thread(route.thread_id).value
                flow = ReplyFlow(project, user)
                form = flow.form(thread, kind, answering=route.answering)
                if kind == "forward":
                    form = replace(form, to=("dev@example.net",))
                return flow.propose(thread, form=form, answering=route.answering)
            flow = ComposeFlow(boxes.get("work"), user, rule=rule_)
            source = boxes.message("work", route.message_id).content if route.message_id else None
            form = flow.form(route.kind, source)
            if route.kind in ("forward", "new"):
                to = data.draw(st.sampled_from(["dev@example.net", LIST]), label="To")
                form = replace(form, to=(to,), subject=form.subject or "Fix timeline")
            return flow.propose(form, source_id=route.message_id)

        # -- what must hold after every step -----------------------------------------------------
        @invariant()
        def the_security_cc_holds_and_nothing_unconfirmed_is_written(self) -> None:
            sent = [m.message for m in smtp.log.messages]
            assert not [m for m in sent if answers_security(m)], "mail to a security thread left over SMTP"
            saved = [d for d, _flags in drafts(dovecot, dovecot_user)]
            for draft in saved:
                if answers_security(draft):
                    assert LIST in ccs(draft), draft.as_string()
            assert len(sent) + len(saved) == written["count"]  # every write was confirmed

    try:
        run_state_machine_as_test(OutgoingMachine, settings=settings(
            max_examples=20, stateful_step_count=12, deadline=None, database=None, derandomize=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]))
    finally:
        boxes.close()
        project.close()
    assert written["count"] > 0  # the machine did write (drafts and sends), not only propose
