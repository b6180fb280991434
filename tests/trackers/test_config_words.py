"""A tracker's configuration error says in words what is missing and where (issue 35 §6:
the app's tracker pane showed "tracker.github.repo: is None")."""

from __future__ import annotations

import pytest

from mailtriage.core.projectconfig import ConfigError, load_project
from mailtriage.trackers.registry import open_tracker
from tests.core.helpers import write_project


def refused(tmp_path, tracker: dict) -> str:
    project = write_project(tmp_path / "p", [("mbox", "primary", "yes")],
                            {"mail_sources": {"mbox": {"path": "list.mbox"}}, "tracker": tracker})
    with pytest.raises(ConfigError) as caught:
        open_tracker(load_project(project))
    return str(caught.value)


@pytest.mark.parametrize("tracker, key, says", [
    ({"platform": "github"}, "tracker.github.repo",
     "is not set: project.md's Configuration block needs a repo: line under tracker: github:"),
    ({"platform": "github", "github": {"repo": None}}, "tracker.github.repo",
     "is empty: repo: under tracker: github: in the Configuration block has no value"),
    ({"platform": "github", "github": {"repo": "  "}}, "tracker.github.repo",
     "is empty: repo: under tracker: github: in the Configuration block has no value"),
    ({"platform": "local-files"}, "tracker.local.path",
     "is not set: project.md's Configuration block needs a path: line under tracker: local:"),
    ({"platform": "jira"}, "tracker.jira.url",
     "is not set: project.md's Configuration block needs a url: line under tracker: jira:"),
    ({"platform": "jira", "jira": {"url": "https://jira.example.org"}}, "tracker.jira.project",
     "is not set: project.md's Configuration block needs a project: line under tracker: jira:"),
])
def test_a_missing_or_empty_tracker_key_is_said_in_words(tmp_path, tracker, key, says):
    text = refused(tmp_path, tracker)
    assert f"project.md: {key}: {says} (valid: " in text
    assert "None" not in text and "''" not in text


def test_a_wrong_tracker_value_is_still_quoted(tmp_path):
    text = refused(tmp_path, {"platform": "github", "github": {"repo": "acme"}})
    assert "tracker.github.repo: is 'acme' (valid: owner/name of the private tracker, e.g. acme/security)" in text
