"""The session's queue calls: the team's triage queue, claims and releases (blocking; worker threads only).

Part of the app's Session (in the session module), kept in a module of its own like the compose
calls. The queue is read from the list and the tracker (``application.build_queue``) at an
instant the session names (:meth:`QueueCalls.queue_now`: the wall clock, or the demo's pinned
"now" so the demo's queue never ages). A claim or a release is a proposal the user confirms,
written as the tracker's own user (``tracker.user``, else what the tracker says it writes as).
Uses the session's ``demo``, ``opened``, ``open_tracker``, ``_lock`` and ``_tracker_lock``.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import mailtriage.application as application
from mailtriage.tui.session_lock import SessionLock

if TYPE_CHECKING:
    from mailtriage.application import Project, Proposal
    from mailtriage.application.queue import Queue
    from mailtriage.core.projectconfig import ProjectConfig

__all__ = ["QueueCalls"]


class QueueCalls:
    # What the session holds (declared for the type checker; the Session sets them).
    demo: bool
    config: ProjectConfig | None
    project: Project | None
    _lock: SessionLock
    _tracker_lock: threading.RLock

    if TYPE_CHECKING:
        @property
        def opened(self) -> Project: ...

        def open_tracker(self) -> Any: ...

    def queue_now(self) -> datetime:
        """The instant the queue is measured at: now, or the demo's pinned now (``mailtriage.demo``)."""
        if self.demo:
            from mailtriage.demo import demo_now  # why: the demo's clock loads with a demo run only

            return demo_now()
        return datetime.now(timezone.utc)

    def queue(self, now: datetime) -> "Queue":
        """The queue of the project's list in its window at ``now`` (reads the list and the tracker;
        a tracker that cannot be opened is a warning of the queue, not a failure)."""
        with self._lock, self._tracker_lock:
            return application.build_queue(self.opened, now=now)

    def queue_user(self) -> str:
        """Who claims here: ``tracker.user``, else the name the tracker writes as (as the CLI);
        "" when neither can be told (no tracker)."""
        configured = self.config.get("tracker.user") if self.config is not None else None
        if configured:
            return str(configured)
        tracker = self.project.tracker if self.project is not None else None
        with self._tracker_lock:
            return tracker.default_user() if tracker is not None else ""

    def queue_pull(self) -> str:
        """Bring a local-files tracker's working copy up to date (fetch, fast-forward; svn update),
        so the queue shows the colleagues' claims; what was done, in words."""
        tracker = self.open_tracker()
        with self._tracker_lock:
            return str(application.sync_tracker(tracker)["detail"])

    def propose_claim(self, issue: str) -> "Proposal":
        """Make this user the owner (assignee) of ``issue``: a proposal, nothing written yet
        (empty, with ``facts["holder"]``, when someone else holds it)."""
        tracker = self.open_tracker()
        with self._tracker_lock:
            return application.propose_claim(tracker, issue, config=self.config)

    def propose_release(self, issue: str) -> "Proposal":
        """Remove this user from the assignees of ``issue``: a proposal, nothing written yet."""
        tracker = self.open_tracker()
        with self._tracker_lock:
            return application.propose_release(tracker, issue, config=self.config)
