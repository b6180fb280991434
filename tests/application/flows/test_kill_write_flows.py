"""Crash suite (issue 38): real ``mailtriage`` CLI processes SIGKILLed at varied points of the
write flows, each followed by a rerun of the same command that must converge: one issue, one
Import entry, one receipt draft, one publish commit, no torn or temporary file left.

Kill points are events the child leaves on disk, polled (no sleeps, no test hook in product
code): a temporary file beside a tracker file, the issue file, git's ``index.lock``, a new
entry in the working copy's reflog, or the Nth line of the child's ``--trace`` file."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.application.flows.conftest import REPORT
from tests.application.flows.test_concurrent_drafts import drafts, imap_env  # noqa: F401  (the fixture)
from tests.application.flows.test_concurrent_imports import child_keyring, git_commits, import_entries, issue_files, svn_mbox_env  # noqa: F401

BOUND = 120.0  # seconds a child may take on a loaded machine


def start(project: Path, argv: list[str], extra_env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mailtriage.cli.main", "--project", str(project), *argv],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **(extra_env or {})))


def run_killed(project: Path, argv: list[str], when, extra_env: dict | None = None, armed=None) -> bool:
    """Run the command and SIGKILL it as soon as ``when()`` holds; True when it was killed,
    False when it ended first (then its exit must have been a success).

    ``when()`` is checked without a pause (a temporary file lives for a moment) once
    ``armed(proc)`` held (once: it is an event that comes before every kill point, e.g. the
    child's first git command), and every millisecond before: a child spends most of its run
    starting (imports, the project opened), and a loop that spins beside it takes a core from
    it on a loaded machine. No ``armed``: no pause at all."""
    proc = start(project, argv, extra_env)
    deadline = time.monotonic() + BOUND
    ready = armed is None
    try:
        while proc.poll() is None:
            if when():
                proc.send_signal(signal.SIGKILL)
                proc.wait(60)
                return True
            if time.monotonic() > deadline:
                raise AssertionError(f"{argv} did not end within {BOUND:g} s")
            if not ready:
                ready = armed(proc)
                if not ready:
                    time.sleep(0.001)
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        return False
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=60)


def rerun(project: Path, argv: list[str], extra_env: dict | None = None) -> dict:
    proc = start(project, argv, extra_env)
    out, err = proc.communicate(timeout=BOUND)
    assert proc.returncode == 0, err
    return json.loads(out) if out.strip() else {}


def file_started(path: Path):
    """Armed (see ``run_killed``) once ``path`` exists: the file git's GIT_TRACE writes, a line
    per git command, the first before our child writes a tracker file."""
    return lambda _proc: path.exists()


def trace_started(path: Path):
    """Armed once the child's ``--trace`` file has its first line (the connection to the server)."""
    return lambda _proc: path.exists() and path.stat().st_size > 0


def child_started_a_process(proc: subprocess.Popen) -> bool:
    """Armed once the child runs a program of its own (svn: the commit is one)."""
    try:
        return bool(Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split())
    except OSError:  # ended meanwhile, or no /proc
        return True


def temp_files(root: Path) -> list[str]:
    """Temporary files our writers leave only when killed (``.name.xxxx.tmp`` beside the file)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.tmp"))


def trace_lines(path: Path, needle: str, count: int = 1):
    """A kill point: ``count`` lines holding ``needle`` are in the child's trace file."""
    def reached() -> bool:
        try:
            return path.read_text(encoding="utf-8", errors="replace").count(needle) >= count
        except FileNotFoundError:
            return False
    return reached


def reflog_grew(wc: Path):
    """A kill point: the working copy made a commit (its HEAD reflog got a line), not pushed yet."""
    log = wc / ".git" / "logs" / "HEAD"
    start_lines = log.read_bytes().count(b"\n")
    return lambda: log.read_bytes().count(b"\n") > start_lines


def git_import_kill_points(env, git_trace: Path):
    """Kill points of a git publish. ``git_trace`` is the file git's own GIT_TRACE writes (an
    environment variable of git, not of ours): a line per git command our child starts."""
    root, wc = env.tracker_root, env.wc
    return {
        "temp file beside a tracker file": lambda: root.is_dir() and any(n.endswith(".tmp") for n in os.listdir(root)),
        "issue file written": lambda: (root / "SEC-0001.md").exists(),
        "git commit started": trace_lines(git_trace, "built-in: git commit"),
        "commit made, not pushed": reflog_grew(wc),
        "git push started": trace_lines(git_trace, "built-in: git push"),
    }


@pytest.mark.parametrize("point", ["temp file beside a tracker file", "issue file written", "git commit started",
                                   "commit made, not pushed", "git push started"])
def test_import_publish_git_killed_then_rerun_converges(mbox_env, tmp_path, point):
    argv = ["import", f"mbox:{REPORT}", "--yes", "--publish"]
    start_commit = mbox_env.git("rev-parse", "HEAD").strip()
    for attempt in range(5):  # the kill waits for the event, not for a time: a fast run can pass it
        git_trace = tmp_path / f"git-trace-{attempt}.log"
        killed = run_killed(mbox_env.project, argv, git_import_kill_points(mbox_env, git_trace)[point],
                            {"GIT_TRACE": str(git_trace)}, armed=file_started(git_trace))
        if killed:
            break
        # The run completed: the tracker back to the start (project/ keeps the test's set-up), try again.
        mbox_env.git("reset", "-q", start_commit)
        mbox_env.git("checkout", "-q", start_commit, "--", "security-tracker")
        mbox_env.git("clean", "-q", "-fd", "--", "security-tracker")
        mbox_env.git("push", "-q", "-f", "origin", "HEAD:main")
    (mbox_env.wc / ".git" / "index.lock").unlink(missing_ok=True)  # git's own lock: a user removes it too
    doc = rerun(mbox_env.project, argv)
    root = mbox_env.tracker_root
    assert issue_files(root) == ["SEC-0001.md"], (killed, doc)
    assert import_entries(root, "SEC-0001.md") == 1
    assert temp_files(root) == []
    if not git_commits(mbox_env):
        # Killed after its files were whole: the rerun's import writes nothing, so it publishes
        # nothing of its own, and names the pending change and the command that publishes it.
        assert "other pending changes: 'mailtriage publish'" in json.dumps(doc), doc
        rerun(mbox_env.project, ["publish", "--yes"])
    commits = git_commits(mbox_env)
    assert len(commits) == 1 and "SEC-0001" in commits[0][0], (commits, doc)  # published exactly once
    assert mbox_env.git("status", "--porcelain", "--", "security-tracker") == ""  # all of it committed
    assert killed, f"never reached the kill point {point!r}: the run ended first"


# -- IMAP: the receipt draft (import) and a reply draft (create-draft) -----------------------

@pytest.mark.parametrize("needle,count", [(" APPEND ", 1), ("APPENDUID", 1), ("LOGOUT", 1)],
                         ids=["APPEND sent", "APPEND answered", "at LOGOUT"])
def test_imap_import_killed_then_rerun_leaves_one_issue_and_one_receipt(imap_env, tmp_path, needle, count):
    trace = tmp_path / "trace.log"
    argv = ["--trace", str(trace), "import", f"imap:{REPORT}", "--yes"]
    killed = run_killed(imap_env.project, argv, trace_lines(trace, needle, count), imap_env.child_env,
                        armed=trace_started(trace))
    rerun(imap_env.project, ["import", f"imap:{REPORT}", "--yes"], imap_env.child_env)
    root = imap_env.tracker_root
    assert issue_files(root) == ["SEC-0001.md"]
    assert import_entries(root, "SEC-0001.md") == 1
    assert temp_files(root) == []
    found = drafts(imap_env)
    assert len(found) == 1, found  # one receipt: neither lost nor doubled
    assert killed, f"never reached {needle!r} in the trace: the run ended first"


@pytest.mark.parametrize("needle", [" APPEND ", "APPENDUID"], ids=["APPEND sent", "APPEND answered"])
def test_create_draft_killed_then_rerun_leaves_one_draft(imap_env, tmp_path, needle):
    body = tmp_path / "reply.txt"
    body.write_text("Thanks, we reproduced it.\n", encoding="utf-8")
    trace = tmp_path / "trace.log"
    argv = ["mail", "create-draft", f"imap:{REPORT}", "--body-file", str(body), "--yes"]
    killed = run_killed(imap_env.project, ["--trace", str(trace), *argv], trace_lines(trace, needle),
                        imap_env.child_env, armed=trace_started(trace))
    proc = start(imap_env.project, argv, imap_env.child_env)
    out, err = proc.communicate(timeout=BOUND)
    found = drafts(imap_env)
    assert len(found) == 1, (found, err)
    # The rerun either wrote the draft the kill prevented or found its own draft written (issue 39).
    assert proc.returncode == 0, err
    assert killed, f"never reached {needle!r} in the trace: the run ended first"


def test_create_draft_rerun_reports_its_own_draft_as_written(imap_env, tmp_path):
    # Issue 39: a rerun (after a crash that came after the APPEND) found the draft it had
    # written, with the Message-ID it derives for this request, and exited 3 about it.
    body = tmp_path / "reply.txt"
    body.write_text("Thanks, we reproduced it.\n", encoding="utf-8")
    argv = ["mail", "create-draft", f"imap:{REPORT}", "--body-file", str(body), "--yes"]
    first = start(imap_env.project, argv, imap_env.child_env)
    _out, err = first.communicate(timeout=BOUND)
    assert first.returncode == 0, err
    again = start(imap_env.project, argv, imap_env.child_env)
    out, err = again.communicate(timeout=BOUND)
    assert again.returncode == 0, err
    assert "already written" in err, err
    assert json.loads(out)["written"] is True
    assert len(drafts(imap_env)) == 1
    # Another text is another draft: still refused while this one is pending.
    body.write_text("Another text.\n", encoding="utf-8")
    other = start(imap_env.project, argv, imap_env.child_env)
    _out, err = other.communicate(timeout=BOUND)
    assert other.returncode == 3 and "already pending" in err, err


# -- publish --yes: git and svn ---------------------------------------------------------------

def held_in_hook(repo: Path, hook_name: str):
    """A kill point held by one of the repository's hooks until the test releases it
    (``release_hook``): ``pre-commit`` runs while the commit's transaction is open (sent, not
    committed), ``post-commit`` once the revision is made and before the client is told.

    Each lived for a moment only: a clean clone at load 7 never saw the open transaction ("never
    reached the kill point 'transaction open'")."""
    hook = repo / "hooks" / hook_name
    hook.write_text(f"""#!/bin/sh
touch '{repo}/txn-held'
n=0
while [ ! -e '{repo}/txn-go' ] && [ $n -lt 12000 ]; do sleep 0.01; n=$((n+1)); done
rm -f '{repo}/txn-held'
exit 0
""", encoding="utf-8")
    hook.chmod(0o755)
    return lambda: (repo / "txn-held").exists()


def release_hook(repo: Path, hook_name: str) -> None:
    """Let the held commit go on: the killed run's svn child finishes it as it would have, and
    the hook is gone for the rerun. Waits for that event (the transaction ended), bounded."""
    (repo / "hooks" / hook_name).unlink()
    (repo / "txn-go").touch()
    deadline = time.monotonic() + BOUND
    while (repo / "txn-held").exists() or any((repo / "db" / "transactions").iterdir()):
        assert time.monotonic() < deadline, "the killed run's svn commit did not end"
        time.sleep(0.01)


@pytest.mark.parametrize("point", ["git commit started", "commit made, not pushed", "git push started"])
def test_publish_git_killed_then_rerun_publishes_once(mbox_env, tmp_path, point):
    rerun(mbox_env.project, ["import", f"mbox:{REPORT}", "--yes"])  # written, not published
    git_trace = tmp_path / "git-trace.log"
    killed = run_killed(mbox_env.project, ["publish", "--yes"], git_import_kill_points(mbox_env, git_trace)[point],
                        {"GIT_TRACE": str(git_trace)}, armed=file_started(git_trace))
    (mbox_env.wc / ".git" / "index.lock").unlink(missing_ok=True)  # git's own lock: a user removes it too
    doc = rerun(mbox_env.project, ["publish", "--yes"])
    if not git_commits(mbox_env):
        # Killed after its files were whole: the rerun's import writes nothing, so it publishes
        # nothing of its own, and names the pending change and the command that publishes it.
        assert "other pending changes: 'mailtriage publish'" in json.dumps(doc), doc
        rerun(mbox_env.project, ["publish", "--yes"])
    commits = git_commits(mbox_env)
    assert len(commits) == 1 and "SEC-0001" in commits[0][0], (commits, doc)
    assert mbox_env.git("status", "--porcelain", "--", "security-tracker") == ""
    assert import_entries(mbox_env.tracker_root, "SEC-0001.md") == 1
    assert killed, f"never reached the kill point {point!r}: the run ended first"


@pytest.mark.parametrize("point", ["transaction open", "revision committed"])
def test_publish_svn_killed_then_rerun_publishes_once(svn_mbox_env, point):
    from tests.application.flows.test_concurrent_imports import svn_commits

    env = svn_mbox_env
    rerun(env.project, ["import", f"mbox:{REPORT}", "--yes"])
    hook = "pre-commit" if point == "transaction open" else "post-commit"
    killed = run_killed(env.project, ["publish", "--yes"], held_in_hook(env.remote, hook),
                        armed=child_started_a_process)
    release_hook(env.remote, hook)
    proc = start(env.project, ["publish", "--yes"])
    out, err = proc.communicate(timeout=BOUND)
    # the rerun converges by itself: it clears svn's own lock and takes over what the killed
    # run's svn child committed, without committing it twice
    assert proc.returncode == 0, (out, err)
    commits = [c for c in svn_commits(env) if "SEC-0001" in c[0]]
    assert len(commits) == 1, (svn_commits(env), out, err)  # committed exactly once
    status = subprocess.run(["svn", "status", str(env.tracker_root)], capture_output=True, text=True).stdout
    assert status.strip() == "", (status, out, err)
    assert import_entries(env.tracker_root, "SEC-0001.md") == 1
    assert killed, f"never reached the kill point {point!r}: the run ended first"


# -- caches: the mbox index and the IMAP summary cache ------------------------------------------

def cache_kill_points(cache: Path):
    return {
        "cache temp file": lambda: cache.exists() and any(cache.rglob("*.tmp")),
        "cache file renamed in": lambda: cache.exists() and any(p.is_file() and not p.name.endswith(".tmp")
                                                                for p in cache.rglob("*")),
    }


def run_killed_from_a_cold_cache(project: Path, cache: Path, point: str, extra_env: dict | None = None) -> bool:
    """``run_killed`` of a listing at a cache kill point, started again from no cache when the
    run ended first. The temporary file lives for a moment: on a loaded machine the poller was
    not scheduled within it and the run ended unkilled (test_kill_write_flows, load 30: "never
    reached the kill point 'cache temp file'"). As the git kill tests do, the state is put back
    and the kill tried again; what is checked after the kill is checked once."""
    for _attempt in range(5):
        if run_killed(project, ["list", "--since", "3650d"], cache_kill_points(cache)[point], extra_env):
            return True
        shutil.rmtree(cache, ignore_errors=True)  # the completed run's cache: back to a cold start
    return False


def listing(project: Path, extra_env: dict | None = None) -> str:
    proc = start(project, ["list", "--since", "3650d"], extra_env)
    out, err = proc.communicate(timeout=BOUND)
    assert proc.returncode == 0, err
    return out


@pytest.mark.parametrize("point", ["cache temp file", "cache file renamed in"])
def test_mbox_index_write_killed_then_the_listing_rebuilds_or_reads_it_whole(env, cache, point):
    from tests.application.flows.conftest import mail, write_mbox

    messages = [mail(f"<bulk-{n}@reporter.example>", f"R{n} <r{n}@reporter.example>", f"Bug {n}", "x\n" * 50,
                     f"Tue, 01 Sep 2026 {n // 60 % 24:02d}:{n % 60:02d}:00 +0000") for n in range(400)]
    archive = write_mbox(env.project / "security.mbox", messages)
    env.write_project([("mbox", "primary", "yes")],
                      extra={"mail_sources.mbox": {"path": archive.name, "list": "security@frobnicator.example.org"}})
    killed = run_killed_from_a_cold_cache(env.project, cache, point)
    first = listing(env.project)  # after the kill: the index read whole, or rebuilt
    assert "Bug 399" in first and "Bug 0" in first
    assert listing(env.project) == first  # and what it left reads the same
    assert not list(cache.rglob("*.tmp")), list(cache.rglob("*"))
    assert killed, f"never reached the kill point {point!r}: the run ended first"


@pytest.mark.parametrize("point", ["cache temp file", "cache file renamed in"])
def test_imap_summary_cache_write_killed_then_the_listing_rebuilds_or_reads_it_whole(imap_env, cache, point):
    killed = run_killed_from_a_cold_cache(imap_env.project, cache, point, imap_env.child_env)
    first = listing(imap_env.project, imap_env.child_env)
    assert "Heap overflow" in first
    assert listing(imap_env.project, imap_env.child_env) == first
    assert not list(cache.rglob("*.tmp")), list(cache.rglob("*"))
    assert killed, f"never reached the kill point {point!r}: the run ended first"
