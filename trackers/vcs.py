"""Git and Subversion working copies, as far as a local-files tracker needs them.

Every command runs without a terminal prompt (``GIT_TERMINAL_PROMPT=0``,
``svn --non-interactive``) and with paths passed as separate argv elements after ``--``,
so no file name is read as an option. Failures raise BackendError with the command and
its stderr.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from mailtriage.core.lazy_re import lazy
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.trackers.contract import BackendError
from mailtriage.trackers.values import PendingChange, UnpushedCommit

# GIT_LITERAL_PATHSPECS: a tracker root named with *, ? or [ is a path, never a pattern
# that also matches its neighbours (git-scm.com/docs/git#Documentation/git.txt-codeGITLITERALPATHSPECScode)
# GIT_OPTIONAL_LOCKS=0: a read (status) never takes index.lock to refresh the index, so a
# review in one process cannot make another process's commit fail on a held lock
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": "", "LC_ALL": "C",
            "GIT_LITERAL_PATHSPECS": "1", "GIT_OPTIONAL_LOCKS": "0"}


@frozen_dataclass
class WorkingCopy:
    kind: str  # "git" | "svn"
    root: Path  # top of the working copy
    meta_dir: Path  # .git directory (resolved for worktrees) or .svn

    def rel(self, path: Path) -> str:
        """``path`` relative to the working copy root, with forward slashes."""
        return path.resolve().relative_to(self.root).as_posix()


def find_working_copy(start: Path) -> WorkingCopy | None:
    """The git or svn working copy that contains ``start`` (the nearest one upwards)."""
    path = start.resolve()
    for folder in [path, *path.parents]:
        git = folder / ".git"
        if git.is_dir():
            return WorkingCopy("git", folder, git)
        if git.is_file():
            text = git.read_text(encoding="utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                meta = Path(text.split(":", 1)[1].strip())
                return WorkingCopy("git", folder, meta if meta.is_absolute() else (folder / meta).resolve())
        if (folder / ".svn").is_dir():
            return WorkingCopy("svn", folder, folder / ".svn")
    return None


def run(args: list[str], cwd: Path, *, input: str | None = None, check: bool = True,
        timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    extra = env
    env = dict(os.environ)
    env.update(_GIT_ENV)
    env.update(extra or {})
    try:
        proc = subprocess.run(args, cwd=str(cwd), input=input, capture_output=True, text=True,
                              env=env, timeout=timeout)
    except FileNotFoundError as exc:
        raise BackendError(f"{args[0]} is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise BackendError(f"{' '.join(args[:3])} did not finish in {timeout:.0f}s") from exc
    if check and proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise BackendError(f"{' '.join(args[:2])} failed (exit {proc.returncode}): "
                           f"{' / '.join(detail[-3:]) or 'no output'}")
    return proc


# -- git -----------------------------------------------------------------------------

_GIT_STATUS = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "C": "copied",
               "T": "modified", "U": "conflict", "?": "untracked"}


def git_changes(wc: WorkingCopy, rel: str) -> list[dict]:
    out = run(["git", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", rel], wc.root).stdout
    items = out.split("\0")
    changes = []
    i = 0
    while i < len(items):
        item = items[i]
        i += 1
        if len(item) < 4:
            continue
        xy, path = item[:2], item[3:]
        if "R" in xy or "C" in xy:
            i += 1  # the rename source follows
        code = next((c for c in xy if c not in " "), "?")
        changes.append({"path": path, "status": _GIT_STATUS.get(code, "modified")})
    return changes


def git_index_path(wc: WorkingCopy) -> Path:
    out = run(["git", "rev-parse", "--git-path", "index"], wc.root).stdout.strip()
    path = Path(out)
    return path if path.is_absolute() else wc.root / path


def git_cached_changes(wc: WorkingCopy, rel: str, env: dict[str, str] | None = None) -> list[PendingChange]:
    """Index against HEAD under ``rel``: what a commit of that index would change (no rename pairing)."""
    out = run(["git", "diff", "--cached", "--no-renames", "--name-status", "-z", "--", rel], wc.root,
              env=env).stdout
    items = [x for x in out.split("\0")]
    changes: list[PendingChange] = []
    for i in range(0, len(items) - 1, 2):
        code, path = items[i], items[i + 1]
        if code and path:
            changes.append({"path": path, "status": _GIT_STATUS.get(code[0], "modified")})
    return changes


def git_publish_changes(wc: WorkingCopy, rel: str) -> list[PendingChange]:
    """Exactly what ``publish`` commits under ``rel``: ``git add -A`` into a copy of the index,
    then that index against HEAD. The real index is not touched."""
    index = git_index_path(wc)
    with tempfile.TemporaryDirectory(prefix="mailtriage-index-") as tmp:
        tmp_index = Path(tmp) / "index"
        if index.exists():
            shutil.copyfile(index, tmp_index)
        env = {"GIT_INDEX_FILE": str(tmp_index)}
        for attempt in range(3):
            added = run(["git", "add", "-A", "--", rel], wc.root, env=env, check=False)
            # another process's whole-file write in flight was renamed away between git's
            # listing and its stat of it: list again (the rename has landed by then)
            if added.returncode == 0 or "unable to stat" not in added.stderr or attempt == 2:
                break
        if added.returncode != 0:
            raise BackendError(f"git add failed (exit {added.returncode}): {added.stderr.strip()}")
        changes = git_cached_changes(wc, rel, env)
    # keep git status's word for a file publish will add that is not in the index yet
    indexed = set(run(["git", "ls-files", "--cached", "-z", "--", rel], wc.root).stdout.split("\0"))
    for change in changes:
        if change["status"] == "added" and change["path"] not in indexed:
            change["status"] = "untracked"
    return changes


def git_remotes(wc: WorkingCopy) -> dict[str, str]:
    out = run(["git", "remote", "-v"], wc.root).stdout
    remotes: dict[str, str] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            remotes.setdefault(parts[0], parts[1])
    return remotes


def git_has_head(wc: WorkingCopy) -> bool:
    return run(["git", "rev-parse", "--verify", "-q", "HEAD"], wc.root, check=False).returncode == 0


def git_unpushed(wc: WorkingCopy) -> list[UnpushedCommit]:
    """Commits on HEAD that no remote-tracking branch has (empty without remotes or commits)."""
    if not git_has_head(wc) or not git_remotes(wc):
        return []
    out = run(["git", "log", "--format=%H%x09%s", "HEAD", "--not", "--remotes"], wc.root).stdout
    return [{"revision": line.split("\t", 1)[0], "subject": line.split("\t", 1)[-1]}
            for line in out.splitlines() if line.strip()]


def git_paths_of_unpushed(wc: WorkingCopy) -> set[str]:
    if not git_has_head(wc) or not git_remotes(wc):
        return set()
    out = run(["git", "log", "--format=", "--name-only", "HEAD", "--not", "--remotes"], wc.root).stdout
    return {line for line in out.splitlines() if line.strip()}


def git_upstream(wc: WorkingCopy) -> tuple[str, str] | None:
    """(remote, branch) of the current branch's upstream, or None."""
    proc = run(["git", "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}"], wc.root, check=False)
    if proc.returncode != 0:
        return None
    remote, _, branch = proc.stdout.strip().partition("/")
    return remote, branch


