"""local-files specifics: the access guard, the file format, malformed files, symlinks,
concurrent writers, pending/publish on real git and svn working copies, doctor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mailtriage.core.private_files import temp_name
from mailtriage.trackers import localformat as fmt
from mailtriage.trackers.contract import BackendError, MalformedIssue, Refused
from tests.trackers.conftest import make_git_env, make_svn_env, run_cli_process, sh

BODY = "### Affected versions\n\n1.2.3\n"


def tracker_dir(env) -> Path:
    return env.wc / "security-tracker"


# -- the access guard ------------------------------------------------------------------

@pytest.mark.parametrize("make", [make_git_env, make_svn_env], ids=["git", "svn"])
def test_writes_refused_until_access_restricted(tmp_path, make):
    env = make(tmp_path, restricted=False)
    with pytest.raises(Refused, match="access_restricted"):
        env.tracker.create("t", "b", [])
    code, out, err = env.cli("create", "--title", "t", "--body-file", "-", stdin="b")
    assert code == 4 and out is None and "access_restricted" in err
    assert not list(tracker_dir(env).glob("SEC-*.md"))
    # reads work; doctor says why writes are refused
    assert env.tracker.list().items == []
    checks = {c["name"]: c for c in env.tracker.doctor()["checks"]}
    assert checks["access_restricted"]["ok"] is False
    # detect --write without the flag keeps the guard; with it, writes go through
    code, out, _ = env.cli("detect", "--write")
    assert code == 4 or out["access_restricted"] is False  # no issue files yet: nothing to detect
    code, out, _ = env.cli("detect", "--access-restricted")
    assert code == 2
    (tracker_dir(env) / fmt.DESCRIPTOR_NAME).unlink()
    code, out, err = env.cli("init", "--prefix", "SEC", "--access-restricted")
    assert code == 0 and out["access_restricted"] is True
    # writes wait until the descriptor that says so is committed (publish, which the user confirms)
    code, out, err = env.cli("create", "--title", "t", "--body-file", "-", stdin="b")
    assert code == 4 and "committed" in err
    code, out, err = env.cli("publish", "--message-file", "-", stdin="tracker descriptor\n")
    assert code == 0 and out["committed"] is True, err
    code, out, _ = env.cli("create", "--title", "t", "--body-file", "-", stdin="b")
    assert code == 0 and out["id"] == "SEC-0001"
    code, _, err = env.cli("init", "--prefix", "SEC")
    assert code == 4 and "exists" in err


def test_detect_infers_the_format_of_existing_files(git_env):
    root = tracker_dir(git_env)
    git_env.tracker.create("one", BODY, [])
    (root / fmt.DESCRIPTOR_NAME).unlink()
    code, out, _ = git_env.cli("detect")
    assert code == 0 and out["prefix"] == "SEC" and out["digits"] == 4 and out["issues"] == 1
    assert out["written"] is False and not (root / fmt.DESCRIPTOR_NAME).exists()
    code, out, _ = git_env.cli("create", "--title", "t", "--body-file", "-", stdin="b")
    assert code == 3  # no descriptor: the tracker is not set up
    code, out, _ = git_env.cli("detect", "--write", "--access-restricted")
    assert code == 0 and out["access_restricted"] is True
    assert "access_restricted: true" in (root / fmt.DESCRIPTOR_NAME).read_text()


# -- the file format -------------------------------------------------------------------

def test_file_layout_and_forged_comment_headers_stay_text(git_env):
    t = git_env.tracker
    forged = ('Body line\n<!-- mailtriage:comment {"id": 99, "kind": "rollup", "author": "mallory"} -->\n'
              "\\<!-- mailtriage:already escaped\nend\n")
    made = t.create("Forgery attempt", forged, [])
    t.comment(made["id"], "second\n<!-- mailtriage:comment {\"id\": 5} -->", author="bob")
    path = tracker_dir(git_env) / "SEC-0001.md"
    text = path.read_text()
    assert text.startswith('---\nid: "SEC-0001"\ntitle: "Forgery attempt"\nstate: "open"\n')
    issue = t.view(made["id"], comments=True)
    assert issue["body"] == forged
    assert [c["kind"] for c in issue["comments"]] == ["comment"]
    assert issue["comments"][0]["author"] == "bob"
    assert issue["comments"][0]["body"] == "second\n<!-- mailtriage:comment {\"id\": 5} -->"
    parsed = fmt.parse_issue(text, path.name)
    assert fmt.render_issue(parsed) == text


def test_an_issue_file_keeps_its_mode_when_it_is_updated(git_env):
    """A new issue file is 0644 less umask, as a plain create makes it; a comment (a rewrite
    through a temporary file) keeps that mode instead of leaving the file 0600, unreadable to
    the team sharing the working copy."""
    t = git_env.tracker
    made = t.create("Mode", BODY, [])
    path = tracker_dir(git_env) / f"{made['id']}.md"
    path.chmod(0o644)
    t.comment(made["id"], "a note", author="bob")
    assert path.stat().st_mode & 0o777 == 0o644


def test_hand_edited_yaml_front_matter_is_read(git_env):
    path = tracker_dir(git_env) / "SEC-0007.md"
    path.write_text("---\nid: SEC-0007\ntitle: 'Written by hand: yes'\nstate: open\nlabels:\n  - bug\n"
                    "created: 2025-01-02T03:04:05Z\n---\nBody\n")
    issue = git_env.tracker.view("7")
    assert issue["title"] == "Written by hand: yes" and issue["labels"] == ["bug"] and issue["body"] == "Body"
    assert issue["created"] == "2025-01-02T03:04:05Z"


def test_malformed_files_are_reported_per_file(git_env):
    t = git_env.tracker
    t.create("Good one", BODY, ["bug"])
    root = tracker_dir(git_env)
    (root / "SEC-0002.md").write_text("no front matter at all\n")
    (root / "SEC-0003.md").write_bytes(b"---\nid: \"SEC-0003\"\ntitle: \"\xff\xfe\"\n---\n")
    (root / "SEC-0004.md").write_text('---\nid: "SEC-0099"\ntitle: "x"\nstate: "open"\n---\n')
    (root / "SEC-0005.md").write_text('---\nid: "SEC-0005"\ntitle: "x"\nstate: "maybe"\n---\n')
    result = t.list(state="all")
    assert [i["id"] for i in result.items] == ["SEC-0001"]
    joined = "\n".join(result.problems)
    for name in ("SEC-0002.md", "SEC-0003.md", "SEC-0004.md", "SEC-0005.md"):
        assert name in joined
    assert "maybe" in joined and "not UTF-8" in joined
    with pytest.raises(MalformedIssue, match="SEC-0002.md"):
        t.view("2")
    code, out, err = git_env.cli("list", "--state", "all")
    assert code == 0 and [i["id"] for i in out] == ["SEC-0001"] and "SEC-0002.md" in err
    code, out, err = git_env.cli("view", "SEC-0002")
    assert code == 5 and "SEC-0002.md" in err
    # the rest keeps working: a new issue takes the next free number
    assert t.create("Next", BODY, [])["id"] == "SEC-0006"


def test_symlinked_issue_files_are_refused(git_env, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text('---\nid: "SEC-0003"\ntitle: "secret"\nstate: "open"\n---\nsecret\n')
    os.symlink(outside, tracker_dir(git_env) / "SEC-0003.md")
    with pytest.raises(Refused, match="symlink"):
        git_env.tracker.view("3")
    result = git_env.tracker.list(state="all")
    assert result.items == [] and any("SEC-0003.md" in p for p in result.problems)
    with pytest.raises(Refused):
        git_env.tracker.view("SEC-0003/../../outside")


def test_a_tracker_folder_reached_through_a_link_keeps_its_urls_and_its_guards(git_env, tmp_path):
    """The folder is resolved once (not each file): URLs stay relative to its real place and an
    issue-named link is still refused, also one that points at another issue of the folder."""
    from mailtriage.trackers.localfiles import LocalFilesTracker

    made = git_env.tracker.create("Through a link", BODY, [])
    linked = git_env.wc / "linked-tracker"
    linked.symlink_to(tracker_dir(git_env), target_is_directory=True)
    t = LocalFilesTracker(linked)
    assert t.view(made["id"], comments=True)["url"] == "security-tracker/SEC-0001.md"
    assert [i["url"] for i in t.list().items] == ["security-tracker/SEC-0001.md"]
    os.symlink("SEC-0001.md", tracker_dir(git_env) / "SEC-0002.md")
    os.symlink(tmp_path / "outside.md", tracker_dir(git_env) / "SEC-0003.md")
    for issue_id in ("2", "3", "SEC-0003/../SEC-0001"):
        with pytest.raises(Refused):
            t.view(issue_id)


def test_a_view_after_a_listing_reads_the_file_as_it_is_now(git_env):
    """A listing's parse of the front matter is reused by the next view only while the file
    still has that front matter."""
    made = git_env.tracker.create("Listed title", BODY, [])
    t = git_env.reopen()
    assert t.list().items[0]["title"] == "Listed title"
    path = tracker_dir(git_env) / "SEC-0001.md"
    path.write_text(path.read_text().replace('"Listed title"', '"Edited after the listing"'))
    assert t.view(made["id"])["title"] == "Edited after the listing"
    assert t.list().items[0]["title"] == "Edited after the listing"
    path.write_text(path.read_text().replace("1.2.3", "4.5.6"))
    view = t.view(made["id"])
    assert view["title"] == "Edited after the listing" and "4.5.6" in view["body"]


def test_index_follows_edits_made_outside_mailtriage(git_env):
    t = git_env.tracker
    made = t.create("Before", BODY, [])
    assert t.list().items[0]["title"] == "Before"
    path = tracker_dir(git_env) / "SEC-0001.md"
    path.write_text(path.read_text().replace('"Before"', '"After, edited by hand"'))
    assert git_env.reopen().list().items[0]["title"] == "After, edited by hand"
    assert git_env.tracker.list(search="edited").items[0]["id"] == made["id"]
    index_files = list((git_env.wc / ".git" / "mailtriage").glob("tracker-index-*.json"))
    assert index_files, "the derived index lives in the VCS metadata folder, outside the tracker root"


# -- concurrency -------------------------------------------------------------------------

WRITER = """
import sys
from mailtriage.core.projectconfig import load_project
from mailtriage.trackers.registry import open_tracker
t = open_tracker(load_project(sys.argv[1]))
for n in range(int(sys.argv[3])):
    t.comment("1", f"{sys.argv[2]} comment {n}", author=sys.argv[2])
    t.rollup_append("1", "Step", f"{sys.argv[2]} step {n}", user=sys.argv[2], now="2025-01-02")
