"""Issue 30, item 5: the multi-process machine (a first part: local files in git). Hypothesis
draws batches of 1–5 real `mailtriage` CLI processes started at once — `import`,
`import --publish` and `publish --yes` on a small set of threads — and after every batch
checks exactly-once: one issue per thread imported, one Import entry in it, and every
publish commit holds exactly the issues it names. GitHub, Jira and IMAP drafts are covered
by test_concurrent_imports.py / test_concurrent_drafts.py (fixed scenarios); GitHub also here."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.workflows.conftest import REPORT, write_mbox
from tests.workflows.test_concurrent_imports import (_import_entries_of, _linked, _server_project,  # noqa: F401
                                                     assert_each_commit_holds_what_it_names, child_keyring,
                                                     git_commits, import_entries, run_many, threads)

THREADS = 2
COMMAND = st.one_of(
    st.tuples(st.just("import"), st.integers(0, THREADS - 1), st.booleans()),
    st.tuples(st.just("publish"), st.just(0), st.just(True)))
BATCHES = st.lists(st.lists(COMMAND, min_size=1, max_size=5), min_size=1, max_size=2)


def argv(command) -> list[str]:
    what, n, publish = command
    if what == "publish":
        return ["publish", "--yes"]
    return ["import", f"mbox:<report-{n}@reporter.example>", "--yes", *(["--publish"] if publish else [])]


def test_processes_at_once_import_and_publish_exactly_once_git(env):
    archive = write_mbox(env.project / "security.mbox", threads(THREADS))
    env.write_project([("mbox", "primary", "yes")],
                      extra={"mail_sources.mbox": {"path": archive.name, "list": "security@frobnicator.example.org"}})
    env.git("add", "-A")
    env.git("commit", "-q", "-m", "archive")
    env.git("push", "-q")
    imported: set[int] = set()
    counts = {"batches": 0, "processes": 0}

    @settings(max_examples=3, deadline=None, database=None, derandomize=True, phases=[Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(batches=BATCHES)
    def machine(batches) -> None:
        for batch in batches:
            results = run_many(env.project, [argv(c) for c in batch])
            counts["batches"] += 1
            counts["processes"] += len(batch)
            for code, _doc, err in results:  # done, or refused with nothing written / nothing to publish
                assert code in (0, 4) and "Traceback" not in err, err
            imported.update(n for what, n, _ in batch if what == "import")
            issues = sorted(env.tracker_root.glob("SEC-*.md"))
            threads_held = [re.search(r"<report-(\d+)@", p.read_text(encoding="utf-8")).group(1) for p in issues]
            assert sorted(threads_held) == sorted(str(n) for n in imported), threads_held  # one issue per thread
            for path in issues:
                assert import_entries(env.tracker_root, path.name) == 1, path.name
            assert_each_commit_holds_what_it_names(git_commits(env))

    machine()
    print(f"process machine: {counts}")


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

        @settings(max_examples=2, deadline=None, database=None, derandomize=True, phases=[Phase.generate],
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
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