def git_identity(wc: WorkingCopy) -> tuple[str | None, str]:
    """Who a commit in this working copy is made by, as git resolves it there (environment,
    repository, user and system config): ``("Name <email>", "")``, or ``(None, why)`` when
    git cannot tell (a commit would then fail)."""
    proc = run(["git", "var", "GIT_COMMITTER_IDENT"], wc.root, check=False)
    if proc.returncode != 0:
        lines = [line.strip() for line in (proc.stderr or proc.stdout).splitlines() if line.strip()]
        return None, lines[-1] if lines else "git cannot tell who commits"
    # "Name <email> 1767225600 +0000": the identity without the time stamp
    return proc.stdout.strip().rsplit(" ", 2)[0], ""


def git_user(wc: WorkingCopy) -> str | None:
    proc = run(["git", "config", "user.name"], wc.root, check=False)
    name = proc.stdout.strip()
    return name or None


# -- svn -----------------------------------------------------------------------------

_SVN_STATUS = {"A": "added", "M": "modified", "D": "deleted", "R": "replaced", "C": "conflict",
               "?": "untracked", "!": "missing", "~": "obstructed"}


def svn_status(wc: WorkingCopy, rel: str) -> list[tuple[str, str]]:
    """(status code, path relative to the working copy root) of each changed item under ``rel``."""
    out = run(["svn", "status", "--non-interactive", "--", rel], wc.root).stdout
    entries = []
    for line in out.splitlines():
        if len(line) < 9 or line.startswith(("Performing", "      >")):
            continue
        code = line[0]
        path = line[8:].strip()
        if code in _SVN_STATUS:
            entries.append((code, path.replace(os.sep, "/")))
    return entries


