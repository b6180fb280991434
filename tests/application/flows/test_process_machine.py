"""Issue 30, item 5: the multi-process machine. Hypothesis draws batches of 1–5 real
`mailtriage` CLI processes started at once and after every batch checks exactly-once:

* local files in git — `import`, `import --publish` and `publish --yes` on a small set of
  threads: one issue per thread imported, one Import entry in it, every publish commit holds
  exactly the paths its run's confirmed review listed (none unseen, none left out), and
  every commit names exactly the issues it holds;
* the GitHub and Jira emulators (search lagging behind creation): one linked open issue per
  thread, duplicates folded, one Import entry;
* IMAP receipt drafts on the real Dovecot: one draft per imported thread.

Fixed scenarios of the same races: test_concurrent_imports.py / test_concurrent_drafts.py.
CI's share is about 45 s on an idle machine; benchmarks/soak_invariants.py runs them longer."""

from __future__ import annotations

import os
import re
from datetime import timedelta
from email import policy

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.application.flows.conftest import REPORT, mail, write_mbox
from tests.application.flows.test_concurrent_drafts import imap_env  # noqa: F401 (fixture)
from tests.application.flows.test_concurrent_imports import (_import_entries_of, _linked, _server_project,  # noqa: F401
                                                     assert_each_commit_holds_what_it_names, child_keyring,
                                                     git_commits, import_entries, run_many, threads)

pytestmark = pytest.mark.slow  # batches of real CLI processes

THREADS = 2
#: benchmarks/soak_invariants.py runs these longer: more examples each, fresh random batches.
SOAK_EXAMPLES = int(os.environ.get("MAILTRIAGE_PROCESS_EXAMPLES", "0"))
RANDOM = os.environ.get("MAILTRIAGE_MACHINE_RANDOM") == "1"


