"""Publish commits exactly what the review showed (issue 30, item 3): a working copy that
changed between the review and the confirmation is refused and reviewed again."""

from __future__ import annotations

from mailtriage.core.projectconfig import load_project
from mailtriage.trackers.registry import open_tracker
from mailtriage.application.flows.publish import propose_publish
from tests.application.flows.conftest import sh


def _files(proposal) -> list[str]:
    return [line.split(": ", 1)[1] for w in proposal.writes for f in w.fields if f.label == "Files"
            for line in f.value.splitlines()]


def _committed_files(env) -> list[str]:
    out = env.git("--git-dir", str(env.remote), "show", "--name-only", "--format=", "main")
    return sorted(line for line in out.splitlines() if line.strip())


def test_a_file_created_after_the_review_is_refused_and_nothing_is_committed(env):
    tracker = env.tracker()
    first = tracker.create("Heap overflow", "x\n", [])["id"]
    second = tracker.create("XSS in admin", "y\n", [])["id"]
    proposal = propose_publish(env.tracker(), env.config())
    assert _files(proposal) == [f"security-tracker/{first}.md", f"security-tracker/{second}.md"]
    before = env.git("--git-dir", str(env.remote), "rev-parse", "main")

    # a second writer (`mailtriage tracker create` in another terminal) while the review waits
    third = env.tracker().create("Path traversal", "z\n", [])["id"]
    report = proposal.apply(confirmed=True)

    assert not report.ok
    assert "changed since the review" in report.failed[1] and f"{third}.md" in report.failed[1]
    assert env.git("--git-dir", str(env.remote), "rev-parse", "main") == before  # nothing pushed
    assert env.git("rev-parse", "HEAD") == before  # nothing committed
    assert env.git("diff", "--cached", "--name-only") == ""  # nothing left staged
    # reviewed again, it shows all three and publishes exactly those
    again = propose_publish(env.tracker(), env.config())
    assert len(_files(again)) == 3
    assert again.apply(confirmed=True).ok
    assert _committed_files(env) == sorted(f"security-tracker/{i}.md" for i in (first, second, third))


def test_a_reviewed_file_changed_after_the_review_is_refused(env):
    tracker = env.tracker()
    first = tracker.create("Heap overflow", "x\n", [])["id"]
    proposal = propose_publish(env.tracker(), env.config())
    env.tracker().comment(first, "added after the review")
    report = proposal.apply(confirmed=True)
    assert not report.ok and "changed since the review" in report.failed[1]
    assert f"modified: security-tracker/{first}.md" in report.failed[1]
    assert env.git("status", "--porcelain").strip() == f"?? security-tracker/{first}.md"


def test_a_reviewed_file_removed_after_the_review_is_refused(env):
    tracker = env.tracker()
    first = tracker.create("Heap overflow", "x\n", [])["id"]
    second = tracker.create("XSS", "y\n", [])["id"]
    proposal = propose_publish(env.tracker(), env.config())
    (env.tracker_root / f"{second}.md").unlink()
    report = proposal.apply(confirmed=True)
    assert not report.ok and "changed since the review" in report.failed[1]
    assert f"removed: security-tracker/{second}.md" in report.failed[1]
    assert first  # the first stays pending, uncommitted
    assert env.git("status", "--porcelain").strip() == f"?? security-tracker/{first}.md"


def test_svn_a_file_created_after_the_review_is_refused(tmp_path):
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
    first = open_tracker(config).create("Heap overflow", "x\n", [])["id"]
    second = open_tracker(config).create("XSS", "y\n", [])["id"]
    proposal = propose_publish(open_tracker(config), config)
    third = open_tracker(config).create("Path traversal", "z\n", [])["id"]

    report = proposal.apply(confirmed=True)
    assert not report.ok and "changed since the review" in report.failed[1] and f"{third}.md" in report.failed[1]
    log = sh(["svn", "log", "-q", "--non-interactive", repo.as_uri()], tmp_path)
    assert log.count("\nr") == 1  # only the start commit
    again = propose_publish(open_tracker(config), config)
    assert again.apply(confirmed=True).ok
    changed = sh(["svn", "log", "-v", "-l", "1", "--non-interactive", repo.as_uri()], tmp_path)
    assert all(f"/security-tracker/{i}.md" in changed for i in (first, second, third))


def _cli(env, *args: str) -> list[str]:
    import sys

    return [sys.executable, "-m", "mailtriage.cli.main", "--project", str(env.project), *args]