def svn_changes(wc: WorkingCopy, rel: str, expand_new: bool = False) -> list[PendingChange]:
    """Changed items under ``rel``. With ``expand_new``, an unversioned folder also lists what
    is inside it, as ``svn add --parents`` (what publish runs) will add and commit it."""
    changes: list[PendingChange] = []
    for code, path in svn_status(wc, rel):
        changes.append({"path": path, "status": _SVN_STATUS[code]})
        full = wc.root / path
        if expand_new and code == "?" and full.is_dir() and not full.is_symlink():
            for folder, dirs, files in os.walk(full):
                dirs.sort()
                for name in sorted(dirs) + sorted(files):
                    inner = (Path(folder) / name).relative_to(wc.root).as_posix()
                    changes.append({"path": inner, "status": "untracked"})
            changes.sort(key=lambda c: c["path"])
    return changes


def svn_repos_root(wc: WorkingCopy) -> str | None:
    proc = run(["svn", "info", "--non-interactive", "--show-item", "repos-root-url", "."], wc.root, check=False)
    return proc.stdout.strip() or None


def svn_locked(wc: WorkingCopy, rel: str) -> bool:
    """True when ``svn status`` shows a working copy lock (column 3 ``L``) under ``rel``: what
    an svn process killed mid-operation leaves behind."""
    out = run(["svn", "status", "--non-interactive", "--", rel], wc.root).stdout
    return any(len(line) > 2 and line[2] == "L" for line in out.splitlines())