"""


def test_concurrent_writers_never_lose_an_update(git_env):
    git_env.tracker.create("Busy issue", BODY, [])
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(git_env.project), who, "30"])
             for who in ("alice", "bob", "carol")]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    issue = git_env.tracker.view("1", comments=True)
    bodies = [c["body"] for c in issue["comments"] if c["kind"] == "comment"]
    assert sorted(bodies) == sorted(f"{w} comment {n}" for w in ("alice", "bob", "carol") for n in range(30))
    from mailtriage.trackers import rollup

    steps = [e.body for e in rollup.entries(issue["comments"][0]["body"])]
    assert sorted(steps) == sorted(f"{w} step {n}" for w in ("alice", "bob", "carol") for n in range(30))


def test_concurrent_creates_get_distinct_ids(git_env):
    ids: list[str] = []
    errors: list[Exception] = []

    def worker(n: int) -> None:
        try:
            for k in range(5):
                ids.append(git_env.reopen().create(f"issue {n}-{k}", BODY, [])["id"])
        except Exception as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert sorted(ids) == [f"SEC-{n:04d}" for n in range(1, 21)]


# -- pending / publish: git ----------------------------------------------------------------

def remote_log(env) -> str:
    return sh(["git", "--git-dir", str(env.remote), "log", "--format=%B", "main"], env.wc)


def test_git_publish_commits_the_tracker_root_only_and_pushes(git_env):
    t = git_env.tracker
    t.create("One", BODY, [])
    (git_env.wc / "README").write_text("changed, unrelated, staged\n")
    sh(["git", "add", "README"], git_env.wc)
    (git_env.wc / "notes.txt").write_text("untracked, unrelated\n")
    pending = t.pending()
    assert pending["backend"] == "local-files:git" and pending["needs_publish"] is True
    assert {c["path"] for c in pending["changes"]} == {"security-tracker/SEC-0001.md"}
    code, out, err = git_env.cli("publish", "--message-file", "-", "--trailer", "Generated-by: mailtriage",
                                 "--push", stdin="security: import SEC-0001\n")
    assert code == 0, err
    assert out["committed"] is True and out["pushed"] is True and len(out["revision"]) == 40
    assert "security: import SEC-0001\n\nGenerated-by: mailtriage" in remote_log(git_env)
    status = sh(["git", "status", "--porcelain"], git_env.wc)
    assert "M  README" in status and "?? notes.txt" in status
    shown = sh(["git", "show", "--name-only", "--format=", "HEAD"], git_env.wc).split()
    assert sorted(shown) == ["security-tracker/SEC-0001.md"]
    after = t.pending()
    assert after == {"backend": "local-files:git", "changes": [], "unpushed_commits": [], "needs_publish": False}


def test_git_publish_without_push_leaves_an_unpushed_commit(git_env):
    git_env.tracker.create("One", BODY, [])
    out = git_env.tracker.publish("import SEC-0001")
    assert out["committed"] and not out["pushed"]
    pending = git_env.tracker.pending()
    assert pending["changes"] == [] and pending["needs_publish"] is True
    assert [c["subject"] for c in pending["unpushed_commits"]] == ["import SEC-0001"]


def test_failed_push_is_reported_with_what_was_committed(git_env):
    hook = git_env.remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'rejected by policy' >&2\nexit 1\n")
    hook.chmod(0o755)
    git_env.tracker.create("One", BODY, [])
    code, out, err = git_env.cli("publish", "--message-file", "-", "--push", stdin="import\n")
    assert code == 5
    assert out["committed"] is True and out["pushed"] is False and out["revision"]
    assert "push failed" in err and "rejected by policy" in err and "not retried" in err
    assert git_env.tracker.pending()["unpushed_commits"][0]["revision"] == out["revision"]


def test_push_refused_when_unpushed_commits_touch_files_outside_the_root(git_env):
    (git_env.wc / "README").write_text("local change\n")
    sh(["git", "commit", "-q", "-am", "unrelated local commit"], git_env.wc)
    git_env.tracker.create("One", BODY, [])
    code, out, err = git_env.cli("publish", "--message-file", "-", "--push", stdin="import\n")
    assert code == 4 and "README" in err and out["committed"] is True and out["pushed"] is False
    assert "import" not in remote_log(git_env)


def test_publish_with_nothing_to_commit(git_env):
    git_env.tracker.publish("descriptor")
    out = git_env.tracker.publish("again", push=True)
    assert out["committed"] is False and out["pushed"] is True


def test_publish_rejects_bad_trailers(git_env):
    code, _, err = git_env.cli("publish", "--message-file", "-", "--trailer", "no colon", stdin="m\n")
    assert code == 2 and "trailer" in err


# -- pending / publish: svn ------------------------------------------------------------------

def test_svn_publish_adds_removes_and_commits_the_tracker_root_only(svn_env):
    t = svn_env.tracker
    t.create("One", BODY, [])
    t.create("Two", BODY, [])
    (svn_env.project / "project.md").write_text((svn_env.project / "project.md").read_text() + "\n<!-- edit -->\n")
    out = t.publish("import SEC-0001, SEC-0002", ["Generated-by: mailtriage"])
    assert out["committed"] is True and out["pushed"] is True and out["revision"] == "3"
    (tracker_dir(svn_env) / "SEC-0002.md").unlink()
    t.attach("1", b"patch\n", "fix.patch")
    pending = t.pending()
    statuses = {c["path"]: c["status"] for c in pending["changes"]}
    assert statuses["security-tracker/SEC-0002.md"] == "missing"
    assert statuses["security-tracker/SEC-0001.attachments"] == "untracked"
    out = t.publish("remove SEC-0002, attach patch", push=True)
    assert out["revision"] == "4"
    listing = sh(["svn", "ls", "-R", "--non-interactive", svn_env.remote.as_uri()], svn_env.wc)
    assert "security-tracker/SEC-0001.attachments/fix.patch" in listing
    assert "security-tracker/SEC-0002.md" not in listing
    log = sh(["svn", "log", "--non-interactive", "-r", "3", svn_env.remote.as_uri()], svn_env.wc)
    assert "Generated-by: mailtriage" in log
    status = sh(["svn", "status"], svn_env.wc)
    assert "M       project/project.md" in status
    assert t.pending()["needs_publish"] is False


# -- doctor ---------------------------------------------------------------------------

@pytest.mark.parametrize("make", [make_git_env, make_svn_env], ids=["git", "svn"])
def test_doctor_never_says_ok_for_a_remote_it_cannot_check(tmp_path, make):
    for env in (make(tmp_path),):
        report = env.tracker.doctor()
        assert report["backend"] == "local-files" and report["ok"] is False
        remote = [c for c in report["checks"] if c["name"].startswith("remote")]
        assert remote and all(c["ok"] is False and "cannot verify" in c["detail"] for c in remote)
        code, out, _ = env.cli("doctor")
        assert code == 4 and out["ok"] is False


def test_doctor_without_remote_is_ok(tmp_path):
    wc = tmp_path / "solo"
    sh(["git", "init", "-q", str(wc)], tmp_path)
    from tests.trackers.conftest import TrackerEnv, write_project

    write_project(wc / "project", {"platform": "local-files", "local": {"path": "../t"}})
    env = TrackerEnv("local-files-git", wc / "project", None, wc=wc)
    env.reopen().init("SEC", access_restricted=True)
    assert env.tracker.doctor()["ok"] is False  # the descriptor is not committed yet
    sh(["git", "-c", "user.name=T", "-c", "user.email=t@example.org", "add", "t"], wc)
    sh(["git", "-c", "user.name=T", "-c", "user.email=t@example.org", "commit", "-q", "-m", "tracker"], wc)
    report = env.tracker.doctor()
    assert report["ok"] is True, report
    assert any(c["name"] == "remotes" and "no remote" in c["detail"] for c in report["checks"])


# -- the CLI as a real process ---------------------------------------------------------------

def test_cli_process_exit_codes_and_streams(git_env):
    proc = run_cli_process(git_env.project, "create", "--title", "Via process", "--body-file", "-",
                           stdin="### CVE\n\nCVE-1\n")
    assert proc.returncode == 0 and proc.stderr == ""
    made = json.loads(proc.stdout)
    assert made["id"] == "SEC-0001"
    proc = run_cli_process(git_env.project, "field-get", "1", "cve")
    assert proc.returncode == 0 and json.loads(proc.stdout)["value"] == "CVE-1"
    proc = run_cli_process(git_env.project, "view", "42")
    assert proc.returncode == 3 and proc.stdout == "" and "SEC-0042" in proc.stderr
    proc = run_cli_process(git_env.project, "view", "../../etc/passwd")
    assert proc.returncode == 4 and proc.stdout == ""
    proc = run_cli_process(git_env.project, "create", "--body-file", "-")
    assert proc.returncode == 2 and proc.stdout == "" and "title" in proc.stderr
    proc = run_cli_process(git_env.project, "edit", "1", "--add-label", "made-up")
    assert proc.returncode == 4 and "made-up" in proc.stderr
    proc = run_cli_process(git_env.project, "collaborators")
    assert proc.returncode == 4 and "collaborators" in proc.stderr and "release-trains.md" in proc.stderr
    proc = run_cli_process(git_env.project.parent / "nowhere", "list")
    assert proc.returncode == 3 and "project.md" in proc.stderr
    env = {"MAILTRIAGE_PROJECT": str(git_env.project)}
    proc = subprocess.run([sys.executable, "-m", "mailtriage.cli.tracker", "body", "1"], capture_output=True,
                          text=True, env={**os.environ, **env}, cwd=git_env.wc, timeout=60)
    assert proc.returncode == 0 and proc.stdout == "### CVE\n\nCVE-1\n"


def test_console_script_dispatches_tracker(git_env):
    exe = Path(sys.executable).with_name("mailtriage")
    if not exe.exists():
        pytest.skip("console script not installed in this environment")
    proc = subprocess.run([str(exe), "tracker", "--project", str(git_env.project), "labels"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and json.loads(proc.stdout) == []


def test_cli_mounts_under_a_parent_parser(git_env):
    import argparse
    import io

    from mailtriage.cli.tracker import register

    top = argparse.ArgumentParser(prog="mailtriage")
    sub = top.add_subparsers(dest="command")
    register(sub)
    args = top.parse_args(["tracker", "--project", str(git_env.project), "create", "--title", "Mounted",
                           "--body-file", "-"])
    assert args.command == "tracker" and args.tracker_command == "create"
    out, err = io.StringIO(), io.StringIO()
    code = args._tracker_main(args, stdin=io.BytesIO(b"body"), stdout=out, stderr=err)
    assert code == 0 and json.loads(out.getvalue())["id"] == "SEC-0001" and err.getvalue() == ""


# -- svn publish after an interrupted commit ---------------------------------------------------

def _commit_elsewhere(env, tmp_path: Path, name: str, data: bytes) -> None:
    """Commit ``security-tracker/<name>`` from a second checkout: the repository holds it at
    HEAD while the first working copy still has it scheduled for add (as after a killed commit)."""
    other = tmp_path / "other"
    sh(["svn", "checkout", "-q", "--non-interactive", env.remote.as_uri(), str(other)], tmp_path)
    (other / "security-tracker" / name).write_bytes(data)
    sh(["svn", "add", "-q", f"security-tracker/{name}"], other)
    sh(["svn", "commit", "-q", "--non-interactive", "-m", "elsewhere"], other)


def test_svn_publish_takes_over_an_add_the_repository_already_holds(svn_env, tmp_path):
    t = svn_env.tracker
    t.create("One", BODY, [])
    t.create("Two", BODY, [])
    one = tracker_dir(svn_env) / "SEC-0001.md"
    sh(["svn", "add", "-q", str(one)], svn_env.wc)  # scheduled for add, as the killed run left it
    _commit_elsewhere(svn_env, tmp_path, "SEC-0001.md", one.read_bytes())
    out = t.publish("import SEC-0002")
    assert out["committed"] is True and out["files"] == ["security-tracker/SEC-0002.md"]
    log = sh(["svn", "log", "-v", "--non-interactive", "-r", out["revision"], svn_env.remote.as_uri()], svn_env.wc)
    assert "SEC-0002.md" in log and "SEC-0001.md" not in log  # not committed twice
    assert sh(["svn", "status", "security-tracker"], svn_env.wc).strip() == ""
    assert t.pending()["needs_publish"] is False


def test_svn_publish_refuses_an_add_the_repository_holds_with_other_content(svn_env, tmp_path):
    t = svn_env.tracker
    t.create("One", BODY, [])
    one = tracker_dir(svn_env) / "SEC-0001.md"
    mine = one.read_bytes()
    _commit_elsewhere(svn_env, tmp_path, "SEC-0001.md", b"someone else's issue\n")
    sh(["svn", "add", "-q", str(one)], svn_env.wc)
    with pytest.raises(BackendError, match=r"security-tracker/SEC-0001\.md .*different content.*svn revert"):
        t.publish("import SEC-0001")
    assert one.read_bytes() == mine  # the local change is kept
    assert sh(["svn", "status", "security-tracker"], svn_env.wc).startswith("A")


def test_svn_publish_takes_over_an_added_folder_and_adds_what_the_repository_lacks(svn_env, tmp_path):
    t = svn_env.tracker
    t.create("One", BODY, [])
    t.publish("import SEC-0001")
    t.attach("1", b"patch\n", "fix.patch")
    t.attach("1", b"log\n", "crash.log")
    folder = tracker_dir(svn_env) / "SEC-0001.attachments"
    sh(["svn", "add", "-q", str(folder)], svn_env.wc)
    # the interrupted commit had the folder and one file in it; crash.log is only local
    other = tmp_path / "other"
    sh(["svn", "checkout", "-q", "--non-interactive", svn_env.remote.as_uri(), str(other)], tmp_path)
    (other / "security-tracker" / "SEC-0001.attachments").mkdir()
    (other / "security-tracker" / "SEC-0001.attachments" / "fix.patch").write_bytes(b"patch\n")
    sh(["svn", "add", "-q", "security-tracker/SEC-0001.attachments"], other)
    sh(["svn", "commit", "-q", "--non-interactive", "-m", "elsewhere"], other)
    out = t.publish("attach")
    assert out["committed"] is True
    # the issue file records the attachments; fix.patch is not committed a second time
    assert out["files"] == ["security-tracker/SEC-0001.attachments/crash.log", "security-tracker/SEC-0001.md"], out
    assert sh(["svn", "status", "security-tracker"], svn_env.wc).strip() == ""
    listing = sh(["svn", "ls", "-R", "--non-interactive", svn_env.remote.as_uri()], svn_env.wc)
    assert "SEC-0001.attachments/crash.log" in listing and "SEC-0001.attachments/fix.patch" in listing


def test_svn_publish_clears_the_lock_a_killed_svn_process_left(svn_env):
    import sqlite3

    t = svn_env.tracker
    t.create("One", BODY, [])
    # the row a killed svn process leaves in the working copy's own database ("svn status": L)
    db = sqlite3.connect(svn_env.wc / ".svn" / "wc.db")
    db.execute("INSERT INTO wc_lock (wc_id, local_dir_relpath, locked_levels) VALUES (1, 'security-tracker', -1)")
    db.commit()
    db.close()
    assert "L" in sh(["svn", "status", "security-tracker"], svn_env.wc)
    out = t.publish("import SEC-0001")
    assert out["committed"] is True and out["files"] == ["security-tracker/SEC-0001.md"]
    assert sh(["svn", "status", "security-tracker"], svn_env.wc).strip() == ""


def test_cli_publish_with_the_pending_review_commits_exactly_it_or_nothing(git_env, tmp_path):
    """`tracker pending` emits its review; `publish --review-file` commits exactly the reviewed
    paths, and when the tracker changed since (another writer's create) commits nothing, exit 4,
    naming what changed. Without --review-file the contract's publish is unchanged; its output
    names the files it committed."""
    t = git_env.tracker
    t.create("One", BODY, [])
    code, pending, err = git_env.cli("pending")
    assert code == 0, err
    assert [c["path"] for c in pending["changes"]] == ["security-tracker/SEC-0001.md"]
    assert set(pending["review"]) == {"security-tracker/SEC-0001.md"}
    review = tmp_path / "review.json"
    review.write_text(json.dumps(pending), encoding="utf-8")
    head = sh(["git", "rev-parse", "HEAD"], git_env.wc)
    t.create("Two", BODY, [])  # another terminal, after the review was shown

    code, out, err = git_env.cli("publish", "--message-file", "-", "--review-file", str(review), "--push",
                                 stdin="security: import SEC-0001\n")
    assert code == 4 and "changed since the review" in err and "new: security-tracker/SEC-0002.md" in err
    assert sh(["git", "rev-parse", "HEAD"], git_env.wc) == head  # nothing committed
    assert sh(["git", "diff", "--cached", "--name-only"], git_env.wc) == ""

    code, pending, err = git_env.cli("pending")  # reviewed again: both, published as reviewed
    review.write_text(json.dumps(pending), encoding="utf-8")
    code, out, err = git_env.cli("publish", "--message-file", "-", "--review-file", str(review), "--push",
                                 stdin="security: import SEC-0001, SEC-0002\n")
    assert code == 0, err
    assert sorted(out["files"]) == sorted(pending["review"]) == ["security-tracker/SEC-0001.md",
                                                                 "security-tracker/SEC-0002.md"]
    shown = sh(["git", "show", "--name-only", "--format=", "HEAD"], git_env.wc).split()
    assert sorted(shown) == sorted(pending["review"])


def test_init_without_prefix_takes_the_projects_prefix_else_sec(tmp_path):
    from tests.trackers.conftest import write_project

    env = make_git_env(tmp_path)
    descriptor = tracker_dir(env) / fmt.DESCRIPTOR_NAME
    descriptor.unlink()
    code, out, err = env.cli("init", "--access-restricted")
    assert code == 0 and out["prefix"] == "SEC", err  # the project names none
    descriptor.unlink()
    write_project(env.project, {"platform": "local-files", "local": {"path": "../security-tracker"},
                                "prefix": "FROB"})
    code, out, err = env.cli("init", "--access-restricted")
    assert code == 0 and out["prefix"] == "FROB", err


@pytest.mark.parametrize("env_name", ["git_env", "svn_env"])
def test_a_write_in_flight_in_another_process_is_neither_reviewed_nor_published(env_name, request):
    """Another process's import writes SEC-0002.md through a temp file beside it (temp_name's
    shape) and renames it. A pending review taken meanwhile must not list the temp file, else
    publish commits it: a file that is not an issue, which the rename then leaves behind as a
    deletion (a concurrency test caught a `.SEC-0002.md.<pid>.<hex>.tmp` commit once)."""
    env = request.getfixturevalue(env_name)
    t = env.tracker
    t.create("One", BODY, [])
    in_flight = tracker_dir(env) / temp_name("SEC-0002.md")
    in_flight.write_text("half an issue\n")
    pending = t.pending()
    listed = [c["path"] for c in pending["changes"]]
    assert "security-tracker/SEC-0001.md" in listed and not any(p.endswith(".tmp") for p in listed), listed
    t.publish("import SEC-0001")
    assert in_flight.exists(), "publish touched another process's file"
    if env_name == "git_env":
        shown = sh(["git", "show", "--name-only", "--format=", "HEAD"], env.wc).split()
    else:
        shown = sh(["svn", "ls", "-R", "--non-interactive", env.remote.as_uri()], env.wc).split()
    assert not any(name.endswith(".tmp") for name in shown), shown
