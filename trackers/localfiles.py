"""local-files: a tracker kept as Markdown files in a folder of a git or svn working copy.

The format is in ``localformat.py`` and docs/tracker-local-files.md. Guards:

* every write is refused (exit 4) until the committed format descriptor records
  ``access_restricted: true``;
* an ID is ``PREFIX-NNNN`` or a bare number; anything with a path separator, ``..``, an
  absolute path or a symlinked file is refused (exit 4): no ID can leave the tracker folder;
* writers take an exclusive ``flock`` on the tracker folder and replace files atomically
  (temporary file + ``os.replace``), so concurrent writers never lose an update;
* ``publish`` stages and commits the tracker root only, and refuses to push commits that
  touch files outside it.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import stat
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

from mailtriage.core.lazy_re import lazy
from mailtriage.core.private_files import is_temp_name, sweep_leftovers, temp_name
from mailtriage.trackers import localformat as fmt
from mailtriage.trackers import localindex, vcs
from mailtriage.trackers.errors import ReviewOutdated
from mailtriage.trackers.contract import (TrackerFeatures, 
    BackendError,
    EditRequest,
    ListResult,
    MalformedIssue,
    NotFound,
    Policy,
    Refused,
    Tracker,
    UsageError,
    comment_json,
    issue_json,
    order_comments,
    require_id,
    summary_json,
    utc_now_iso,
)
from mailtriage.trackers.values import (
    AttachResult,
    CommentResult,
    Created,
    DoctorCheck,
    DoctorReport,
    Existing,
    IssueView,
    Pending,
    PendingChange,
    PendingReview,
    PublishResult,
    SetupResult,
    StateResult,
    WriteResult,
)


class LocalFilesTracker(Tracker):
    kind = "local-files"
    features = TrackerFeatures(publishes_changes=True, bodies_as_stored=True, local_issue_files=True,
                               search_lags=False, set_up_locally=True, locked_find_or_create=True)

    def __init__(self, root: Path | str, policy: Policy | None = None, *, url_template: str | None = None,
                 user: str | None = None, github_api_url: str | None = None,
                 verified_remotes: Sequence[str] = ()) -> None:
        super().__init__(policy)
        # remotes the operator checked themselves (tracker.local.verified_remotes in project.md)
        self.verified_remotes = tuple(v.strip() for v in verified_remotes)
        self.root = Path(root).absolute()
        self.url_template = url_template or None
        self._user = user
        self.github_api_url = github_api_url
        self._descriptor: fmt.Descriptor | None = None
        self._wc: vcs.WorkingCopy | None | bool = False
        self._where: tuple[Path, Path, str | None] | None = None  # (real root, real working-copy base, root under it)
        self._fresh_meta: dict[str, tuple[str, dict]] = {}  # file name: (front matter text, parsed), for view
        self._written: list[str] = []  # paths this object wrote: what a flow's own publish may commit
        self._thread_lock = threading.RLock()
        self._lock_depth = 0
        self._lock_fd: int | None = None

    # ---- where things are ---------------------------------------------------------
    @property
    def descriptor_path(self) -> Path:
        return self.root / fmt.DESCRIPTOR_NAME

    def descriptor(self) -> fmt.Descriptor:
        """Raises NotFound (no tracker here), MalformedIssue (a broken descriptor)."""
        if self._descriptor is None:
            if not self.root.is_dir():
                raise NotFound(f"no local tracker folder at {self.root}")
            try:
                text = fmt.read_tracker_file(self.descriptor_path).decode("utf-8")
            except FileNotFoundError as exc:
                raise NotFound(f"{self.root} has no {fmt.DESCRIPTOR_NAME}; run `mailtriage tracker init` "
                               "or `mailtriage tracker detect --write`") from exc
            except OSError as exc:
                raise MalformedIssue(str(self.descriptor_path), exc.strerror or str(exc)) from exc
            self._descriptor = fmt.parse_descriptor(text, str(self.descriptor_path))
        return self._descriptor

    def working_copy(self) -> vcs.WorkingCopy | None:
        if self._wc is False:
            self._wc = vcs.find_working_copy(self.root) if self.root.exists() else None
        return self._wc  # type: ignore[return-value]

    def _resolved(self) -> tuple[Path, Path, str | None]:
        """(the tracker folder with its links resolved, the working copy's folder resolved, the
        first relative to the second as text): resolved once per object, as the working copy is
        found once, not once per issue file (a sync reads 10,000; issue 39)."""
        if self._where is None:
            wc = self.working_copy()
            real_root = self.root.resolve()
            base = (wc.root if wc else self.root.parent).resolve()
            # None when the folder resolves outside the working copy: each path is then resolved
            # (and refused) on its own, as before
            under = real_root.relative_to(base).as_posix() if real_root.is_relative_to(base) else None
            self._where = (real_root, base, under)
        return self._where

    def _rel(self, path: Path) -> str:
        """``path`` relative to the working copy. An issue file (a plain name directly in the
        tracker folder, never a link: ``_path`` and the listing refuse those) is joined under the
        folder resolved once; anything else is resolved itself."""
        under = self._resolved()[2]
        if under is not None and path.parent == self.root and path.name not in ("", ".", ".."):
            return path.name if under == "." else f"{under}/{path.name}"
        return path.resolve().relative_to(self._resolved()[1]).as_posix()

    def _issue_url(self, issue_id: str, name: str) -> str:
        """The URL of the issue file ``name`` in the tracker folder (listed, or checked by ``_path``)."""
        under = self._resolved()[2]
        if under is None:
            return self.url_for(issue_id, self.root / name)
        return self._url(issue_id, name if under == "." else f"{under}/{name}")

    def url_for(self, issue_id: str, path: Path) -> str:
        return self._url(issue_id, self._rel(path))

    def _url(self, issue_id: str, rel: str) -> str:
        if self.url_template:
            return self.url_template.replace("{id}", issue_id).replace("{path}", rel)
        return rel

    def _issue_name_re(self) -> re.Pattern:
        d = self.descriptor()
        return re.compile(rf"^{re.escape(d.prefix)}-(\d+){re.escape(fmt.ISSUE_SUFFIX)}$")

    def canonical_id(self, issue_id: str) -> str:
        """``12``, ``SEC-12`` and ``SEC-0012`` all name ``SEC-0012``.

        Raises Refused for anything that could name a path (separators, ``..``, absolute
        paths, NUL), NotFound for an ID of another shape.
        """
        raw = require_id(issue_id)
        if "/" in raw or "\\" in raw or ".." in raw or "\x00" in raw or os.path.isabs(raw) \
                or raw.startswith("~"):
            raise Refused(f"issue ID {issue_id!r} refused: an ID is PREFIX-NNNN or a number, never a path")
        d = self.descriptor()
        if raw.endswith(fmt.ISSUE_SUFFIX):
            raw = raw[: -len(fmt.ISSUE_SUFFIX)]
        m = re.fullmatch(rf"(?:{re.escape(d.prefix)}-)?([0-9]{{1,12}})", raw, re.IGNORECASE | re.ASCII)
        if not m:
            raise NotFound(f"{issue_id!r} is not an issue of this tracker (IDs look like {d.format_id(12)} or 12)")
        return d.format_id(int(m.group(1)))

    def _path(self, canonical: str) -> Path:
        name = canonical + fmt.ISSUE_SUFFIX
        # The file must be a plain name directly in the tracker folder and not a link: then it
        # is in the folder whatever the folder resolves to, with no walk of the path (the
        # tracker's real folder is resolved once, for URLs). The name cannot carry a separator
        # (canonical_id), but this is checked here too, where the path is made.
        if os.sep in name or (os.altsep and os.altsep in name) or name in (".", "..") or "\x00" in name:
            raise Refused(f"{canonical}: resolves outside the tracker folder")
        path = self.root / name
        if path.is_symlink():
            raise Refused(f"{canonical}: the issue file is a symlink; refused so no ID can leave the tracker")
        return path

    def _read(self, issue_id: str, reuse: bool = False) -> tuple[str, Path, fmt.IssueFile]:
        """``reuse``: take the front matter the last listing parsed when the file's front
        matter is still that very text (a read, never a write's read)."""
        canonical = self.canonical_id(issue_id)
        path = self._path(canonical)
        try:
            data = fmt.read_tracker_file(path)  # never a link, a FIFO or an endless file
        except FileNotFoundError as exc:
            raise NotFound(f"no issue {canonical} in {self.root}") from exc
        except OSError as exc:
            raise BackendError(f"{canonical}: cannot read {path.name}: {exc.strerror}") from exc
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedIssue(path.name, f"not UTF-8 ({exc.reason} at byte {exc.start})") from exc
        known = self._fresh_meta.pop(path.name, None) if reuse else None
        issue = fmt.parse_issue(text, path.name, known)
        if issue.meta["id"] != canonical:
            raise MalformedIssue(path.name, f"front matter id is {issue.meta['id']!r}, the file name says {canonical}")
        return canonical, path, issue

    # ---- guards and locking ----------------------------------------------------------
    def require_access_restricted(self, committed: bool = True) -> None:
        """Refuse writes unless the descriptor records ``access_restricted: true``.

        With ``committed`` (every issue write) the descriptor must say so both on disk and as
        committed (git: HEAD, svn: BASE): an uncommitted edit of the file on disk unlocks nothing.
        ``publish`` checks the disk only, because publishing is how the descriptor gets committed.
        """
        d = self.descriptor()
        if not d.access_restricted:
            raise Refused(
                f"writes to {self.root} are refused: {fmt.DESCRIPTOR_NAME} does not record "
                "access_restricted: true. Confirm who can read this repository, then run "
                "`mailtriage tracker detect --write --access-restricted`.")
        if not committed:
            return
        wc = self.working_copy()
        if wc is None:
            return  # no working copy: nothing is ever committed, the file is all there is (doctor says so)
        text = self._committed_descriptor_text(wc)
        if text is None:
            raise Refused(f"writes to {self.root} are refused: {fmt.DESCRIPTOR_NAME} is not committed yet "
                          f"({'HEAD' if wc.kind == 'git' else 'BASE'} has none). Publish it first "
                          "(`mailtriage tracker publish`), after checking who can read this repository.")
        try:
            committed_d = fmt.parse_descriptor(text, f"{fmt.DESCRIPTOR_NAME} as committed")
        except MalformedIssue as exc:
            raise Refused(f"writes to {self.root} are refused: {exc}") from exc
        if not committed_d.access_restricted:
            raise Refused(f"writes to {self.root} are refused: the committed {fmt.DESCRIPTOR_NAME} does not "
                          "record access_restricted: true (only an uncommitted edit does). Publish the "
                          "descriptor after confirming who can read this repository.")

    def _committed_descriptor_text(self, wc: vcs.WorkingCopy) -> str | None:
        """The descriptor as committed: ``HEAD:<path>`` for git, ``BASE`` for svn; None when absent."""
        rel = wc.rel(self.descriptor_path)
        if wc.kind == "git":
            proc = vcs.run(["git", "cat-file", "blob", f"HEAD:{rel}"], wc.root, check=False)
        else:
            # the trailing @ ends the path so an @ inside it is never read as a peg revision
            proc = vcs.run(["svn", "cat", "--non-interactive", "-r", "BASE", "--", rel + "@"], wc.root, check=False)
        return proc.stdout if proc.returncode == 0 else None

    @contextmanager
    def locked(self) -> Iterator[None]:
        """An exclusive flock on the tracker folder: one writer (or publish review) at a time,
        across processes. Re-entrant within this object, so a find-or-create can hold it
        around the create."""
        with self._thread_lock:
            if self._lock_depth == 0:
                fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except BaseException:
                    os.close(fd)
                    raise
                self._lock_fd = fd
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
                if self._lock_depth == 0:
                    fd, self._lock_fd = self._lock_fd, None
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)

    @contextmanager
    def _locked(self, committed: bool = True) -> Iterator[None]:
        """The lock, for a write: the access guard is checked again once it is held."""
        self.require_access_restricted(committed=False)
        with self.locked():
            # the descriptor may have changed while this process waited
            self._descriptor = None
            self.require_access_restricted(committed=committed)
            yield

    def find_or_create(self, title: str, body: str, labels: Sequence[str],
                       find: Callable[[], str | None]) -> Existing | Created:
        """The issue ``find()`` names, else a new one: both under the tracker lock, so two
        processes importing one thread make one issue. {id, url} plus ``existing``."""
        with self._locked():
            found = find()
            if found:
                return {"id": found, "existing": True}
            made = self.create(title, body, labels)
            return {"id": made["id"], "url": made["url"], "existing": False}

    def _write_atomic(self, path: Path, data: bytes, *, exclusive: bool = False) -> None:
        """Write to a temporary file beside ``path``, fsync, then rename over it: a reader (or a
        publish) sees the old file or the whole new one, never a torn one. ``exclusive``: fail
        with FileExistsError instead of replacing an existing ``path`` (link, not rename).
        The temporary name carries our PID, so the next write of ``path`` removes what a writer
        killed mid-write left (one no longer running) instead of leaving it for a publish."""
        sweep_leftovers(path)
        tmp = str(path.parent / temp_name(path.name))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if exclusive:
                # a new issue file gets the mode a plain create would give it (0644 less umask)
                os.chmod(tmp, 0o644 & ~_umask())
                os.link(tmp, path)  # atomic and never overwrites
                os.unlink(tmp)
            else:
                os.chmod(tmp, _kept_mode(path))  # made 0600: the team reads these files too
                os.replace(tmp, path)
            _fsync_folder(path.parent)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        self._note_written(path)

    def _save(self, path: Path, issue: fmt.IssueFile, touch: bool = True) -> None:
        if touch:
            issue.meta["updated"] = utc_now_iso()
        self._write_atomic(path, fmt.render_issue(issue).encode("utf-8"))

    @contextmanager
    def _updating(self, issue_id: str) -> Iterator[tuple[str, Path, fmt.IssueFile]]:
        """Read, let the caller change, write back — all under the lock."""
        with self._locked():
            canonical, path, issue = self._read(issue_id)
            yield canonical, path, issue
            self._save(path, issue)

    # ---- reads --------------------------------------------------------------------------
    def _do_view(self, issue_id: str, comments: bool) -> IssueView:
        canonical, path, issue = self._read(issue_id, reuse=True)
        m = issue.meta
        out_comments = None
        url = self._issue_url(canonical, path.name)
        if comments:
            base = url
            out_comments = order_comments([
                comment_json(id=str(c.id), kind="rollup" if c.kind == "rollup" else "comment", author=c.author,
                             created=c.created, updated=c.updated, body=c.text, url=f"{base}#comment-{c.id}")
                for c in issue.comments
            ])
        return issue_json(id=canonical, title=m["title"], state=m["state"], labels=m["labels"],
                          assignees=m["assignees"], milestone=m["milestone"], author=m["author"],
                          created=m["created"], updated=m["updated"], body=issue.body,
                          url=url, comments=out_comments)

    def _do_list(self, state: str, labels: list[str], words: list[str], limit: int | None) -> ListResult:
        pattern = self._issue_name_re()
        wc = self.working_copy()
        cache = localindex.index_path(wc.meta_dir if wc else None, self._resolved()[0])
        parsed: dict[str, tuple[str, dict]] = {}
        stats: dict[str, tuple[int, int]] = {}
        found, problems = localindex.scan(self.root, lambda name: pattern.match(name) is not None, cache, parsed,
                                          stats)
        # the front matter parsed here is not parsed again when these files are viewed next
        # (a first sync lists, then views each); replaced by each listing
        self._fresh_meta = parsed
        rows = []
        for name, s in found:
            if state != "all" and s["state"] != state:
                continue
            if labels and not all(label in s["labels"] for label in labels):
                continue
            expected = name[: -len(fmt.ISSUE_SUFFIX)]
            if s["id"] != expected:
                problems.append(f"{name}: front matter id is {s['id']!r}, the file name says {expected}")
                continue
            rows.append((name, s))
        if words:
            rows = [(n, s) for n, s in rows if localindex.grep(self.root / n, words, s["title"])]
        rows.sort(key=lambda r: (r[1]["updated"] or "", r[1]["id"]), reverse=True)
        if limit:
            rows = rows[:limit]
        items = [summary_json(id=s["id"], title=s["title"], state=s["state"], labels=s["labels"],
                              updated=s["updated"], url=self._issue_url(s["id"], n)) for n, s in rows]
        return ListResult(items, problems, file_stats=stats)

    def _do_labels(self) -> list[str]:
        pattern = self._issue_name_re()
        wc = self.working_copy()
        cache = localindex.index_path(wc.meta_dir if wc else None, self._resolved()[0])
        found, _problems = localindex.scan(self.root, lambda name: pattern.match(name) is not None, cache)
        return [label for _, s in found for label in s["labels"]]

    def _raw_body(self, issue_id: str) -> tuple[str, str]:
        canonical, _, issue = self._read(issue_id)
        return canonical, issue.body

    # ---- writes --------------------------------------------------------------------------
    def _do_create(self, title: str, body: str, labels: list[str]) -> WriteResult:
        with self._locked():
            d = self.descriptor()
            pattern = self._issue_name_re()
            with os.scandir(self.root) as it:
                numbers = [int(m.group(1)) for e in it if (m := pattern.match(e.name))]
            number = max(numbers, default=0) + 1
            canonical = d.format_id(number)
            path = self.root / (canonical + fmt.ISSUE_SUFFIX)
            now = utc_now_iso()
            issue = fmt.IssueFile(
                {"id": canonical, "title": title, "state": "open", "labels": labels, "assignees": [],
                 "milestone": None, "author": self.default_user(), "created": now, "updated": now,
                 "close_reason": None},
                body)
            try:
                # never overwrite an issue someone else created under the same number
                self._write_atomic(path, fmt.render_issue(issue).encode("utf-8"), exclusive=True)
            except FileExistsError as exc:
                raise BackendError(f"{canonical} appeared while creating it; try again") from exc
        return {"id": canonical, "url": self.url_for(canonical, path)}

    def _do_edit(self, issue_id: str, change: EditRequest) -> WriteResult:
        with self._updating(issue_id) as (canonical, path, issue):
            m = issue.meta
            m["labels"] = [x for x in m["labels"] if x not in change.remove_labels]
            m["labels"] += [x for x in change.add_labels if x not in m["labels"]]
            m["assignees"] = [x for x in m["assignees"] if x not in change.remove_assignees]
            m["assignees"] += [x for x in change.add_assignees if x not in m["assignees"]]
            if change.milestone is not None:
                m["milestone"] = change.milestone
            if change.clear_milestone:
                m["milestone"] = None
            if change.title is not None:
                m["title"] = change.title
            if change.body is not None:
                issue.body = change.body
        return {"id": canonical, "url": self.url_for(canonical, path)}

    def _mutate_body(self, issue_id: str, change: Callable[[str], str]) -> str:
        with self._updating(issue_id) as (canonical, _path, issue):
            issue.body = change(issue.body)
        return canonical

    def _mutate_rollup(self, issue_id: str, change: Callable[[str | None], str]) -> WriteResult:
        with self._updating(issue_id) as (canonical, path, issue):
            existing = issue.rollup()
            new_text = change(existing.text if existing else None)
            now = self._rollup_when or utc_now_iso()
            if existing:
                existing.text = new_text
                existing.updated = now
                comment_id = existing.id
            else:
                comment_id = issue.next_comment_id()
                issue.comments.insert(0, fmt.StoredComment(comment_id, "rollup", self.default_user(), now, now,
                                                           new_text))
        return {"id": canonical, "url": f"{self.url_for(canonical, path)}#comment-{comment_id}"}

    def _do_comment(self, issue_id: str, body: str, author: str | None) -> CommentResult:
        with self._updating(issue_id) as (canonical, path, issue):
            now = utc_now_iso()
            comment_id = issue.next_comment_id()
            issue.comments.append(fmt.StoredComment(comment_id, "comment", author or self.default_user(), now, now,
                                                    body))
        return {"id": canonical, "comment_id": str(comment_id),
                "url": f"{self.url_for(canonical, path)}#comment-{comment_id}"}

    def _do_close(self, issue_id: str, reason: str) -> StateResult:
        with self._updating(issue_id) as (canonical, _path, issue):
            issue.meta["state"] = "closed"
            issue.meta["close_reason"] = reason
        return {"id": canonical, "state": "closed"}

    def _do_reopen(self, issue_id: str) -> StateResult:
        with self._updating(issue_id) as (canonical, _path, issue):
            issue.meta["state"] = "open"
            issue.meta["close_reason"] = None
        return {"id": canonical, "state": "open"}

    def _do_attach(self, issue_id: str, data: bytes, name: str) -> AttachResult:
        with self._updating(issue_id) as (canonical, path, issue):
            folder = self.root / (canonical + fmt.ATTACHMENTS_SUFFIX)
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                raise Refused(f"{folder.name} is not a plain folder; refused")
            folder.mkdir(exist_ok=True)
            target = folder / name
            if target.is_symlink():
                raise Refused(f"{folder.name}/{name} is a symlink; refused")
            self._write_atomic(target, data)
            now = utc_now_iso()
            issue.comments.append(fmt.StoredComment(
                issue.next_comment_id(), "attachment", self.default_user(), now, now,
                f"Attached [{name}]({folder.name}/{name}) ({len(data)} bytes)."))
        return {"id": canonical, "name": name, "url": self.url_for(canonical, target)}

    def default_user(self) -> str:
        if self._user:
            return self._user
        wc = self.working_copy()
        if wc and wc.kind == "git":
            name = vcs.git_user(wc)
            if name:
                self._user = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in name)
                return self._user
        return super().default_user()

    # ---- set-up: init / detect ------------------------------------------------------------
    def init(self, prefix: str, digits: int = 4, access_restricted: bool = False) -> SetupResult:
        """Create the tracker folder and its descriptor. Raises UsageError, Refused (exists)."""
        prefix = prefix.strip().upper()
        if not fmt.PREFIX_RE.match(prefix):
            raise UsageError(f"--prefix {prefix!r}: use upper-case letters and digits, e.g. SEC")
        if not 1 <= digits <= 9:
            raise UsageError("--digits must be between 1 and 9")
        if self.descriptor_path.exists():
            raise Refused(f"{self.descriptor_path} exists; use `detect --write` to change it")
        self.root.mkdir(parents=True, exist_ok=True)
        d = fmt.Descriptor(prefix, digits, access_restricted)
        self._write_atomic(self.descriptor_path, d.render().encode("utf-8"))
        self._descriptor = None
        return self._setup_json(d, written=True)

    def detect(self, write: bool = False, access_restricted: bool = False) -> SetupResult:
        """Infer prefix and digits from the files present; with ``write`` record the descriptor."""
        if access_restricted and not write:
            raise UsageError("--access-restricted needs --write")
        if not self.root.is_dir():
            raise NotFound(f"no local tracker folder at {self.root}")
        counts: dict[tuple[str, int], int] = {}
        for entry in os.scandir(self.root):
            m = re.fullmatch(r"([A-Z][A-Z0-9]{0,15})-(\d+)\.md", entry.name)
            if m:
                key = (m.group(1), len(m.group(2)))
                counts[key] = counts.get(key, 0) + 1
        existing = None
        try:
            existing = self.descriptor()
        except NotFound:
            pass
        if counts:
            (prefix, digits), _ = max(counts.items(), key=lambda kv: kv[1])
        elif existing:
            prefix, digits = existing.prefix, existing.digits
        else:
            raise NotFound(f"{self.root} holds no PREFIX-NNNN.md issue files to detect a format from; "
                           "use `mailtriage tracker init --prefix SEC`")
        d = fmt.Descriptor(prefix, digits, access_restricted if write else bool(existing and existing.access_restricted))
        if write:
            self._write_atomic(self.descriptor_path, d.render().encode("utf-8"))
            self._descriptor = None
        out = self._setup_json(d, written=write)
        out["issues"] = sum(counts.values())
        return out

    def _setup_json(self, d: fmt.Descriptor, written: bool) -> SetupResult:
        return {"backend": self.kind, "root": str(self.root), "descriptor": str(self.descriptor_path),
                "prefix": d.prefix, "digits": d.digits, "access_restricted": d.access_restricted,
                "written": written}

    # ---- pending / publish ---------------------------------------------------------------
    def _wc_or_fail(self) -> vcs.WorkingCopy:
        wc = self.working_copy()
        if wc is None:
            raise BackendError(f"{self.root} is not inside a git or svn working copy")
        return wc

    def pending(self, only: Sequence[str] | None = None) -> Pending:
        """What publish would commit: ``changes``, ``unpushed_commits``, ``needs_publish``.

        ``only``: paths relative to the working copy (what one flow wrote); other pending
        changes are left out (another process's import is not this review's)."""
        out = self.review_state(only)
        return {"backend": out["backend"], "changes": out["changes"], "unpushed_commits": out["unpushed_commits"],
                "needs_publish": out["needs_publish"]}

    def review_state(self, only: Sequence[str] | None = None) -> PendingReview:
        """:meth:`pending` plus ``review`` (``{path: "status sha256"}``), taken before anything
        else is read, so a review built from this result can only be older than what it shows."""
        self.descriptor()
        wc = self._wc_or_fail()
        changes = self._changes(wc, only)
        unpushed = vcs.git_unpushed(wc) if wc.kind == "git" else []
        review = vcs.snapshot(wc, changes, unpushed)
        return {"backend": f"{self.kind}:{wc.kind}", "changes": changes, "unpushed_commits": unpushed,
                "needs_publish": bool(changes or unpushed), "review": review}

    def _changes(self, wc: vcs.WorkingCopy, only: Sequence[str] | None) -> list[PendingChange]:
        rel = wc.rel(self.root)
        if wc.kind == "git":
            # the same staging publish does, in a scratch index: pending lists exactly what it commits
            changes = vcs.git_publish_changes(wc, rel)
        else:
            changes = vcs.svn_changes(wc, rel, expand_new=True)
        # another process's whole-file write in flight (its temp file, renamed a moment later)
        # is not a change of the tracker: reviewed, it would be published
        changes = [c for c in changes if not is_temp_name(c["path"].rsplit("/", 1)[-1])]
        if only is None:
            return changes
        wanted = set(only)
        # an svn folder added with a written file inside it is committed with it
        return [c for c in changes if c["path"] in wanted or any(w.startswith(c["path"] + "/") for w in wanted)]

    def written_paths(self) -> list[str]:
        """Paths (relative to the working copy) this tracker object wrote, in order."""
        return list(self._written)

    def _note_written(self, path: Path) -> None:
        wc = self.working_copy()
        if wc is not None:
            rel = wc.rel(path)
            if rel not in self._written:
                self._written.append(rel)

    def publish(self, message: str, trailers: Sequence[str] = (), push: bool = False, *,
                review: dict[str, str] | None = None, only: Sequence[str] | None = None) -> PublishResult:
        """Commit the tracker root only (git: then push when asked; svn: commit publishes).

        With ``review`` (from :meth:`pending`, with the same ``only``): commit exactly the
        reviewed paths, after checking under the tracker lock that each is as reviewed and
        nothing else is pending in the review's scope; otherwise raise ReviewOutdated and
        commit nothing.

        Raises UsageError (message, trailer), Refused (not access-restricted; unpushed commits
        outside the tracker root), ReviewOutdated, BackendError (VCS failure; a failed push
        carries what was committed in ``partial``).
        """
        text = _commit_message(message, trailers)
        wc = self._wc_or_fail()
        with self._locked(committed=False):
            changes = self._changes(wc, only)
            if review is not None:
                unpushed = vcs.git_unpushed(wc) if wc.kind == "git" else []
                differences = vcs.snapshot_differences(wc, review, vcs.snapshot(wc, changes, unpushed))
                if differences:
                    raise ReviewOutdated(
                        "the tracker changed since the review (" + "; ".join(differences[:10])
                        + (" …" if len(differences) > 10 else "") + "): nothing was committed; review it again",
                        differences)
            paths = [c["path"] for c in changes]
            if wc.kind == "git":
                return self._publish_git(wc, wc.rel(self.root), paths, text, push)
            return self._publish_svn(wc, changes, text)

    def _publish_git(self, wc: vcs.WorkingCopy, rel: str, paths: list[str], text: str, push: bool) -> PublishResult:
        index = vcs.git_index_path(wc)
        backup = None
        if index.exists():
            fd, backup = tempfile.mkstemp(prefix="index.mailtriage.", dir=str(index.parent))
            os.close(fd)
            shutil.copyfile(index, backup)
        files: list[str] = []
        committed = False
        try:
            if paths:
                with tempfile.NamedTemporaryFile("w", prefix="mailtriage-paths-", encoding="utf-8",
                                                 errors="surrogateescape") as spec:
                    spec.write(vcs.pathspec_input(paths))
                    spec.flush()
                    from_file = ["--pathspec-from-file", spec.name, "--pathspec-file-nul"]
                    # stage exactly these paths (a deleted one too), nothing else under the root
                    vcs.run(["git", "add", "-A", *from_file], wc.root)
                    files = [c["path"] for c in vcs.git_cached_changes(wc, rel) if c["path"] in set(paths)]
                    # a pathspec commit takes only these paths, whatever else is staged; the
                    # repository's own hooks (e.g. secret scanning) still run and can refuse it
                    proc = vcs.run(["git", "commit", "-q", "-F", "-", "--only", *from_file], wc.root,
                                   input=text, check=False)
                if proc.returncode != 0:
                    # a refused commit (a pre-commit hook) leaves the index as it was before publish
                    if backup:
                        os.replace(backup, index)
                        backup = None
                    else:
                        vcs.run(["git", "rm", "-q", "-r", "--cached", "--ignore-unmatch", "--", rel], wc.root,
                                check=False)
                    detail = " / ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:]) or "no output"
                    raise BackendError(f"git commit refused (exit {proc.returncode}, not retried): {detail}; "
                                       "nothing was committed and nothing was left staged")
                committed = True
        finally:
            if backup:
                os.unlink(backup)
        revision = None
        if vcs.git_has_head(wc):
            revision = vcs.run(["git", "rev-parse", "HEAD"], wc.root).stdout.strip()
        result: PublishResult = {"committed": committed, "pushed": False, "revision": revision, "files": files}
        if not push:
            return result
        outside = sorted(p for p in vcs.git_paths_of_unpushed(wc)
                         if rel != "." and not (p == rel or p.startswith(rel + "/")))
        if outside:
            raise Refused(f"push refused: unpushed commits also change files outside the tracker root "
                          f"({', '.join(outside[:5])}{' …' if len(outside) > 5 else ''}); push them yourself "
                          "after review", partial=result)
        upstream = vcs.git_upstream(wc)
        if upstream:
            remote, branch = upstream
            args = ["git", "push", "--porcelain", remote, f"HEAD:{branch}"]
        else:
            remotes = list(vcs.git_remotes(wc))
            if len(remotes) != 1:
                raise BackendError("push failed: the branch has no upstream and there is not exactly one "
                                   f"remote ({', '.join(remotes) or 'none'}); nothing was pushed", partial=result)
            args = ["git", "push", "--porcelain", "-u", remotes[0], "HEAD"]
        proc = vcs.run(args, wc.root, check=False)
        if proc.returncode != 0:
            detail = " / ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
            what = (f"commit {revision[:12]} was made and stays local" if committed and revision
                    else "nothing new was committed")
            raise BackendError(f"push failed (not retried): {detail}; {what}", partial=result)
        result["pushed"] = True
        return result

    def _publish_svn(self, wc: vcs.WorkingCopy, changes: list[PendingChange], text: str) -> PublishResult:
        files = [c["path"] for c in changes]
        if not files:
            return {"committed": False, "pushed": False, "revision": None, "files": []}
        # a publish killed while its svn child committed: the commit may be in the repository
        # while the working copy still holds a lock and the files as added; converge on rerun
        rel = wc.rel(self.root)
        if vcs.svn_locked(wc, rel):
            vcs.run(["svn", "cleanup", "--non-interactive", "--", rel], wc.root)
        if vcs.svn_settle_published(wc, changes):
            # what is left of the reviewed paths (an added file the repository lacks is unversioned again)
            left = {c["path"]: c["status"] for c in vcs.svn_changes(wc, rel, expand_new=True)}
            changes = [{"path": c["path"], "status": left[c["path"]]} for c in changes if c["path"] in left]
            files = [c["path"] for c in changes]
            if not files:
                return {"committed": False, "pushed": False, "revision": None, "files": []}
        for change in changes:
            if change["status"] == "untracked":
                vcs.run(["svn", "add", "--non-interactive", "--depth", "empty", "--parents", "--",
                         change["path"] + "@"], wc.root)
            elif change["status"] == "missing":
                vcs.run(["svn", "rm", "--non-interactive", "--", change["path"] + "@"], wc.root)
        # exactly these paths: --depth empty, so a folder named here brings none of its other files
        targets = [p + "@" for p in files]
        proc = vcs.run(["svn", "commit", "--non-interactive", "--depth", "empty", "-F", "-", "--", *targets],
                       wc.root, input=text, check=False)
        if proc.returncode != 0:
            detail = " / ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
            raise BackendError(f"svn commit failed (not retried): {detail}; the changes stay in the working copy",
                               partial={"committed": False, "pushed": False, "revision": None, "files": files})
        revision = vcs.svn_commit_revision(proc.stdout)
        return {"committed": True, "pushed": True, "revision": revision, "files": files}

    # ---- doctor ------------------------------------------------------------------------------
    def doctor(self) -> DoctorReport:
        checks: list[DoctorCheck] = []

        def check(name: str, ok: bool, detail: str) -> None:
            checks.append({"name": name, "ok": ok, "detail": detail})

        try:
            d = self.descriptor()
            check("descriptor", True, f"{fmt.DESCRIPTOR_NAME}: prefix {d.prefix}, format version {d.version}")
            try:
                self.require_access_restricted()
                check("access_restricted", True, "recorded and committed: access_restricted: true")
            except Refused as exc:
                check("access_restricted", False, exc.message if d.access_restricted
                      else "not recorded; writes are refused until `detect --write --access-restricted`")
        except (NotFound, MalformedIssue) as exc:
            check("descriptor", False, str(exc))
        wc = self.working_copy()
        if wc is None:
            check("working_copy", False, f"{self.root} is not inside a git or svn working copy")
        else:
            check("working_copy", True, f"{wc.kind} working copy at {wc.root}")
            if wc.kind == "git":
                remotes = vcs.git_remotes(wc)
            else:
                root_url = vcs.svn_repos_root(wc)
                remotes = {"repository": root_url} if root_url else {}
            if not remotes:
                check("remotes", True, "no remote: nothing leaves this machine until one is added")
            for name, url in remotes.items():
                ok, detail = remote_visibility(url, self.github_api_url)
                if not ok and "cannot verify" in detail:
                    # GitHub said nothing (or this is not GitHub): the operator's own check counts.
                    # A GitHub repository that answers "public" is never overridden.
                    if url.strip() in self.verified_remotes:
                        ok, detail = True, ("checked by the operator (listed in tracker.local.verified_remotes); "
                                            f"mailtriage could not verify it itself: {detail}")
                    else:
                        detail += ("; once you have checked that only the security team can read it, add this "
                                   "URL to tracker.local.verified_remotes in project.md")
                check(f"remote {name}", ok, f"{url}: {detail}")
        return {"backend": self.kind, "ok": all(c["ok"] for c in checks), "checks": checks}