def _wait_for(stream_text, needle: str, count: int = 1, bound: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + bound
    while stream_text().count(needle) < count:
        assert time.monotonic() < deadline, f"never saw {needle!r} ({count}x) in:\n{stream_text()}"
        time.sleep(0.05)


def test_cli_publish_re_asks_with_the_new_review_when_a_file_appeared_while_it_waited(env):
    """`(sleep 12; echo y) | mailtriage publish &` then `mailtriage tracker create`: the
    review listed 2 files; the confirmation is refused and the new review (3 files) asked."""
    import json
    import subprocess
    import threading

    tracker = env.tracker()
    first = tracker.create("Heap overflow", "x\n", [])["id"]
    second = tracker.create("XSS in admin", "y\n", [])["id"]
    proc = subprocess.Popen(_cli(env, "publish"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    err: list[str] = []
    # the prompt ends without a newline: read what arrives, not lines
    reader = threading.Thread(target=lambda: err.extend(iter(lambda: proc.stderr.read(1), "")), daemon=True)
    reader.start()
    try:
        _wait_for(lambda: "".join(err), "Write this? [y/N]")
        assert "publish 2 changed files" in "".join(err)
        created = subprocess.run([*_cli(env, "tracker", "create", "--title", "Path traversal", "--body-file", "-")],
                                 input="z\n", capture_output=True, text=True)
        assert created.returncode == 0, created.stderr
        third = json.loads(created.stdout)["id"]
        proc.stdin.write("y\n")
        proc.stdin.flush()
        _wait_for(lambda: "".join(err), "Write this? [y/N]", count=2)
        text = "".join(err)
        assert "changed since the review" in text and f"new: security-tracker/{third}.md" in text
        assert "publish 3 changed files" in text
        assert env.git("rev-parse", "HEAD") == env.git("--git-dir", str(env.remote), "rev-parse", "main")
        proc.stdin.write("y\n")
        proc.stdin.close()
        out = proc.stdout.read()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, "".join(err)
    assert json.loads(out)["report"]["ok"] is True
    assert _committed_files(env) == sorted(f"security-tracker/{i}.md" for i in (first, second, third))



TORN_WRITER = r"""
import resource, signal, sys
from mailtriage.core.projectconfig import load_project
from mailtriage.trackers.registry import open_tracker
from mailtriage.trackers.errors import TrackerError

# the disk fills up part-way through the issue file: a write past 64 KiB fails (EFBIG)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
tracker = open_tracker(load_project(sys.argv[1]))
try:
    tracker.create("Huge report", "### Details\n\n" + "x" * 200_000 + "\n", [])
except (OSError, TrackerError) as exc:
    print("failed:", exc)
    sys.exit(3)
"""


def test_a_create_that_fails_part_way_leaves_no_torn_issue_for_publish(env):
    """Issue 30, item 7: a create is written to a temporary file, fsynced, then renamed into
    place; a write that fails part-way leaves nothing that a publish would later offer."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", TORN_WRITER, str(env.project)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert list(env.tracker_root.glob("SEC-*.md")) == []
    assert [p.name for p in env.tracker_root.iterdir() if p.name.endswith(".tmp")] == []
    assert propose_publish(env.tracker(), env.config()).empty


def test_import_publish_that_is_refused_exits_non_zero(mbox_env, capsys, monkeypatch):
    """The import is written, its publish is not: the run says so with exit 4, not 0."""
    import io
    import json
    import sys

    from mailtriage.cli.main import main
    from tests.application.flows.conftest import REPORT

    hook = mbox_env.wc / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'secret scan: refused' >&2\nexit 1\n")
    hook.chmod(0o755)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code = main(["--project", str(mbox_env.project), "import", f"mbox:{REPORT}", "--yes", "--publish"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["written"] is True and doc["publish"]["published"] is False
    assert "secret scan: refused" in err
    assert code == 4


def test_a_review_published_meanwhile_by_another_run_as_reviewed_is_not_an_error(env):
    """Another run committed the very content this review showed: what was confirmed is what
    is in the repository, so the publish has nothing left to commit and says so, no refusal."""
    first = env.tracker().create("Heap overflow", "x\n", [])["id"]
    proposal = propose_publish(env.tracker(), env.config())
    assert propose_publish(env.tracker(), env.config()).apply(confirmed=True).ok  # the other run
    head = env.git("rev-parse", "HEAD")
    report = proposal.apply(confirmed=True)
    assert report.ok, report.describe()
    assert report.written[0][1]["committed"] is False
    assert env.git("rev-parse", "HEAD") == head
    assert _committed_files(env) == [f"security-tracker/{first}.md"]


def test_a_commit_made_after_the_review_is_not_pushed_with_it(env):
    """The review lists the unpushed commits the push would carry; one made after it (in
    another terminal) is not pushed unseen: the publish is refused and reviewed again."""
    first = env.tracker().create("Heap overflow", "x\n", [])["id"]
    proposal = propose_publish(env.tracker(), env.config())
    second = env.tracker().create("XSS", "y\n", [])["id"]  # another terminal: create, commit by hand
    env.git("add", f"security-tracker/{second}.md")
    env.git("commit", "-q", "-m", "local work, not reviewed")
    before = env.git("--git-dir", str(env.remote), "rev-parse", "main")
    report = proposal.apply(confirmed=True)
    assert not report.ok and "changed since the review" in report.failed[1] and "new: commit" in report.failed[1]
    assert env.git("--git-dir", str(env.remote), "rev-parse", "main") == before
    assert env.git("status", "--porcelain").strip() == f"?? security-tracker/{first}.md"
