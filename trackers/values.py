"""The values the tracker contract returns, typed: one ``TypedDict`` per shape.

Every public method of :class:`~mailtriage.trackers.contract.Tracker` returns one of these.
They are plain ``dict`` objects at run time (the CLI prints them as the JSON documents of
the spec, /work/shared/specs/tracker-backend-contract.md, and callers read them by key), so
nothing that reads them changes; a type checker now knows each key and its type, and
``NotRequired`` marks the keys a value may lack (``comments`` without ``--comments``).

The wire shape is the contract: ``tests/trackers/test_contract.py`` checks every backend's
values against these classes' ``__required_keys__`` and ``__optional_keys__``, and these
classes against the spec's key lists, so the types and the JSON cannot drift apart.

No ``from __future__ import annotations`` here: Python 3.11 does not see ``NotRequired``
inside a string annotation, and ``__optional_keys__`` would come out empty.
"""

from typing import Literal, NotRequired, TypedDict

# -- reads ------------------------------------------------------------------------------


class Comment(TypedDict):
    """One comment of ``view --comments``; the status rollup is the first, ``kind: "rollup"``."""

    id: str
    kind: str  # "rollup" or "comment"
    author: str | None
    created: str | None
    updated: str | None
    body: str
    url: str


class IssueView(TypedDict):
    """``view``: {id, title, state, labels, assignees, milestone, author, created, updated, body,
    url, comments?}; ``comments`` only when asked for."""

    id: str
    title: str
    state: str  # "open" or "closed"
    labels: list[str]
    assignees: list[str]
    milestone: str | None
    author: str | None
    created: str | None
    updated: str | None
    body: str
    url: str
    comments: NotRequired[list[Comment]]


class IssueSummary(TypedDict):
    """One item of ``list``: {id, title, state, labels, updated, url}."""

    id: str
    title: str
    state: str
    labels: list[str]
    updated: str | None
    url: str


class FieldValue(TypedDict):
    """``field-get``: {id, heading, value}; ``value`` is None when the section is missing."""

    id: str
    heading: str
    value: str | None


# -- writes -----------------------------------------------------------------------------


class WriteResult(TypedDict):
    """``create``, ``edit``, ``rollup-append``, ``rollup-amend-latest``: {id, url}."""

    id: str
    url: str


class Existing(TypedDict):
    """What a write found already done: ``find_or_create`` found the issue, or
    ``rollup_append(unless_action=…)`` found an entry with that action. {id, existing: true}."""

    id: str
    existing: Literal[True]


class Created(TypedDict):
    """``find_or_create`` made a new issue: {id, url, existing: false}."""

    id: str
    url: str
    existing: Literal[False]


class FieldSetResult(TypedDict):
    """``field-set``: {id, heading, created} (``created``: the section was appended)."""

    id: str
    heading: str
    created: bool


class CommentResult(TypedDict):
    """``comment``: {id, comment_id, url}."""

    id: str
    comment_id: str
    url: str


class StateResult(TypedDict):
    """``close`` and ``reopen``: {id, state}. Jira's reopen of an issue that is already open
    adds ``changed: false`` and a ``note`` saying so."""

    id: str
    state: str
    changed: NotRequired[bool]
    note: NotRequired[str]


class AttachResult(TypedDict):
    """``attach``: {id, name, url}."""

    id: str
    name: str
    url: str


# -- publishing (local-files) -------------------------------------------------------------


class PendingChange(TypedDict):
    """A changed path under the tracker root, relative to the working copy."""

    path: str
    status: str  # added, modified, deleted, untracked, missing, … (git and svn words)


class UnpushedCommit(TypedDict):
    revision: str
    subject: str


class Pending(TypedDict):
    """``pending`` (the library call): {backend, changes, unpushed_commits, needs_publish}."""

    backend: str  # "local-files:git" or "local-files:svn"
    changes: list[PendingChange]
    unpushed_commits: list[UnpushedCommit]
    needs_publish: bool


class PendingReview(Pending):
    """``pending`` as the CLI prints it: :class:`Pending` plus ``review``, each pending path's
    state (``{path: "status sha256"}``), which ``publish --review-file`` checks."""

    review: dict[str, str]


class PublishResult(TypedDict):
    """``publish``: {committed, pushed, revision, files}."""

    committed: bool
    pushed: bool
    revision: str | None
    files: list[str]


# -- set-up and health ------------------------------------------------------------------------


class DoctorCheck(TypedDict):
    name: str
    ok: bool
    detail: str


class DoctorReport(TypedDict):
    """``doctor``: {backend, ok, checks: [{name, ok, detail}]}."""

    backend: str
    ok: bool
    checks: list[DoctorCheck]


class SetupResult(TypedDict):
    """``init`` and ``detect`` (local-files): the descriptor recorded or inferred; ``detect``
    adds ``issues``, the number of issue files it read."""

    backend: str
    root: str
    descriptor: str
    prefix: str
    digits: int
    access_restricted: bool
    written: bool
    issues: NotRequired[int]
