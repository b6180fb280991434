"""`--demo` runs on a copy of the demo project in a temporary git repository with a tracker."""

import json
import os
import subprocess
import sys

import pytest

from mailtriage.application import project_dir
from mailtriage.application.flows.reply import ReplyFlow
from mailtriage.application.project import Project


def run(env, *args, stdin=None):
    return subprocess.run([sys.executable, "-m", "mailtriage.cli.main", *args], env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def env(tmp_path):
    return {**os.environ, "MAILTRIAGE_DEMO_DIR": str(tmp_path / "demo"),
            "MAILTRIAGE_DATA_DIR": str(tmp_path / "data"), "MAILTRIAGE_CONFIG_DIR": str(tmp_path / "config")}


def test_demo_import_writes_the_demo_tracker_once_and_offers_publish(env, tmp_path):
    listing = run(env, "--demo", "mail", "list-recent-threads")
    assert listing.returncode == 0, listing.stderr
    threads = json.loads(listing.stdout)["result"]
    assert len(threads) >= 40
    workspace = tmp_path / "demo"
    assert (workspace / "tracker" / "tracker-format.yaml").is_file()
    assert subprocess.run(["git", "status", "--porcelain"], cwd=workspace, capture_output=True,
                          text=True).stdout == ""

    thread_id = next(t["thread_id"] for t in threads if t["subject"].startswith("CSRF"))
    first = run(env, "--demo", "import", thread_id, "--yes")
    assert first.returncode == 0, first.stderr
    issues = json.loads(run(env, "--demo", "tracker", "list", "--state", "all").stdout)
    # The workspace starts with six filed reports (three of them for the queue); the import adds the seventh.
    assert sorted(i["id"] for i in issues) == [f"SEC-000{n}" for n in range(1, 8)]
    assert next(i for i in issues if i["id"] == "SEC-0007")["title"].startswith("CSRF")

    again = run(env, "--demo", "import", thread_id, "--yes")
    assert again.returncode == 0, again.stderr
    assert len(json.loads(run(env, "--demo", "tracker", "list", "--state", "all").stdout)) == 7

    pending = json.loads(run(env, "--demo", "tracker", "pending").stdout)
    assert pending["needs_publish"] is True
    assert [c["path"] for c in pending["changes"]] == ["tracker/SEC-0007.md"]
    # The packaged demo folder itself was never written.
    from mailtriage.demo import demo_project_dir

    assert not (demo_project_dir() / "tracker").exists()


def test_demo_reset_starts_the_command_lines_workspace_over(env, tmp_path):
    listing = json.loads(run(env, "--demo", "mail", "list-recent-threads").stdout)["result"]
    thread_id = next(t["thread_id"] for t in listing if t["subject"].startswith("CSRF"))
    assert run(env, "--demo", "import", thread_id, "--yes").returncode == 0
    assert len(json.loads(run(env, "--demo", "tracker", "list", "--state", "all").stdout)) == 7
    reset = run(env, "--demo-reset", "tracker", "list", "--state", "all")
    assert reset.returncode == 0, reset.stderr
    assert len(json.loads(reset.stdout)) == 6  # the import of the earlier run is gone
    log = subprocess.run(["git", "log", "--oneline"], cwd=tmp_path / "demo", capture_output=True, text=True).stdout
    assert len(log.splitlines()) == 2  # only the workspace's own two commits


def test_each_app_run_gets_a_fresh_private_workspace_and_r_writes_a_visible_draft(env, monkeypatch, tmp_path):
    for name, value in env.items():
        if name.startswith("MAILTRIAGE_"):
            monkeypatch.setenv(name, value)
    first = project_dir(demo_session=True)
    second = project_dir(demo_session=True)
    assert first != second and first.parent == second.parent == tmp_path / "demo-sessions"
    assert os.stat(first).st_mode & 0o077 == 0
    project = Project.open(first)
    try:
        threads = project.list_threads(None, project.since(None)).value
        summary = next(t for t in threads if t.subject.startswith("Open redirect"))
        thread = project.read_thread(summary.thread_id).value
        flow = ReplyFlow(project)
        proposal = flow.propose(thread, form=flow.form(thread, flow.default_kind(thread)))
        assert not proposal.blocked and proposal.writes[0].backend == "drafts"
        report = proposal.apply(confirmed=True)
        assert report.ok, report.describe()
    finally:
        project.close()
    drafts = list((first / "Mail" / "Drafts" / "cur").iterdir())
    assert len(drafts) == 1 and "> " in drafts[0].read_text(encoding="utf-8")  # a quoted reply on a follow-up
    assert not (second / "Mail" / "Drafts").exists()  # the other run saw nothing of it
    status = subprocess.run(["git", "status", "--porcelain"], cwd=first, capture_output=True, text=True).stdout
    assert status == ""  # the Maildir is not project history


def test_a_session_is_a_copy_of_the_pristine_template_and_never_changes_it(env, monkeypatch, tmp_path):
    """Sessions start fast (a copy, no git runs); a commit in one never reaches the template
    or the next session, and each copy is a working repository of its own."""
    from mailtriage.demo.workspace import demo_template_dir

    for name, value in env.items():
        if name.startswith("MAILTRIAGE_"):
            monkeypatch.setenv(name, value)

    def head(repo):
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                              check=True).stdout.strip()

    first = project_dir(demo_session=True)
    template = demo_template_dir()
    assert template.is_dir() and os.stat(template).st_mode & 0o077 == 0
    before = head(template)
    assert head(first) == before
    (first / "note.txt").write_text("a change of this session\n", encoding="utf-8")
    subprocess.run(["git", "add", "note.txt"], cwd=first, check=True, capture_output=True)
    subprocess.run(["git", "commit", "-q", "-m", "session change"], cwd=first, check=True, capture_output=True)
    assert head(first) != before and head(template) == before
    second = project_dir(demo_session=True)
    assert head(second) == before and not (second / "note.txt").exists()


def test_the_word_tracker_as_an_option_value_does_not_route_to_the_tracker_cli(env):
    # Reported: `mailtriage --demo list --list tracker` was handed to the tracker CLI and
    # failed with "argument --list: expected one argument".
    result = run(env, "--demo", "list", "--list", "tracker")
    assert "expected one argument" not in result.stderr
    assert "not tracker" in result.stderr  # the list command itself judged the list address
