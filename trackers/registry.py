"""Which tracker backend a project uses: ``tracker.platform`` in project.md.

Backends are imported only when chosen, so ``mailtriage tracker`` on local-files never
loads httpx. Configuration keys (all under ``tracker.``):

* ``platform``: ``github`` (default), ``local-files`` or ``jira``;
* ``labels``, ``milestones``, ``assignees``, ``close_reasons``: the declared values;
* ``user``: the name rollup entries and local comments carry by default;
* local-files: ``local.path`` (tracker folder, relative to the project folder), ``local.url_template``;
* github: ``github.repo`` (``owner/name``), ``github.api_url``;
* jira: ``jira.url``, ``jira.project``, ``jira.api_version`` (2 or 3), ``jira.security_level``,
  ``jira.issue_type``, ``jira.auth`` (``bearer`` or ``basic``), ``jira.email``, ``jira.resolutions``.
"""

from __future__ import annotations

from typing import Any

from mailtriage.core.errors import ConfigError
from mailtriage.trackers.contract import Policy, Tracker

PLATFORMS = ("github", "local-files", "jira")


def open_tracker(config: Any) -> Tracker:
    """Build the project's tracker. Raises ConfigError naming the file and key."""
    platform = str(config.get("tracker.platform") or "github")
    policy = Policy.from_config(config)
    if platform == "local-files":
        # Lazy, one platform each: only the chosen backend loads (httpx only for github and jira).
        from mailtriage.trackers.localfiles import LocalFilesTracker

        path = config.get("tracker.local.path")
        if not path:
            raise config.refuse("tracker.local.path", "the tracker folder, relative to the project folder")
        verified = config.get("tracker.local.verified_remotes")
        if verified is not None and (not isinstance(verified, list)
                                     or not all(isinstance(v, str) and v.strip() for v in verified)):
            raise ConfigError(config.file, "tracker.local.verified_remotes", "must be a list of remote URLs",
                              "the URLs `doctor` prints, each one you checked only the security team can read")
        return LocalFilesTracker(config.resolve_path(str(path)), policy,
                                 url_template=config.get("tracker.local.url_template"),
                                 user=config.get("tracker.user"),
                                 github_api_url=config.get("tracker.github.api_url"),
                                 verified_remotes=verified or ())
    if platform == "github":
        # lazy: only the configured platform's tracker module loads
        from mailtriage.trackers.github import GitHubTracker

        return GitHubTracker.from_config(config, policy)
    if platform == "jira":
        # lazy: only the configured platform's tracker module loads
        from mailtriage.trackers.jira import JiraTracker

        return JiraTracker.from_config(config, policy)
    raise ConfigError(config.file, "tracker.platform", f"unknown platform {platform!r}", ", ".join(PLATFORMS))
