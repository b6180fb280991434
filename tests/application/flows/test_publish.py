"""Publish review of a local-files tracker on a real git working copy with a bare remote."""

from __future__ import annotations

from mailtriage.application.flows.publish import commit_message, propose_publish


def _fields(proposal):
    return {f.label: f.value for w in proposal.writes for f in w.fields}


def test_nothing_to_publish_is_an_empty_proposal(env):
    proposal = propose_publish(env.tracker(), env.config())
    assert proposal.empty
    assert proposal.facts["needs_publish"] is False
    assert "nothing to publish" in proposal.notes[0]


def test_review_shows_files_diff_message_and_attribution_then_publishes(env):
    tracker = env.tracker()
    first = tracker.create("Heap overflow", "### CVE\n\n", ["needs triage"])["id"]
    second = tracker.create("XSS in admin", "### CVE\n\n", [])["id"]
    env.git("add", "-A")
    env.git("commit", "-q", "-m", "local, not pushed")
    env.git("push", "-q")
    tracker.rollup_append(first, "Sync", "Reporter sent a patch.", user="tess")
    third = tracker.create("Path traversal", "body\n", [])["id"]

    proposal = propose_publish(env.tracker(), env.config())
    fields = _fields(proposal)
    assert len(proposal.writes) == 1
    assert f"untracked: security-tracker/{third}.md" in fields["Files"]
    assert f"modified: security-tracker/{first}.md" in fields["Files"]
    assert second not in fields["Files"]
    # the diff shows the new file whole and the rollup entry added to the first
    assert "+title: \"Path traversal\"" in fields["Diff"]
    assert "+<details><summary>" in fields["Diff"] and "· @tess · Sync</summary>" in fields["Diff"]
    assert fields["Commit message"] == f"security: sync {first}; import {third}"
    assert fields["Attribution"] == "Generated-by: mailtriage"  # from the asf organization profile
    assert fields["Publish"] == "commit, then push to origin/main"

    report = proposal.apply(confirmed=True)
    assert report.ok, report.describe()
    log = env.remote_log()
    assert log.startswith(f"security: sync {first}; import {third}\n\nGenerated-by: mailtriage\n")
    assert propose_publish(env.tracker(), env.config()).empty


def test_edited_commit_message_is_used(env):
    env.tracker().create("Heap overflow", "x\n", [])
    proposal = propose_publish(env.tracker(), env.config())
    proposal.writes[0].body = "security: import the heap overflow report"
    assert proposal.apply(confirmed=True).ok
    assert env.remote_log().startswith("security: import the heap overflow report\n")


def test_files_outside_the_tracker_are_left_alone(env):
    (env.wc / "notes.txt").write_text("private scratch\n")
    env.tracker().create("Heap overflow", "x\n", [])
    proposal = propose_publish(env.tracker(), env.config())
    assert "notes.txt" not in _fields(proposal)["Files"]
    assert proposal.apply(confirmed=True).ok
    assert "?? notes.txt" in env.git("status", "--porcelain")


def test_commit_attribution_from_the_project_wins(env):
    env.write_project(extra={"tracker.commit_attribution": ["Assisted-by: mailtriage", "Reviewed-by: Tess"]})
    env.tracker().create("Heap overflow", "x\n", [])
    proposal = propose_publish(env.tracker(), env.config())
    assert _fields(proposal)["Attribution"] == "Assisted-by: mailtriage, Reviewed-by: Tess"
    assert proposal.apply(confirmed=True).ok
    assert "Assisted-by: mailtriage\nReviewed-by: Tess\n" in env.remote_log()


def test_commit_message_names_actions_per_issue():
    changes = [{"path": "t/SEC-0012.md", "status": "untracked"}, {"path": "t/SEC-0013.md", "status": "added"},
               {"path": "t/SEC-0003.md", "status": "modified"}, {"path": "t/SEC-0004.md", "status": "modified"}]
    diff = ("diff --git a/t/SEC-0003.md b/t/SEC-0003.md\n+<details><summary>2026-01-02 · @tess · Sync</summary>\n"
            "diff --git a/t/SEC-0004.md b/t/SEC-0004.md\n+labels: [\"valid\"]\n")
    assert commit_message(changes, diff) == "security: sync SEC-0003; update SEC-0004; import SEC-0012, SEC-0013"


