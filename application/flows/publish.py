"""Publish review: the pending changes of a local-files tracker, shown, then published on confirm.

A local-files tracker changes files in a working copy; nothing is shared until it is
published (git commit of the tracker root + push, or svn commit). The end of any flow
that wrote offers this review:

* the changed files (and unpushed commits);
* the diff — tracked changes from the VCS, new files as additions;
* a proposed commit message that says what the flows did, e.g.
  ``security: import SEC-0012, SEC-0013; sync SEC-0003`` (editable), with the project's
  commit attribution (``tracker.commit_attribution``; the asf profile supplies
  ``Generated-by: mailtriage``) as a trailer;
* where it goes (the branch's upstream, or "commit only" when there is no remote).

GitHub and Jira trackers write straight to the server: there is nothing to review and
the proposal is empty with a note saying so.
"""

from __future__ import annotations

import difflib
import re
import textwrap
from pathlib import Path

from mailtriage.core.errors import ConfigError
from mailtriage.core.lazy_re import lazy
from mailtriage.trackers import vcs
from mailtriage.trackers.contract import Tracker
from mailtriage.trackers.errors import ReviewOutdated
from mailtriage.trackers.values import PendingChange, PublishResult
from mailtriage.application.flows.proposals import Field, Proposal, Write, WriteKind, in_tracker
from typing import Sequence
from mailtriage.core.projectconfig import ProjectConfig

MAX_DIFF_CHARS = 200_000
SUBJECT_MAX = 72  # a commit subject longer than this becomes counts + first IDs, the full list in the body
_ISSUE_FILE = re.compile(r"(?:^|/)([A-Z][A-Z0-9]*-\d+)\.md$")
_ATTACHMENT = lazy(r"(?:^|/)([A-Z][A-Z0-9]*-\d+)\.attachments/")
# an entry summary line the diff adds (the format of trackers/rollup.py)
_ADDED_SUMMARY = lazy(r"^\+<details><summary>\d{4}-\d{2}-\d{2} · @\S+ · (.+?)</summary>\s*$", re.MULTILINE)
_GIT_FILE = lazy(r"^diff --git a/(.+?) b/", re.MULTILINE)
_SVN_FILE = lazy(r"^Index: (.+)$", re.MULTILINE)
_NEW = ("untracked", "added")


def attribution(config) -> list[str]:
    """``tracker.commit_attribution`` as a list of trailers (a string or a list)."""
    value = config.get("tracker.commit_attribution")
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value.strip()]
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    raise ConfigError(config.file, "tracker.commit_attribution", "must be a trailer line or a list of them",
                      "e.g. \"Generated-by: mailtriage\"")


def _new_file_diff(wc_root: Path, rel: str) -> str:
    path = wc_root / rel
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"diff --git a/{rel} b/{rel}\nnew file (cannot read: {exc.strerror})\n"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"diff --git a/{rel} b/{rel}\nnew file\nBinary file {rel} ({len(data)} bytes)\n"
    lines = difflib.unified_diff([], text.splitlines(keepends=True), "/dev/null", f"b/{rel}", lineterm="\n")
    body = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    return f"diff --git a/{rel} b/{rel}\nnew file\n{body}"


def pending_diff(tracker, changes: list[PendingChange], scoped: bool = False) -> str:
    """The diff of the pending changes under the tracker root (tracked + new files);
    ``scoped``: of the paths of ``changes`` only (a flow's own writes).

    Raises BackendError (the VCS failed)."""
    wc = tracker.working_copy()
    rel = wc.rel(tracker.root)
    targets = [c["path"] for c in changes if c["status"] not in _NEW] if scoped else [rel]
    parts: list[str] = []
    if wc.kind == "git":
        if vcs.git_has_head(wc) and targets:
            parts.append(vcs.run(["git", "-c", "core.quotepath=off", "diff", "--no-color", "--no-ext-diff",
                                  "HEAD", "--", *targets], wc.root).stdout)
        new = [c["path"] for c in changes if c["status"] == "untracked"
               or (c["status"] == "added" and not vcs.git_has_head(wc))]
    else:
        if targets:
            parts.append(vcs.run(["svn", "diff", "--non-interactive", "--depth", "empty" if scoped else "infinity",
                                  "--", *targets], wc.root).stdout)
        new = [c["path"] for c in changes if c["status"] == "untracked"]
    for path in new:
        if (wc.root / path).is_file():
            parts.append(_new_file_diff(wc.root, path))
    return "".join(p if p.endswith("\n") or not p else p + "\n" for p in parts)


