"""The demo's local-files tracker content: three filed reports, and three more for the queue.

:func:`file_demo_issues` files them (with fields, status rollups and close reasons) into
the demo workspace's tracker (``demo/workspace.py``); :func:`make_demo_tracker` makes a
stand-alone repository with them for tests. Everything goes through the tracker
contract, like any other write.

Raises from :func:`make_demo_tracker`: ``OSError`` when git is missing or the folder
cannot be written, and the tracker errors of ``mailtriage.trackers.contract``.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

DEMO_ISSUES: list[dict[str, Any]] = [
    {
        "title": "Path traversal in archive import allows writing outside the workspace",
        "labels": ["valid", "cve allocated", "fix released", "important"],
        "fields": {
            "Security mailing list thread": "Path traversal in archive import allows writing outside the workspace "
                                            "(security@frobnicator.apache.org)",
            "Reporter": "José Müller <jose.mueller@example.com>",
            "Received": "2026-09-03",
            "Affected versions": "3.0.0 to 3.4.1",
            "CVE": "CVE-2026-41017",
            "Severity": "important",
        },
        "rollup": [
            ("2026-09-03", "praman", "Imported", "Imported from the security list; receipt sent."),
            ("2026-09-05", "mkowalczyk", "Validated", "Reproduced on 3.4.1; fix in review."),
            ("2026-10-06", "praman", "Fix released", "Fixed in 3.4.2; advisory published."),
        ],
        "close": "completed",
        "covers": None,
    },
    {
        "title": "Authentication bypass: empty bearer token accepted by the REST API with an LDAP realm",
        "labels": ["valid", "cve allocated", "fix released", "critical"],
        "fields": {
            "Security mailing list thread": "Authentication bypass: empty bearer token accepted by the REST API "
                                            "with an LDAP realm (security@frobnicator.apache.org)",
            "Reporter": "Ana Costa <ana.costa@redteam.example.com>",
            "Received": "2026-09-22",
            "Affected versions": "3.4.0 to 3.4.1",
            "CVE": "CVE-2026-41355",
            "Severity": "critical",
        },
        "rollup": [
            ("2026-09-23", "nokafor", "Imported", "Imported from the security list; receipt sent."),
            ("2026-09-23", "dwhitfield", "Validated", "Confirmed with an LDAP realm; fix in 3.4.2 (6 October)."),
            ("2026-10-06", "praman", "Fix released", "Fixed in 3.4.2; advisory published."),
        ],
        "close": None,
        # The Import entry covers the first five messages: the reporter's last reply (her
        # credit line) is the new mail that Sync proposes in the demo.
        "covers": 5,
    },
    {
        "title": "RCE: an administrator can upload a plugin that runs arbitrary code",
        "labels": ["invalid"],
        "fields": {
            "Security mailing list thread": "RCE: an administrator can upload a plugin that runs arbitrary code "
                                            "(security@frobnicator.apache.org)",
            "Reporter": "Wei Zhang <wei.zhang@example.net>",
            "Received": "2026-09-25",
            "Affected versions": "",
            "CVE": "",
            "Severity": "",
        },
        "rollup": [
            ("2026-09-25", "mkowalczyk", "Imported", "Imported from the security list; receipt sent."),
            ("2026-09-26", "mkowalczyk", "Not a vulnerability",
             "Administrators are trusted to install plugins (see the security model)."),
        ],
        "close": "not-planned",
        "covers": None,
    },
]


#: The issues that give the demo's triage queue (issue 37) something to show, filed after
#: :data:`DEMO_ISSUES` in the demo workspace: one in progress with an owner and a disclosure
#: date a few days after the demo's "now", one in progress with the other triager, and one
#: imported by nobody whose Import is older than the reporter's newest mail. ``assignees``
#: are names of the roster (``tracker.assignees`` in demo/project.md).
QUEUE_ISSUES: list[dict[str, Any]] = [
    {
        "title": "Sandbox escape in the report template engine (SSTI to RCE)",
        "labels": ["valid", "cve allocated", "embargoed", "critical"],
        "fields": {
            "Security mailing list thread": "Sandbox escape in the report template engine (SSTI to RCE) "
                                            "(security@frobnicator.apache.org)",
            "Reporter": "Dmitri Volkov <d.volkov@example.net>",
            "Received": "2026-11-02",
            "Affected versions": "3.0.0 to 3.4.2",
            "CVE": "CVE-2026-41502",
            "Severity": "critical",
            "Disclosure date": "2026-12-01",
        },
        "rollup": [
            ("2026-11-02", "praman", "Imported", "Imported from the security list; receipt sent."),
            ("2026-11-04", "dwhitfield", "Validated", "Reproduced on 3.4.2; patch for 3.5.0 (1 December) "
                                                      "under review."),
        ],
        "assignees": ["mkowalczyk"],
        "close": None,
        "covers": None,
    },
    {
        "title": "ReDoS in the route matcher with long paths",
        "labels": ["needs triage", "moderate"],
        "fields": {
            "Security mailing list thread": "ReDoS in the route matcher with long paths "
                                            "(security@frobnicator.apache.org)",
            "Reporter": "Aarav Shah <aarav.shah@example.com>",
            "Received": "2026-11-10",
            "Affected versions": "",
            "CVE": "",
            "Severity": "",
            "Disclosure date": "",
        },
        "rollup": [
            ("2026-11-11", "mkowalczyk", "Imported", "Imported from the security list; receipt sent."),
        ],
        "assignees": ["triager"],
        "close": None,
        "covers": None,
    },
    {
        "title": "Open redirect in the login page's next parameter",
        "labels": ["needs triage"],
        "fields": {
            "Security mailing list thread": "Open redirect in the login page's next parameter "
                                            "(security@frobnicator.apache.org)",
            "Reporter": "Elena Petrova <elena.petrova@example.com>",
            "Received": "2026-11-12",
            "Affected versions": "3.4.2",
            "CVE": "",
            "Severity": "",
            "Disclosure date": "",
        },
        "rollup": [
            ("2026-11-12", "praman", "Imported", "Imported from the security list; receipt sent."),
        ],
        "assignees": [],
        "close": None,
        # Imported before the reporter's follow-up of 26 November: the queue and Sync see new mail.
        "covers": 2,
    },
]


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=mailtriage demo", "-c", "user.email=demo@mailtriage.invalid",
                    "-c", "init.defaultBranch=main", *args], cwd=folder, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def file_demo_issues(tracker, threads: dict | None = None, *, queue: bool = False) -> None:
    """File the demo issues, with their fields, rollups and close reasons, into ``tracker``.

    ``threads`` (root subject -> (ThreadId, Thread), from :func:`demo_threads`) links each
    issue to its thread as an import does: the thread field holds the thread ID, and the
    first rollup entry is a real ``Import`` entry (``Thread:`` and ``Covers messages``
    lines) covering the issue's ``covers`` first messages (all when None)."""
    # lazy: the import flow's entry format loads only when the demo workspace is built
    from mailtriage.application.flows import linking
    from mailtriage.application.flows.importer import import_entry

    # lazy: the tracker contract loads only when the demo workspace is built
    from mailtriage.trackers.contract import EditRequest

    for issue in DEMO_ISSUES + (QUEUE_ISSUES if queue else []):
        fields = dict(issue["fields"])
        rollup = list(issue["rollup"])
        found = (threads or {}).get(issue["title"])
        if found is not None:
            thread_id, thread = found
            fields[linking.THREAD_FIELD] = str(thread_id)
            covered = replace(thread, messages=thread.messages[:issue["covers"]])
            date, user, _action, _text = rollup[0]
            rollup[0] = (date, user, linking.IMPORT_ACTION, import_entry(covered, thread_id, str(thread_id)))
        body = "\n\n".join(f"### {heading}\n\n{value}" if value else f"### {heading}\n"
                           for heading, value in fields.items()) + "\n"
        created = tracker.create(issue["title"], body, labels=issue["labels"])
        for date, user, action, text in rollup:
            tracker.rollup_append(created["id"], action, text, user=user, now=date)
        if issue.get("assignees"):
            tracker.edit(created["id"], EditRequest(add_assignees=list(issue["assignees"])))
        if issue["close"]:
            tracker.close(created["id"], issue["close"])


