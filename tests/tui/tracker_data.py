"""A local-files tracker with three filed reports, for the tracker pane tests.

:func:`make_demo_tracker` makes a git repository, initialises a real local-files tracker
in it (``access_restricted: true``: the repository exists only in the test's temp dir)
and files three reports of the demo archive with their fields and status rollups,
through the tracker contract like any other write.
"""

from __future__ import annotations

import subprocess
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
            "Received": "2026-09-02",
            "Affected versions": "3.0.0 to 3.4.1",
            "CVE": "CVE-2026-41017",
            "Severity": "important",
        },
        "rollup": [
            ("2026-09-02", "praman", "Imported", "Imported from the security list; receipt sent."),
            ("2026-09-09", "mkowalczyk", "Validated", "Reproduced on 3.4.1; fix in review."),
            ("2026-10-06", "praman", "Fix released", "Fixed in 3.4.2; advisory published."),
        ],
        "close": "completed",
    },
    {
        "title": "Authentication bypass: empty bearer token accepted by the REST API with an LDAP realm",
        "labels": ["valid", "cve allocated", "embargoed", "critical"],
        "fields": {
            "Security mailing list thread": "Authentication bypass: empty bearer token accepted by the REST API "
                                            "with an LDAP realm (security@frobnicator.apache.org)",
            "Reporter": "Ana Costa <ana.costa@redteam.example.com>",
            "Received": "2026-10-12",
            "Affected versions": "3.2.0 to 3.4.2",
            "CVE": "CVE-2026-41355",
            "Severity": "critical",
        },
        "rollup": [
            ("2026-10-12", "nokafor", "Imported", "Imported from the security list; receipt sent."),
            ("2026-10-14", "dwhitfield", "Validated", "Confirmed with an LDAP realm; fix planned for 3.5.0."),
        ],
        "close": None,
    },
    {
        "title": "RCE: an administrator can upload a plugin that runs arbitrary code",
        "labels": ["invalid"],
        "fields": {
            "Security mailing list thread": "RCE: an administrator can upload a plugin that runs arbitrary code "
                                            "(security@frobnicator.apache.org)",
            "Reporter": "Wei Zhang <wei.zhang@example.net>",
            "Received": "2026-10-20",
            "Affected versions": "",
            "CVE": "",
            "Severity": "",
        },
        "rollup": [
            ("2026-10-20", "mkowalczyk", "Imported", "Imported from the security list; receipt sent."),
            ("2026-10-21", "mkowalczyk", "Not a vulnerability",
             "Administrators are trusted to install plugins (see the security model)."),
        ],
        "close": "not-planned",
    },
]


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=mailtriage demo", "-c", "user.email=demo@mailtriage.invalid",
                    "-c", "init.defaultBranch=main", *args], cwd=folder, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def make_empty_tracker(config, folder: Path):
    """An empty local-files tracker in a new git repository at ``folder`` (committed)."""
    from mailtriage.trackers.contract import Policy
    from mailtriage.trackers.localfiles import LocalFilesTracker

    folder.mkdir(parents=True, exist_ok=True)
    _git(folder, "init", "-q")
    # The repository's own identity, so the publish commits of the tests never depend
    # on the machine's git configuration.
    _git(folder, "config", "user.name", "Test Triager")
    _git(folder, "config", "user.email", "triager@example.org")
    root = folder / "security-tracker"
    tracker = LocalFilesTracker(root, Policy.from_config(config), user="demo")
    tracker.init(str(config.get("tracker.prefix") or "SEC"), access_restricted=True)
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "empty tracker")
    return tracker


def make_demo_tracker(config, folder: Path):
    """A local-files tracker with the demo issues, in a new git repository at ``folder``."""
    tracker = make_empty_tracker(config, folder)
    for issue in DEMO_ISSUES:
        body = "\n\n".join(f"### {heading}\n\n{value}" if value else f"### {heading}\n"
                           for heading, value in issue["fields"].items()) + "\n"
        created = tracker.create(issue["title"], body, labels=issue["labels"])
        for date, user, action, text in issue["rollup"]:
            tracker.rollup_append(created["id"], action, text, user=user, now=date)
        if issue["close"]:
            tracker.close(created["id"], issue["close"])
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "demo tracker")
    return tracker