def machine_settings(examples: int):
    """CI's few fixed examples (no shrinking: a failing batch list is printed whole)."""
    return settings(max_examples=SOAK_EXAMPLES or examples, deadline=None, database=None, derandomize=not RANDOM,
                    phases=[Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

COMMAND = st.one_of(
    st.tuples(st.just("import"), st.integers(0, THREADS - 1), st.booleans()),
    st.tuples(st.just("publish"), st.just(0), st.just(True)))
BATCHES = st.lists(st.lists(COMMAND, min_size=1, max_size=5), min_size=1, max_size=2)


def argv(command) -> list[str]:
    what, n, publish = command
    if what == "publish":
        return ["publish", "--yes"]
    return ["import", f"mbox:<report-{n}@reporter.example>", "--yes", *(["--publish"] if publish else [])]


def reviewed_commits(results) -> dict[str, list[str]]:
    """Commit → the files its run's confirmed review listed, from each run's JSON document
    (`publish --yes`: the document itself; `import --publish`: its "publish" part)."""
    out = {}
    for _code, doc, _err in results:
        part = doc if doc.get("command") == "publish" else doc.get("publish", {})
        for result in part.get("results") or []:
            if isinstance(result, dict) and result.get("committed") and result.get("revision"):
                out[result["revision"]] = sorted(part["proposal"]["facts"]["files"])
    return out


def assert_each_commit_holds_exactly_its_review(env, reviews: dict[str, list[str]]) -> None:
    """Every publish commit on the remote was made by a run that showed a review, and holds
    exactly the paths that review listed: none it did not show, none it showed left out."""
    log = env.git("--git-dir", str(env.remote), "log", "--format=%H %s", "main")
    published = [line.split(" ", 1)[0] for line in log.splitlines() if line.split(" ", 1)[1].startswith("security:")]
    for revision in published:
        assert revision in reviews, f"commit {revision} was made by no run that showed its review"
        held = env.git("--git-dir", str(env.remote), "show", "--name-only", "--format=", revision)
        assert sorted(x for x in held.splitlines() if x.strip()) == reviews[revision], revision


def test_processes_at_once_import_and_publish_exactly_once_git(env):
    archive = write_mbox(env.project / "security.mbox", threads(THREADS))
    env.write_project([("mbox", "primary", "yes")],
                      extra={"mail_sources.mbox": {"path": archive.name, "list": "security@frobnicator.example.org"}})
    env.git("add", "-A")
    env.git("commit", "-q", "-m", "archive")
    env.git("push", "-q")
    imported: set[int] = set()
    reviews: dict[str, list[str]] = {}  # commit → the paths its run's confirmed review listed
    counts = {"batches": 0, "processes": 0}

    @machine_settings(3)
    @given(batches=BATCHES)
    def machine(batches) -> None:
        for batch in batches:
            results = run_many(env.project, [argv(c) for c in batch])
            counts["batches"] += 1
            counts["processes"] += len(batch)
            for code, _doc, err in results:  # done, or refused with nothing written / nothing to publish
                assert code in (0, 4) and "Traceback" not in err, err
            reviews.update(reviewed_commits(results))
            counts["reviewed commits"] = len(reviews)
            imported.update(n for what, n, _ in batch if what == "import")
            issues = sorted(env.tracker_root.glob("SEC-*.md"))
            threads_held = [re.search(r"<report-(\d+)@", p.read_text(encoding="utf-8")).group(1) for p in issues]
            assert sorted(threads_held) == sorted(str(n) for n in imported), threads_held  # one issue per thread
            for path in issues:
                assert import_entries(env.tracker_root, path.name) == 1, path.name
            assert_each_commit_holds_exactly_its_review(env, reviews)
            assert_each_commit_holds_what_it_names(git_commits(env))

    machine()
    print(f"process machine: {counts}")
    assert counts["reviewed commits"] > 0  # the review check ran on real commits


def test_processes_at_once_import_exactly_once_github(mbox_env, child_keyring):  # noqa: F811
    """The GitHub emulator, its search lagging behind creation: after each batch of imports
    of one thread, one open issue holds it and its rollup has one Import entry."""
    from mailtriage.core.secrets import set_secret
    from tests.trackers.servers import GitHubServer

    server = GitHubServer().start()
    try:
        server.search_lag = 1.0
        set_secret(f"github:{server.url}/{server.repo}", server.token)  # the key the CLI names
        _server_project(mbox_env, {"tracker.platform": "github",
                                   "tracker.github": {"repo": server.repo, "api_url": server.url}})

        @machine_settings(2)
        @given(batches=st.lists(st.integers(1, 5), min_size=1, max_size=2))
        def machine(batches) -> None:
            for size in batches:
                results = run_many(mbox_env.project, [["import", f"mbox:{REPORT}", "--yes"]] * size, child_keyring)
                assert all(code == 0 for code, _, _ in results), [r[2] for r in results]
                kept = _linked(server.issues, lambda i: i["body"])
                assert len(kept) == 1, {n: (i["state"], i["body"]) for n, i in server.issues.items()}
                assert server.issues[kept[0]]["state"] == "open"
                assert _import_entries_of(mbox_env, str(kept[0])) == 1

        machine()
    finally:
        server.stop()


def test_processes_at_once_import_exactly_once_jira(mbox_env, child_keyring):  # noqa: F811
    """The Jira emulator, its search lagging behind creation: after each batch of imports of
    one thread, one open issue still names the thread (a duplicate a run made is folded:
    unlinked and done) and it has one Import entry."""
    from mailtriage.core.origins import secret_key
    from mailtriage.core.secrets import set_secret
    from tests.trackers.servers import JiraServer, _flatten

    server = JiraServer(api_version=2).start()
    try:
        server.search_lag = 1.0
        set_secret(secret_key("jira", server.url), server.token)
        _server_project(mbox_env, {"tracker.platform": "jira",
                                   "tracker.jira": {"url": server.url, "project": server.project, "api_version": 2,
                                                    "security_level": "Embargoed", "auth": "bearer"}})

        @machine_settings(2)
        @given(batches=st.lists(st.integers(1, 5), min_size=1, max_size=2))
        def machine(batches) -> None:
            for size in batches:
                results = run_many(mbox_env.project, [["import", f"mbox:{REPORT}", "--yes"]] * size, child_keyring)
                assert all(code == 0 for code, _, _ in results), [r[2] for r in results]
                kept = _linked(server.issues, lambda i: _flatten(i["fields"]["description"]))
                assert len(kept) == 1, {k: _flatten(i["fields"]["description"]) for k, i in server.issues.items()}
                assert server.issues[kept[0]]["fields"]["status"]["name"] == "Open"
                for key, issue in server.issues.items():
                    if key != kept[0]:
                        assert issue["fields"]["status"]["statusCategory"]["key"] == "done", key
                assert _import_entries_of(mbox_env, kept[0]) == 1

        machine()
    finally:
        server.stop()


def test_processes_at_once_draft_receipts_exactly_once_imap(imap_env):  # noqa: F811
    """Receipt drafts on the real Dovecot: batches of 1–5 `import imap:…` processes at once over
    two threads; after each batch every imported thread has one issue and Drafts holds exactly
    one receipt per imported thread (one Message-ID each, no second copy)."""
    from tests.application.flows.test_concurrent_drafts import LIST, NOW, drafts

    second = "<report-b@reporter.example>"
    when = NOW - timedelta(hours=4)
    imap_env.dovecot.append(imap_env.user, "INBOX", mail(
        second, "Bea Finder <bea@finder.example>", "XSS in admin", "Script runs.\n",
        when.strftime("%a, %d %b %Y %H:%M:%S +0000"), to=LIST).as_bytes(policy=policy.SMTP), when=when)
    thread_ids = (REPORT, second)
    imported: set[str] = set()

    @machine_settings(2)
    @given(batches=st.lists(st.lists(st.integers(0, 1), min_size=1, max_size=5), min_size=1, max_size=2))
    def machine(batches) -> None:
        for batch in batches:
            results = run_many(imap_env.project, [["import", f"imap:{thread_ids[n]}", "--yes"] for n in batch],
                               imap_env.child_env)
            assert all(code == 0 for code, _, _ in results), [r[2] for r in results]
            imported.update(thread_ids[n] for n in batch)
            issues = sorted(imap_env.tracker_root.glob("SEC-*.md"))
            held = sorted(next(t for t in thread_ids if t in p.read_text(encoding="utf-8")) for p in issues)
            assert held == sorted(imported), held  # one issue per thread
            receipts = [message_id for _uid, message_id in drafts(imap_env)]
            assert len(receipts) == len(set(receipts)) == len(imported), receipts  # one draft per thread

    machine()