def _file_chunks(diff: str) -> dict[str, str]:
    marks = [(m.start(), m.group(1).strip()) for m in _GIT_FILE.finditer(diff)] \
        + [(m.start(), m.group(1).strip()) for m in _SVN_FILE.finditer(diff)]
    marks.sort()
    chunks: dict[str, str] = {}
    for i, (start, path) in enumerate(marks):
        end = marks[i + 1][0] if i + 1 < len(marks) else len(diff)
        chunks[path] = chunks.get(path, "") + diff[start:end]
    return chunks


def file_summary(changes: list[PendingChange], diff: str) -> str:
    """One line per changed file with the lines it adds and removes, then the totals: what
    the review shows above the diff."""
    chunks = _file_chunks(diff)
    lines, added, removed = [], 0, 0
    for change in sorted(changes, key=lambda c: c["path"]):
        chunk = chunks.get(change["path"], "").splitlines()
        plus = sum(1 for line in chunk if line.startswith("+") and not line.startswith("+++"))
        minus = sum(1 for line in chunk if line.startswith("-") and not line.startswith("---"))
        added, removed = added + plus, removed + minus
        lines.append(f"{change['status']:<10} {change['path']}  +{plus} -{minus}")
    count = len(changes)
    lines.append(f"{count} file{'s' if count != 1 else ''} changed, +{added} -{removed} lines")
    return "\n".join(lines)


def commit_message(changes: list[PendingChange], diff: str) -> str:
    """``security: import SEC-0012, SEC-0013; sync SEC-0003`` from what changed; when that
    is longer than a subject line, ``security: import 401, sync 100 issues (SEC-0001, …)``
    and every ID in the body, one wrapped list per action.

    A new issue file is an import; a changed one is named by the rollup actions its diff
    adds (``Sync``, ``Import``, …), else "update".
    """
    chunks = _file_chunks(diff)
    actions: dict[str, list[str]] = {}

    def add(action: str, issue: str) -> None:
        ids = actions.setdefault(action, [])
        if issue not in ids:
            ids.append(issue)

    for change in sorted(changes, key=lambda c: c["path"]):
        path = change["path"]
        m = _ISSUE_FILE.search(path)
        if m:
            if change["status"] in _NEW:
                add("import", m.group(1))
                continue
            named = [a.strip().lower() for a in _ADDED_SUMMARY.findall(chunks.get(path, ""))]
            for action in named or ["update"]:
                add(action, m.group(1))
            continue
        m = _ATTACHMENT.search(path)
        if m:
            add("attach files to", m.group(1))
        elif path.endswith("tracker-format.yaml"):
            actions.setdefault("update the tracker format descriptor", [])
        else:
            add("update", path.rsplit("/", 1)[-1])
    if not actions:
        return "security: update the tracker"
    parts = [f"{action} {', '.join(ids)}".strip() for action, ids in actions.items()]
    full = "security: " + "; ".join(parts)
    if len(full) <= SUBJECT_MAX:
        return full
    # Too long for a subject line (git tools show one line): counts and the first few IDs
    # there, every ID in the body.
    counted = [f"{action} {len(ids)}" if ids else action for action, ids in actions.items()]
    total = sum(len(ids) for ids in actions.values())
    subject = "security: " + ", ".join(counted) + (f" issue{'s' if total != 1 else ''}" if total else "")
    first = [i for ids in actions.values() for i in ids]
    for shown in range(min(3, len(first)), 0, -1):
        candidate = f"{subject} ({', '.join(first[:shown])}{', …' if len(first) > shown else ''})"
        if len(candidate) <= SUBJECT_MAX:
            subject = candidate
            break
    if len(subject) > SUBJECT_MAX:
        subject = subject[:SUBJECT_MAX - 1] + "…"
    body = [textwrap.fill(f"{action[:1].upper()}{action[1:]}: {', '.join(ids)}" if ids else action,
                          width=SUBJECT_MAX, break_on_hyphens=False, break_long_words=False)
            for action, ids in actions.items()]
    return subject + "\n\n" + "\n".join(body)