def _svn_head_kind(wc: WorkingCopy, path: str) -> tuple[str, str | None]:
    """(URL of ``path``, what the repository holds there at HEAD: ``file``, ``dir`` or None)."""
    url = run(["svn", "info", "--non-interactive", "--show-item", "url", "--", path + "@"], wc.root).stdout.strip()
    proc = run(["svn", "info", "--non-interactive", "--show-item", "kind", "--", url + "@HEAD"], wc.root, check=False)
    if proc.returncode != 0:
        if "W170000" in proc.stderr or "E200009" in proc.stderr:  # non-existent in HEAD
            return url, None
        raise BackendError(f"svn info failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
    return url, proc.stdout.strip() or None


def _svn_head_digest(wc: WorkingCopy, url: str, path: str) -> str:
    proc = subprocess.run(["svn", "cat", "--non-interactive", "--", url + "@HEAD"], cwd=str(wc.root),
                          capture_output=True, env=dict(os.environ, **_GIT_ENV), timeout=120)
    if proc.returncode != 0:
        raise BackendError(f"svn cat failed (exit {proc.returncode}) for {path}")
    return hashlib.sha256(proc.stdout).hexdigest()


def svn_settle_published(wc: WorkingCopy, changes: list[PendingChange]) -> list[str]:
    """Items scheduled for add that the repository already holds at HEAD, files with the same
    bytes (a commit finished by an svn process whose caller was killed before the working
    copy learnt of it): unschedule them and take them over from HEAD (``svn update
    --force``), so the working copy converges without committing them twice. An added file
    the repository lacks stays on disk and shows as unversioned again. Returns the paths
    taken over (topmost only).

    Raises BackendError naming the path, before changing anything, when the repository
    holds other content (or another kind of item) at an added path: a local change is
    never discarded."""
    held: list[str] = []
    for change in sorted(changes, key=lambda c: c["path"]):
        path = change["path"]
        full = wc.root / path
        if change["status"] != "added" or full.is_symlink():
            continue
        url, kind = _svn_head_kind(wc, path)
        if kind is None:
            continue
        mine = "dir" if full.is_dir() else "file"
        if kind != mine or (mine == "file" and _svn_head_digest(wc, url, path) != content_digest(full)):
            raise BackendError(f"{path} is scheduled for add but the repository already holds different content "
                               "there (committed by someone else, or by an interrupted publish); nothing was "
                               "committed: keep a copy of it, run 'svn revert' and 'svn update' on it, "
                               "then redo your change")
        held.append(path)
    top = [p for p in held if not any(p.startswith(q + "/") for q in held)]
    for path in top:
        # revert unschedules the add and keeps the files; update --force takes them over as versioned
        run(["svn", "revert", "--non-interactive", "--depth", "infinity", "--", path + "@"], wc.root)
        run(["svn", "update", "--non-interactive", "--force", "--parents", "--", path + "@"], wc.root)
    return top


_COMMITTED = lazy(r"Committed revision (\d+)\.")


def svn_commit_revision(output: str) -> str | None:
    m = _COMMITTED.search(output)
    return m.group(1) if m else None


# -- what a publish review saw -------------------------------------------------------

def content_digest(path: Path) -> str:
    """sha256 of a file's bytes; ``dir`` for a folder, ``-`` for nothing there."""
    if path.is_symlink():
        return "link:" + os.readlink(path)
    if path.is_dir():
        return "dir"
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except FileNotFoundError:
        return "-"


_COMMIT_KEY = "commit "  # a snapshot key naming an unpushed commit, not a path


def snapshot(wc: WorkingCopy, changes: list[PendingChange], unpushed: Sequence[UnpushedCommit] = ()) -> dict[str, str]:
    """``{path: "status sha256"}`` of the pending changes, plus ``{"commit <sha>": "unpushed"}``
    for each commit a push would carry: what a review shows, so a later state can be
    compared with it entry by entry."""
    state = {c["path"]: f"{c['status']} {content_digest(wc.root / c['path'])}" for c in changes}
    state.update({_COMMIT_KEY + c["revision"]: "unpushed" for c in unpushed})
    return state


def snapshot_differences(wc: WorkingCopy, reviewed: dict[str, str], now: dict[str, str]) -> list[str]:
    """``new: p`` / ``removed: p`` / ``modified: p`` for each path whose state differs.

    A reviewed path no longer pending whose file still holds the reviewed content was
    committed as reviewed (by another run): not a difference, and nothing left to commit."""
    def committed_as_reviewed(p: str) -> bool:
        # a reviewed commit pushed meanwhile leaves nothing unseen to push either
        return p.startswith(_COMMIT_KEY) or reviewed[p].split(" ", 1)[1] == content_digest(wc.root / p)

    out = [f"new: {p}" for p in sorted(set(now) - set(reviewed))]
    out += [f"removed: {p}" for p in sorted(set(reviewed) - set(now)) if not committed_as_reviewed(p)]
    out += [f"modified: {p}" for p in sorted(set(now) & set(reviewed)) if now[p] != reviewed[p]]
    return out


def fingerprint(state: dict[str, str]) -> str:
    text = "".join(f"{p}\0{state[p]}\n" for p in sorted(state))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def pathspec_input(paths: list[str]) -> str:
    """stdin of ``--pathspec-from-file=- --pathspec-file-nul``: any number of paths, any name."""
    return "".join(p + "\0" for p in paths)