def _kept_mode(path: Path) -> int:
    """The permission bits ``path`` has now (a link is not followed), or what a plain create
    would give it when it does not exist yet."""
    try:
        info = os.lstat(path)
    except OSError:
        info = None
    if info is not None and stat.S_ISREG(info.st_mode):
        return stat.S_IMODE(info.st_mode) & 0o777
    return 0o644 & ~_umask()


def _umask() -> int:
    """The process umask, read without changing it (Linux /proc; else the usual 022)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (best effort: some file systems refuse it)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_GITHUB_URL = lazy(
    r"^(?:https?://(?:[^@/]+@)?github\.com/|git@github\.com:|ssh://git@github\.com/)([^/\s]+)/([^/\s]+?)(?:\.git)?/?$")


def remote_visibility(url: str, api_url: str | None = None) -> tuple[bool, str]:
    """(ok, detail) for one remote: a GitHub remote is checked through the API; anything else
    cannot be verified offline and is reported so — never as ok."""
    m = _GITHUB_URL.match(url.strip())
    if not m:
        return False, "cannot verify who can read this remote (not a GitHub repository); check its access yourself"
    owner, repo = m.group(1), m.group(2)
    # lazy: the HTTP client and keyring load only to check a remote; the demo's local tracker never does
    from mailtriage.core.errors import ConfigError
    from mailtriage.core.http import HttpClient, HttpError
    from mailtriage.core.secrets import missing_secret_hint
    from mailtriage.trackers.github import DEFAULT_API, github_token

    api_url = api_url or DEFAULT_API
    headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
    try:  # only the token stored for this API's origin (project.md may name any api_url)
        token = github_token(api_url, f"{owner}/{repo}")
    except ConfigError as exc:
        return False, f"cannot verify: {exc.problem}"
    except Exception:  # no usable keyring: an unauthenticated check can still see a public repository
        token = None
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        with HttpClient("github", api_url, headers=headers, timeout=10) as http:
            response = http.get(f"/repos/{owner}/{repo}")
    except HttpError as exc:
        return False, f"cannot verify: GitHub is not reachable ({exc.detail})"
    if response.status_code == 200:
        # lazy: GitHub's privacy reading loads only when a GitHub remote answered
        from mailtriage.trackers.github import repository_privacy

        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            return False, "cannot verify: GitHub's answer is not a repository object"
        ok, detail = repository_privacy(data, f"{owner}/{repo}")
        if ok and not token:
            # GitHub shows a private repository to its readers only: an anonymous "private" is no proof
            return False, (f"cannot verify: {api_url} called {owner}/{repo} private without a token; "
                           f"{missing_secret_hint('github', api_url, f'{owner}/{repo}')}")
        if ok:
            return True, detail
        if "neither" in detail:
            return False, f"cannot verify: {detail}"
        return False, f"{detail}: embargoed issues must not go there"
    if response.status_code in (401, 403, 404):
        return False, (f"cannot verify: GitHub answered {response.status_code} for {owner}/{repo} "
                       f"({missing_secret_hint('github', api_url, f'{owner}/{repo}') if not token else 'check the token'})")
    return False, f"cannot verify: GitHub answered {response.status_code}"


_TRAILER = lazy(r"^[A-Za-z0-9][A-Za-z0-9-]*: \S.*$")


def _commit_message(message: str, trailers: Sequence[str]) -> str:
    text = (message or "").replace("\r\n", "\n").strip("\n")
    if not text.strip():
        raise UsageError("the commit message is empty")
    if "\x00" in text:
        raise UsageError("the commit message contains a NUL byte")
    bad = [t for t in trailers if "\n" in t or not _TRAILER.match(t)]
    if bad:
        raise UsageError(f"--trailer {bad[0]!r} is not 'Key: value' on one line")
    if trailers:
        text += "\n\n" + "\n".join(trailers)
    return text + "\n"

