"""Tracker controller: the tracker's issues into the tracker pane, and one issue opened."""

from __future__ import annotations

from textual import work

from mailtriage.tui.controllers.base import ControllerBase
from mailtriage.tui.messages import IssueFailed, TrackerFailed, TrackerIssueLoaded, TrackerLoaded
from mailtriage.tui.panes.tracker import TrackerPane, tracker_support


class TrackerController(ControllerBase):
    def on_tracker_pane_issue_chosen(self, message: TrackerPane.IssueChosen) -> None:
        self.open_issue(message.issue_id)

    def load_tracker_once(self) -> None:
        if not self.tracker.loaded:
            self.load_tracker()

    def load_tracker(self) -> None:
        if not self.session.is_open:
            return
        if tracker_support():
            return
        self.tracker.show_loading()
        self._tracker_list(self.new_request("tracker"))

    @work(thread=True, exclusive=True, group="tracker", exit_on_error=False)
    def _tracker_list(self, request: int) -> None:
        # a configuration error of the tracker is said in the pane (core.projectconfig is loaded by now)
        from mailtriage.core.projectconfig import ConfigError

        try:
            issues, problems = self.session.tracker_issues()
        except ConfigError as exc:
            # No usable tracker configuration: the pane says so; this is not an app error.
            self.post_message(TrackerLoaded(request, [], f"no tracker: {exc}", available=False))
            return
        except Exception as exc:
            self.post_message(TrackerFailed(request, "Listing the tracker failed", exc))
            return
        self.post_message(TrackerLoaded(request, issues, self.session.tracker_description, problems))

    def on_tracker_loaded(self, message: TrackerLoaded) -> None:
        if not self.is_current("tracker", message.request):
            return
        if not message.available:
            self.tracker.show_unavailable(message.description)
            return
        self.tracker.show_issues(message.issues, message.description, message.problems)
        self.select_pending_issue()  # overview: the issue s jumped to
        self.check_publish_pending()  # overview: the title marks unpublished changes

    def on_tracker_failed(self, message: TrackerFailed) -> None:
        if not self.accept_failure(self.on_tracker_failed, message):
            return
        self.tracker.show_failure(self.failure_text(message))
        self.report_failure(message)

    def open_issue(self, issue_id: str) -> None:
        self._tracker_view(self.new_request("issue"), issue_id)

    @work(thread=True, exclusive=True, group="issue", exit_on_error=False)
    def _tracker_view(self, request: int, issue_id: str) -> None:
        try:
            issue = self.session.tracker_issue(issue_id)
        except Exception as exc:
            self.post_message(IssueFailed(request, f"Reading {issue_id} failed", exc))
            return
        self.post_message(TrackerIssueLoaded(request, issue))

    def on_tracker_issue_loaded(self, message: TrackerIssueLoaded) -> None:
        if not self.is_current("issue", message.request):
            return
        self.tracker.show_issue(message.issue)

    def on_issue_failed(self, message: IssueFailed) -> None:
        if not self.accept_failure(self.on_issue_failed, message):
            return
        self.tracker.show_failure(self.failure_text(message))
        self.report_failure(message)