def demo_threads(config) -> dict:
    """The demo archive's threads of the filed issues: root subject -> (ThreadId, Thread),
    read through the project's mbox backend (``config`` is the demo project's)."""
    # lazy: the mail backends load only when the demo workspace is built
    from mailtriage.backends.registry import SourceSet

    source = SourceSet(config).backends["mbox"]
    wanted = {issue["title"] for issue in DEMO_ISSUES + QUEUE_ISSUES}
    found = {}
    for summary in source.list_recent_threads(None, datetime(2026, 1, 1, tzinfo=timezone.utc)):
        if summary.subject in wanted:
            found[summary.subject] = (summary.thread_id, source.read_thread(summary.thread_id))
    return found


def make_demo_tracker(config, folder: Path):
    """A local-files tracker with the demo issues, in a new git repository at ``folder``."""
    # lazy: the trackers load when the demo's tracker is built, not when the demo starts
    from mailtriage.trackers.contract import Policy
    from mailtriage.trackers.localfiles import LocalFilesTracker

    folder.mkdir(parents=True, exist_ok=True)
    _git(folder, "init", "-q")
    root = folder / "security-tracker"
    tracker = LocalFilesTracker(root, Policy.from_config(config), user="demo")
    tracker.init(str(config.get("tracker.prefix") or "SEC"), access_restricted=True)
    # writes need the descriptor committed (the guard reads HEAD, not the file on disk)
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "demo tracker descriptor")
    file_demo_issues(tracker)
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "demo tracker")
    return tracker
