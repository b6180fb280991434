"""build_queue with a server tracker (the GitHub and Jira emulators): each thread's issue is
found by the tracker's own search, as the import finds it, and its assignee is the owner."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
import yaml

from mailtriage.application import Op
from mailtriage.application.project import Project
from mailtriage.application.flows.importer import ImportFlow
from mailtriage.application.queue import FULL_SWEEP_EVERY, QueueState, build_queue, propose_claim
from tests.queue.conftest import LIST, THREAD, mail
from tests.trackers.conftest import make_github_env, make_jira_env, memory_keyring  # noqa: F401 (fixture)
from tests.application.flows.conftest import report_thread, write_mbox

NOW = datetime(2026, 9, 4, 12, 0, tzinfo=timezone.utc)


@pytest.fixture(params=["github", "jira-v3"])
def server_project(request, tmp_path):
    env = make_github_env(tmp_path) if request.param == "github" else make_jira_env(tmp_path, 3)
    text = (env.project / "project.md").read_text(encoding="utf-8")
    config = yaml.safe_load(text.split("```yaml\n", 1)[1].split("```", 1)[0])
    config["tracker"]["fields"] = ["Security mailing list thread", "Reporter", "Received"]
    config.update(security_list=LIST, mail_sources={"mbox": {"path": "security.mbox", "list": LIST}},
                  **{"import": {"since": "2026-08-01"}})
    waiting = mail("<report-2@other.example>", "Otto <otto@other.example>", "Crash", "It crashes.\n",
                   "Wed, 02 Sep 2026 08:00:00 +0000")
    write_mbox(env.project / "security.mbox", [*report_thread(with_reply=True), waiting])
    (env.project / "project.md").write_text(
        "# P\n\n## Mail sources\n\n| Backend | Role | Mandatory | Notes |\n|---|---|---|---|\n"
        "| `mbox` | primary | yes | the list |\n\n## Configuration\n\n```yaml\n"
        + yaml.safe_dump(config, sort_keys=False) + "```\n", encoding="utf-8")
    yield env
    env.server.stop()


def test_the_queue_finds_each_threads_issue_on_the_server_and_its_owner(server_project):
    project = Project.open(server_project.project)
    try:
        thread_id = project.thread_id_for(THREAD, Op.READ_THREAD)
        proposal = ImportFlow(project).propose(thread_id)
        assert proposal.apply(confirmed=True).ok
        [made] = project.open_tracker().list(state="all").items
        issue = made["id"]
        assert propose_claim(project.open_tracker(), issue, "alice").apply(confirmed=True).ok
        queue = build_queue(project, now=NOW)
    finally:
        project.close()
    assert queue.warnings == ()
    waiting, mine = queue.rows
    assert (waiting.state, waiting.issue) == (QueueState.NEW, None)
    assert (mine.state, mine.issue, mine.owner) == (QueueState.IN_PROGRESS, issue, "alice")
    assert mine.unanswered_since is None


def test_with_the_tracker_down_no_report_is_new_for_lack_of_an_answer(server_project):
    project = Project.open(server_project.project)
    try:
        proposal = ImportFlow(project).propose(project.thread_id_for(THREAD, Op.READ_THREAD))
        assert proposal.apply(confirmed=True).ok
    finally:
        project.close()
    server_project.server.stop()
    project = Project.open(server_project.project)
    try:
        queue = build_queue(project, now=NOW)
    finally:
        project.close()
    assert [(r.state.value, r.owner, r.issue) for r in queue.rows] == [("unknown", None, None)] * 2
    assert len(queue.warnings) == 1 and "cannot be asked" in queue.warnings[0]


def test_a_warm_queue_costs_one_request_no_search_and_still_sees_a_colleagues_claim(server_project):
    """GitHub's search allows 30 requests a minute: the queue never uses it. Warm, it asks for
    what changed since its last run: one conditional request (a 304 that costs no rate limit)
    on GitHub, one ``updated >=`` search on Jira; a colleague's claim still shows."""
    server = server_project.server
    github = hasattr(server, "rate_used")  # the GitHub emulator counts the core rate limit
    project = Project.open(server_project.project)
    try:
        proposal = ImportFlow(project).propose(project.thread_id_for(THREAD, Op.READ_THREAD))
        assert proposal.apply(confirmed=True).ok
        issue = project.open_tracker().list(state="all").items[0]["id"]
        searches = server.search_calls if github else 0
        for _ in range(3):  # cold, then warm twice (the first warm run learns the ETag of its request)
            before = len(server.requests)
            rate = server.rate_used if github else 0
            queue = build_queue(project, now=NOW)
        made = [(method, path.split("?")[0]) for method, path, _ in server.requests[before:]]
        if github:
            assert made == [("GET", "/repos/acme/security/issues")]
            assert server.rate_used == rate  # answered 304: no rate limit spent
            assert server.search_calls == searches  # the search API was never asked by the queue
        else:
            assert made == [("POST", "/rest/api/3/search/jql")]
        assert [(r.issue, r.owner) for r in queue.rows] == [(None, None), (issue, None)]
        other = Project.open(server_project.project)  # a colleague, in their own process
        try:
            assert propose_claim(other.open_tracker(), issue, "bob").apply(confirmed=True).ok
        finally:
            other.close()
        queue = build_queue(project, now=NOW)
    finally:
        project.close()
    assert [(r.issue, r.owner, r.state) for r in queue.rows][1] == (issue, "bob", QueueState.IN_PROGRESS)