def test_svn_working_copy(tmp_path):
    from mailtriage.core.projectconfig import load_project
    from mailtriage.trackers.registry import open_tracker
    from tests.application.flows.conftest import sh

    repo = tmp_path / "svnrepo"
    sh(["svnadmin", "create", str(repo)], tmp_path)
    wc = tmp_path / "wc"
    sh(["svn", "checkout", "-q", "--non-interactive", repo.as_uri(), str(wc)], tmp_path)
    project = wc / "project"
    project.mkdir()
    (project / "project.md").write_text("# P\n\n## Configuration\n\n```yaml\norganization: asf\ntracker:\n"
                                        "  platform: local-files\n  local: {path: ../security-tracker}\n```\n")
    config = load_project(project)
    open_tracker(config).init("SEC", access_restricted=True)
    sh(["svn", "add", "-q", "project", "security-tracker"], wc)
    sh(["svn", "commit", "-q", "--non-interactive", "-m", "start"], wc)
    tracker = open_tracker(config)
    made = tracker.create("Heap overflow", "x\n", [])["id"]
    proposal = propose_publish(tracker, config)
    fields = _fields(proposal)
    assert fields["Commit message"] == f"security: import {made}"
    assert fields["Publish"] == f"svn commit to {repo.as_uri()}"
    assert '+title: "Heap overflow"' in fields["Diff"]
    assert proposal.apply(confirmed=True).ok
    log = sh(["svn", "log", "-l", "1", "--non-interactive", repo.as_uri()], tmp_path)
    assert f"security: import {made}" in log and "Generated-by: mailtriage" in log


def test_commit_subject_stays_short_with_counts_and_the_full_list_in_the_body():
    changes = [{"path": f"security-tracker/SEC-{n:04d}.md", "status": "untracked"} for n in range(1, 402)]
    changes += [{"path": f"security-tracker/SEC-{n:04d}.md", "status": "modified"} for n in range(402, 502)]
    diff = "".join(f"diff --git a/security-tracker/SEC-{n:04d}.md b/security-tracker/SEC-{n:04d}.md\n"
                   "+<details><summary>2026-11-02 · @sam · Sync</summary>\n" for n in range(402, 502))
    message = commit_message(changes, diff)
    subject, blank, *body = message.split("\n")
    assert len(subject) <= 72 and blank == ""
    assert subject.startswith("security: import 401, sync 100 issues")
    assert "SEC-0001, SEC-0002, SEC-0003" in subject
    listed = " ".join(body)
    assert all(f"SEC-{n:04d}" in listed for n in range(1, 502))
    assert all(len(line) <= 72 for line in body)
    assert listed.index("SEC-0402") > listed.index("Sync:") > listed.index("SEC-0401") > listed.index("Import:")


def test_review_names_the_git_identity_that_commits_and_summarises_the_files_above_the_diff(env, monkeypatch):
    tracker = env.tracker()
    first = tracker.create("Heap overflow", "### CVE\n\n", ["needs triage"])["id"]
    proposal = propose_publish(env.tracker(), env.config())
    fields = _fields(proposal)
    # As git resolves it in that working copy (its own config here).
    assert fields["Commits as"] == "Tess Tester <tess@example.org>"
    labels = [f.label for f in proposal.writes[0].fields]
    assert labels.index("Summary") == labels.index("Diff") - 1
    added = fields["Diff"].count("\n+") - 1  # the +++ line
    assert fields["Summary"].splitlines() == [f"untracked  security-tracker/{first}.md  +{added} -0",
                                              f"1 file changed, +{added} -0 lines"]
    # The environment wins over the config, as in git itself.
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Env Person")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "env@example.org")
    assert _fields(propose_publish(env.tracker(), env.config()))["Commits as"] == "Env Person <env@example.org>"


def test_review_warns_when_git_cannot_tell_who_commits(env, monkeypatch, tmp_path):
    env.tracker().create("Heap overflow", "x\n", [])
    env.git("config", "--unset", "user.name")
    env.git("config", "--unset", "user.email")
    env.git("config", "user.useConfigOnly", "true")  # never a guess from the host name
    for name in ("GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.gitconfig
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    proposal = propose_publish(env.tracker(), env.config())
    assert _fields(proposal)["Commits as"].startswith("unknown (")
    assert any("git cannot tell who commits" in w for w in proposal.warnings)