def propose_publish(tracker: Tracker, config, *, message: str | None = None,
                    only: list[str] | None = None) -> Proposal:
    """The publish review of a local-files tracker; an empty proposal (with a note) when
    there is nothing to publish or the tracker writes straight to a server.

    ``only``: the paths one flow wrote (relative to the working copy); the review shows and
    publishes those alone, never another process's pending changes. What is confirmed is
    what is committed: the write carries the review's snapshot (``facts["fingerprint"]``),
    and the tracker refuses (ReviewOutdated, ``facts["review_outdated"]``) when the files
    differ from it at commit time; nothing is committed then and the review is made again.

    Raises the tracker's errors (NotFound: no tracker folder; BackendError: VCS failure).
    """
    proposal = Proposal("Publish the tracker changes")
    if not tracker.features.publishes_changes:
        proposal.notes.append(f"the {tracker.kind} tracker writes straight to the server: nothing to publish")
        proposal.facts["needs_publish"] = False
        return proposal
    pending = tracker.review_state(only=only)
    changes = pending["changes"]
    review = pending["review"]
    unpushed = pending["unpushed_commits"]
    proposal.facts.update(needs_publish=pending["needs_publish"], files=[c["path"] for c in changes],
                          unpushed_commits=len(unpushed), fingerprint=vcs.fingerprint(review),
                          scope="this run's writes" if only is not None else "the tracker root")
    if not pending["needs_publish"]:
        proposal.notes.append("nothing to publish: this run changed no tracker file (other pending changes: "
                              "'mailtriage publish')" if only is not None
                              else "nothing to publish: the tracker has no pending changes")
        return proposal

    wc = tracker.working_copy()
    diff = pending_diff(tracker, changes, scoped=only is not None)
    trailers = attribution(config)
    text = message or commit_message(changes, diff)
    remotes = vcs.git_remotes(wc) if wc.kind == "git" else {}
    push = wc.kind == "git" and bool(remotes)
    if wc.kind == "git":
        upstream = vcs.git_upstream(wc)
        target = (f"commit, then push to {upstream[0]}/{upstream[1]}" if upstream
                  else f"commit, then push to {next(iter(remotes))}" if len(remotes) == 1
                  else "commit, then push (fails: no upstream and not exactly one remote)" if remotes
                  else "commit only (the working copy has no remote)")
    else:
        target = f"svn commit to {vcs.svn_repos_root(wc) or 'the repository'}"
    if wc.kind == "git":
        identity, why = vcs.git_identity(wc)
        if identity is None:
            proposal.warnings.append(f"git cannot tell who commits in {wc.root} ({why}): set user.name and "
                                     "user.email there, or the commit fails")
        committer = identity or f"unknown ({why})"
    else:
        committer = "the user svn authenticates as (svn auth)"
    proposal.facts["committer"] = committer

    shown_diff = diff if len(diff) <= MAX_DIFF_CHARS else diff[:MAX_DIFF_CHARS] + "\n… (diff cut here)\n"
    if len(diff) > MAX_DIFF_CHARS:
        proposal.notes.append(f"the diff is {len(diff)} characters long; the first {MAX_DIFF_CHARS} are shown")
    fields = [Field("Files", "\n".join(f"{c['status']}: {c['path']}" for c in changes) or "(none)", multiline=True)]
    if unpushed:
        fields.append(Field("Unpushed commits",
                            "\n".join(f"{c['revision'][:12]} {c['subject']}" for c in unpushed), multiline=True))
    fields += [Field("Commit message", text, multiline=True),
               Field("Attribution", ", ".join(trailers) or "(none: tracker.commit_attribution is not set)"),
               Field("Commits as", committer),
               Field("Publish", target),
               Field("Summary", file_summary(changes, diff) if changes else "(no file changed)", multiline=True),
               Field("Diff", shown_diff or "(no textual change)", multiline=True)]
    if not changes:
        proposal.notes.append("no file changed; publishing pushes the unpushed commits only")

    def publish(write: Write) -> PublishResult:
        final = write.body if write.body is not None and write.body.strip() else text
        try:
            return tracker.publish(final, trailers, push=push, review=review, only=only)
        except ReviewOutdated as exc:
            proposal.facts["review_outdated"] = exc.differences  # the front end reviews again
            raise

    proposal.writes.append(Write(WriteKind.PUBLISH, f"tracker:{pending['backend']}",
                                 f"publish {len(changes)} changed file{'' if len(changes) == 1 else 's'}" + (" and push" if push else ""),
                                 fields, publish, editable_body=True, body=text,
                                 label=f"Publish {len(changes)} change{'' if len(changes) == 1 else 's'}"
                                 + (" and push" if push else "") if changes else "Push commits",
                                 where=f"{in_tracker(tracker)}: {target}"))
    proposal.recap.append(f"publish → {pending['backend']} at {wc.root}")
    return proposal


class PublishFlow:
    """The review of a tracker that keeps changes to publish (a local-files tracker)."""

    def __init__(self, tracker: Tracker, config: ProjectConfig) -> None:
        self.tracker = tracker
        self.config = config

    @property
    def offered(self) -> bool:
        """Whether this tracker has changes to publish at all (declared by the tracker)."""
        return self.tracker.features.publishes_changes

    def why_not_offered(self) -> str:
        return f"the {self.tracker.kind} tracker writes straight to the server"

    def needs_publish(self) -> bool:
        return self.offered and bool(self.tracker.pending().get("needs_publish"))

    def propose(self, message: str | None = None, *, only: Sequence[str] | None = None) -> Proposal:
        """``only``: the paths one flow wrote (``tracker.written_paths()``): review those alone."""
        return propose_publish(self.tracker, self.config, message=message,
                               only=list(only) if only is not None else None)