def test_an_issue_that_leaves_the_tracker_leaves_the_queue_at_the_next_full_sweep(server_project):
    """``changes(cursor)`` lists what changed, never what left: an issue transferred to another
    repository (GitHub) or moved out of sight (Jira: another project, a security level the
    account is not in) is forgotten at the next full sweep, at most FULL_SWEEP_EVERY after the
    last one (the clock is the queue's ``now``); until then the kept row stands."""
    server = server_project.server
    project = Project.open(server_project.project)
    try:
        assert ImportFlow(project).propose(project.thread_id_for(THREAD, Op.READ_THREAD)).apply(confirmed=True).ok
        issue = project.open_tracker().list(state="all").items[0]["id"]
        assert propose_claim(project.open_tracker(), issue, "bob").apply(confirmed=True).ok
        assert [(r.issue, r.owner) for r in build_queue(project, now=NOW).rows][1] == (issue, "bob")
        if hasattr(server, "transfer"):
            server.transfer(int(issue), "acme/elsewhere")
        else:
            server.hidden.add(issue)
        soon = build_queue(project, now=NOW + FULL_SWEEP_EVERY / 2)
        later = build_queue(project, now=NOW + FULL_SWEEP_EVERY)
    finally:
        project.close()
    assert [(r.issue, r.owner) for r in soon.rows][1] == (issue, "bob")  # kept: no full sweep yet
    assert [(r.issue, r.owner, r.state) for r in later.rows][1] == (None, None, QueueState.ACKNOWLEDGED)


def test_with_a_server_tracker_the_collector_stays_on_while_the_queue_is_built(server_project):
    """The queue pauses the cyclic collector only for the list and a local-files tracker: a server
    tracker's requests may take minutes, and in the app the UI thread and the poller would run
    without the collector all that time (a review)."""
    import gc

    on_during_requests: list[bool] = []
    server = server_project.server  # the emulator answers in this process: it sees the collector's state
    answer = server.handle

    def watched(*args, **kwargs):
        on_during_requests.append(gc.isenabled())
        return answer(*args, **kwargs)

    server.handle = watched
    project = Project.open(server_project.project)
    try:
        build_queue(project, now=NOW)
    finally:
        project.close()
    assert on_during_requests and all(on_during_requests)
