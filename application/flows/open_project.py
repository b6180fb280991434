"""What the flows need of the open project: a Protocol, because the project itself
(:class:`mailtriage.application.project.Project`) lives above the flows in the layers."""

from __future__ import annotations

from typing import Any, Protocol

from mailtriage.backends.contract import ThreadId
from mailtriage.backends.registry import Dispatch, SourceSet
from mailtriage.core.projectconfig import ProjectConfig
from mailtriage.trackers.contract import Tracker

__all__ = ["OpenProject"]


class OpenProject(Protocol):
    config: ProjectConfig
    sources: SourceSet

    @property
    def pgp(self) -> Any: ...

    def open_tracker(self) -> Tracker: ...

    def read_thread(self, thread_id: ThreadId, *, backend: str | None = None) -> Dispatch: ...
