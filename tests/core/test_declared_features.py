"""Capabilities are declared, not discovered: each backend's declared features agree with
what its class does, so a front end may trust the declaration (issue 19 §3)."""

import inspect

import pytest

from mailtriage.backends.contract import MailSource, Op
from mailtriage.backends.registry import BACKEND_KINDS, backend_class
from mailtriage.trackers.contract import Tracker
from mailtriage.trackers.github import GitHubTracker
from mailtriage.trackers.jira import JiraTracker
from mailtriage.trackers.localfiles import LocalFilesTracker


@pytest.mark.parametrize("kind", sorted(BACKEND_KINDS))
def test_a_declared_listing_limit_is_one_the_listing_takes(kind):
    cls = backend_class(kind)
    takes_limit = "limit" in inspect.signature(cls.list_recent_threads).parameters
    assert cls.features.listing_limit == takes_limit


@pytest.mark.parametrize("kind", sorted(BACKEND_KINDS))
def test_a_declared_cached_listing_is_one_the_class_implements(kind):
    cls = backend_class(kind)
    implements = cls.cached_recent_threads is not MailSource.cached_recent_threads
    assert cls.features.cached_listing == implements


def test_only_local_archives_declare_file_links():
    local = {kind for kind in BACKEND_KINDS if backend_class(kind).features.local_archive}
    assert local == {"mbox"}


def test_only_the_working_copy_tracker_publishes_and_keeps_issue_files():
    assert LocalFilesTracker.features.publishes_changes and LocalFilesTracker.features.local_issue_files
    assert not LocalFilesTracker.features.search_lags
    for server in (GitHubTracker, JiraTracker):
        assert not server.features.publishes_changes and not server.features.local_issue_files
        assert server.features.search_lags


def test_a_tracker_that_answers_changes_implements_them():
    for cls in (LocalFilesTracker, GitHubTracker, JiraTracker):
        assert cls.features.changes_since == (cls.changes is not Tracker.changes), cls
        assert cls.features.assignee_history == (cls.assignee_changes is not Tracker.assignee_changes), cls


def test_a_tracker_set_up_locally_has_init_and_detect():
    for cls in (LocalFilesTracker, GitHubTracker, JiraTracker):
        assert cls.features.set_up_locally == (callable(getattr(cls, "init", None))
                                               and callable(getattr(cls, "detect", None))), cls


@pytest.mark.parametrize("kind", sorted(BACKEND_KINDS))
def test_declared_attachment_bytes_are_served_by_the_class(kind):
    cls = backend_class(kind)
    assert cls.features.attachment_bytes == (cls.attachment is not MailSource.attachment), kind


def test_only_the_local_maildir_declares_local_drafts_and_it_writes_drafts():
    local = {kind for kind in BACKEND_KINDS if backend_class(kind).features.local_drafts}
    assert local == {"maildir"}
    assert Op.CREATE_DRAFT in backend_class("maildir").capabilities


def test_the_backends_that_write_files_into_drafts_declare_it():
    attaching = {kind for kind in BACKEND_KINDS if backend_class(kind).features.draft_attachments}
    assert attaching == {"imap", "gmail", "maildir"}  # the three that compose the draft's MIME themselves


def test_only_the_maildir_mailbox_declares_local_folders():
    from mailtriage.backends.gmail.adapter import GmailMailbox
    from mailtriage.backends.imap.adapter import ImapMailbox
    from mailtriage.backends.maildir_account import MaildirMailbox
    from mailtriage.backends.microsoft.adapter import GraphMailbox

    assert MaildirMailbox.local_folders
    assert not any(cls.local_folders for cls in (ImapMailbox, GmailMailbox, GraphMailbox))
