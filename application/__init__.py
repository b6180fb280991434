"""The application layer: what the command line and the terminal UI both call, and nothing else.

It owns the opened project and its sources (:mod:`.project`), the listing window
(:mod:`.window`), the table from operation to backend call (:mod:`.operations`), one
object per triage flow (:mod:`.flows`), personal accounts (:mod:`.accounts`) and the
errors (:mod:`.errors`). It imports no user interface.

This module is the façade of ``cli/`` and ``tui/``: it exports exactly the names they use
(tests/application/test_facade.py fails on an export neither uses), so they never import
``backends/`` or ``trackers/`` themselves (an import-linter contract keeps it so). It
re-exports the contract's types, never a concrete adapter: what a front end needs of one is
an application function (``flush_listing_caches`` rather than the IMAP summary cache).

Two views of one table (harlequin's pattern, and Textual's ``textual.widgets``):

* for a type checker and an editor, the static imports under ``TYPE_CHECKING`` below, so
  every name has its real type (``import x as x``: an explicit re-export);
* at run time, each name loads on first use (PEP 562 ``__getattr__``) from ``_EXPORTS``:
  ``mailtriage --version`` or ``mailtriage tracker`` on a local-files tracker would otherwise
  load every backend, the trackers and the flows, about ten times the command line's own
  import time (measured with ``python -X importtime``; tests/tui/test_startup_imports*.py).

The test checks the two views name the same objects; add a name to both.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # -- the application layer itself
    from mailtriage.application.attachments import AttachmentSet as AttachmentSet
    from mailtriage.application.attachments import folder_problem as attachment_folder_problem
    from mailtriage.application.attachments import hex_lines as hex_lines
    from mailtriage.application.attachments import run_command as run_command
    from mailtriage.application.build import trackers_installed as trackers_installed
    from mailtriage.application.cases import case_record as case_record
    from mailtriage.application.cases import modes_database as modes_database
    from mailtriage.application.dates import HEADINGS as DATE_HEADINGS
    from mailtriage.application.dates import shown_date as shown_date
    from mailtriage.application.errors import UsageError as UsageError
    from mailtriage.application.crypto import ON_DISK_EDITOR_NOTE as ON_DISK_EDITOR_NOTE
    from mailtriage.application.crypto import editor_folder as editor_folder
    from mailtriage.application.location import project_dir as project_dir
    from mailtriage.application.overview import ThreadStatus as ThreadStatus
    from mailtriage.application.project import flush_listing_caches as flush_listing_caches
    from mailtriage.application.queue import QueueState as QueueState
    from mailtriage.application.queue import queue_span as queue_span
    from mailtriage.application.raw_message import run_pipe as run_pipe
    from mailtriage.application.service import Service as Service
    from mailtriage.application.window import parse_since as parse_since
    # -- mail: the contract's types and errors
    from mailtriage.backends.contract import ALL_OPS as ALL_OPS
    from mailtriage.backends.contract import Address as Address
    from mailtriage.backends.contract import Draft as Draft
    from mailtriage.backends.contract import Message as Message
    from mailtriage.backends.contract import Op as Op
    from mailtriage.backends.contract import Thread as Thread
    from mailtriage.backends.contract import ThreadId as ThreadId
    from mailtriage.backends.contract import ThreadSummary as ThreadSummary
    from mailtriage.backends.errors import ConnectionLost as ConnectionLost
    from mailtriage.backends.errors import MailError as MailError
    from mailtriage.backends.errors import NotSupported as NotSupported
    from mailtriage.backends.errors import MandatoryBackendUnavailable as MandatoryBackendUnavailable
    from mailtriage.backends.errors import NoBackendAvailable as NoBackendAvailable
    from mailtriage.backends.errors import Unavailable as Unavailable
    from mailtriage.backends.mailbox_contract import FolderOrder as FolderOrder
    from mailtriage.backends.mailbox_contract import MailFolder as MailFolder
    from mailtriage.backends.mailbox_contract import MailHeader as MailHeader
    from mailtriage.backends.mailbox_contract import MailPage as MailPage
    from mailtriage.backends.resolution import Resolution as Resolution
    from mailtriage.backends.search import SearchPage as SearchPage
    from mailtriage.backends.security_cc import CcResolution as CcResolution
    from mailtriage.backends.summary_wire import PackedSummaries as PackedSummaries
    from mailtriage.backends.summary_wire import pack_summaries as pack_summaries
    # -- trackers
    from mailtriage.trackers import rollup as rollup
    from mailtriage.trackers.contract import CLOSE_REASONS as CLOSE_REASONS
    from mailtriage.trackers.contract import REFUSED_OPS as REFUSED_OPS
    from mailtriage.trackers.contract import STATES as STATES
    from mailtriage.trackers.contract import EditRequest as EditRequest
    from mailtriage.trackers.contract import refused_op as refused_op
    from mailtriage.trackers.errors import TrackerError as TrackerError
    from mailtriage.trackers.fields import get_field as get_field
    from mailtriage.trackers.fields import sections as sections
    from mailtriage.trackers.fields import split_lines as split_lines
    # -- flows' own types, for the front ends that show them
    from mailtriage.application.flows.alerts import MIN_POLL_GAP_SECONDS as MIN_POLL_GAP_SECONDS
    from mailtriage.application.flows.alerts import POLL_GAP_FACTOR as POLL_GAP_FACTOR
    from mailtriage.application.flows.alerts import NewReportPoller as NewReportPoller
    from mailtriage.application.flows.alerts import PollOutcome as PollOutcome
    from mailtriage.application.flows.alerts import run_poll_loop as run_poll_loop
    from mailtriage.application.flows.compose import ComposeForm as ComposeForm
    from mailtriage.application.flows.compose import editor_text as editor_text
    from mailtriage.application.flows.compose import read_editor_text as read_editor_text
    from mailtriage.application.flows.organize import outcome_lines as outcome_lines
    from mailtriage.application.flows.proposals import ApplyReport as ApplyReport
    from mailtriage.application.flows.proposals import BlockedBy as BlockedBy
    from mailtriage.application.flows.proposals import Proposal as Proposal
    from mailtriage.application.flows.proposals import confirm_interactively as confirm_interactively
    from mailtriage.application.flows.templates import receipt_body as receipt_body
    # -- the one inert-text module
    from mailtriage.core.inert import json_dumps as json_dumps
    from mailtriage.core.inert import sender_label as sender_label
    from mailtriage.core.inert import terminal_text as terminal_text
    # -- the MAS modes endpoint (mailtriage modes …)
    from mailtriage.modes.config import endpoint_token as endpoint_token
    from mailtriage.modes.config import load_config as load_modes_config
    from mailtriage.modes.config import mode_tokens as mode_tokens
    from mailtriage.modes.config import token_hint as token_hint
    from mailtriage.modes.server import ModesServer as ModesServer
    from mailtriage.modes.server import serve_forever as serve_forever
    from mailtriage.modes.store import Store as Store
    from mailtriage.modes.store import StoreError as StoreError

# name -> "module" (same name there) or ("module", "name there")
_EXPORTS: dict[str, str | tuple[str, str]] = {}


def _export(module: str, *names: str, **renamed: str) -> None:
    targets = {name: module for name in names} | {name: (module, original) for name, original in renamed.items()}
    for name, target in targets.items():
        # One name, one thing: a second module exporting the same name would shadow the first.
        if _EXPORTS.get(name, target) != target:
            raise ImportError(f"mailtriage.application exports {name!r} from two places: {_EXPORTS[name]} and {target}")
        _EXPORTS[name] = target


# -- the application layer itself
_export("mailtriage.application.errors", "UsageError")
_export("mailtriage.application.attachments", "AttachmentSet", "hex_lines", "run_command",
        attachment_folder_problem="folder_problem")
_export("mailtriage.application.raw_message", "run_pipe")
_export("mailtriage.application.window", "parse_since")
_export("mailtriage.application.project", "flush_listing_caches")
_export("mailtriage.application.location", "project_dir")
_export("mailtriage.application.build", "trackers_installed")
_export("mailtriage.application.service", "Service")
# the search page from where it lives: importing it loads no backend (the thread list
# imports it at start-up); the search itself is the service's
_export("mailtriage.backends.search", "SearchPage")
_export("mailtriage.application.crypto", "ON_DISK_EDITOR_NOTE", "editor_folder")
_export("mailtriage.application.overview", "ThreadStatus")
_export("mailtriage.application.queue", "QueueState", "queue_span")
_export("mailtriage.application.cases", "case_record", "modes_database")
_export("mailtriage.application.dates", "shown_date", DATE_HEADINGS="HEADINGS")
# -- mail: the contract's types and errors
_export("mailtriage.backends.contract", "ALL_OPS", "Op", "Thread", "ThreadId", "ThreadSummary", "Message", "Draft",
        "Address")
_export("mailtriage.backends.errors", "MailError", "NotSupported", "Unavailable", "ConnectionLost",
        "MandatoryBackendUnavailable", "NoBackendAvailable")
_export("mailtriage.backends.mailbox_contract", "MailHeader", "MailFolder", "MailPage", "FolderOrder")
_export("mailtriage.backends.summary_wire", "pack_summaries", "PackedSummaries")
_export("mailtriage.backends.resolution", "Resolution")
_export("mailtriage.backends.security_cc", "CcResolution")
# -- trackers
_export("mailtriage.trackers.contract", "CLOSE_REASONS", "STATES", "REFUSED_OPS", "EditRequest", "refused_op")
_export("mailtriage.trackers.errors", "TrackerError")
_export("mailtriage.trackers.fields", "get_field", "sections", "split_lines")
_export("mailtriage.trackers", rollup="rollup")
# -- flows' own types, for the front ends that show them
_export("mailtriage.application.flows.proposals", "ApplyReport", "BlockedBy", "Proposal", "confirm_interactively")
_export("mailtriage.application.flows.alerts", "NewReportPoller", "PollOutcome", "run_poll_loop",
        "MIN_POLL_GAP_SECONDS", "POLL_GAP_FACTOR")
_export("mailtriage.application.flows.organize", "outcome_lines")
_export("mailtriage.application.flows.templates", "receipt_body")
_export("mailtriage.application.flows.compose", "ComposeForm", "editor_text", "read_editor_text")
# -- the one inert-text module
_export("mailtriage.core.inert", "terminal_text", "json_dumps", "sender_label")
# -- the MAS modes endpoint (mailtriage modes …)
_export("mailtriage.modes.config", "endpoint_token", "mode_tokens", "token_hint", load_modes_config="load_config")
_export("mailtriage.modes.server", "ModesServer", "serve_forever")
_export("mailtriage.modes.store", "Store", "StoreError")

__all__ = sorted(_EXPORTS)

if not TYPE_CHECKING:  # a type checker reads the imports above; an unknown name is its error, not Any

    def __getattr__(name: str) -> Any:
        target = _EXPORTS.get(name)
        if target is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        module, original = (target, name) if isinstance(target, str) else target
        # __import__, not importlib.import_module: the same import, but ``python -X importtime``
        # lists it (import_module's pure-Python path is not logged, so a lazy name's cost showed
        # up as the self time of whichever module first touched it).
        __import__(module)
        loaded = sys.modules[module]
        try:
            value = getattr(loaded, original)
        except AttributeError:  # a submodule re-exported by name (trackers.rollup)
            __import__(f"{module}.{original}")
            value = sys.modules[f"{module}.{original}"]
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
