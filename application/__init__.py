"""The application layer: what the command line and the terminal UI both call, and nothing else.

It owns the opened project and its sources (:mod:`.project`), the listing window
(:mod:`.window`), the table from operation to backend call (:mod:`.operations`), one
object per triage flow (:mod:`.flows`), personal accounts (:mod:`.accounts`) and the
errors (:mod:`.errors`). It imports no user interface.

Every type a front end shows or catches is re-exported here, so ``cli/`` and ``tui/``
never import ``backends/`` or ``trackers/`` themselves (an import-linter contract keeps
it so). Names load on first use (PEP 562 ``__getattr__``): ``mailtriage --version`` or
``mailtriage tracker`` on a local-files tracker would otherwise load every backend, the
trackers and the flows, about ten times the command line's own import time (measured
with ``python -X importtime``).
"""

from __future__ import annotations

import sys
from typing import Any

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
_export("mailtriage.application.errors", "ApplicationError", "UsageError", "AttachmentError")
_export("mailtriage.application.attachments", "AttachmentSet", "AttachmentView", "hex_lines", "looks_like_text",
        "run_command", "command_argv", "VIEW_LIMIT", attachments_for_source="for_source",
        attachments_for_mailbox="for_mailbox", attachment_folder_problem="folder_problem")
_export("mailtriage.application.raw_message", "PipeResult", "run_pipe", raw_for_source="for_source",
        raw_for_mailbox="for_mailbox")
_export("mailtriage.application.window", "parse_since", "configured_since")
_export("mailtriage.application.operations", "OpArgs", "operation_call", "limitable")
_export("mailtriage.application.project", "Project", "ListEntry")
_export("mailtriage.application.location", "project_dir")
_export("mailtriage.application.build", "trackers_installed")
_export("mailtriage.application.flows", "ImportFlow", "ReplyFlow", "SyncFlow", "PublishFlow", "OrganizeFlow",
        "SweepFlow", "SweepRequest", "PollFlow", "ComposeFlow", "OutgoingRule",
        "ComposeRoute", "route_compose")
_export("mailtriage.workflows.security_thread", "Verdict")
_export("mailtriage.application.accounts", "Mailboxes")
# the search types from where they live: importing them loads no backend (the thread list
# imports them at start-up); the search itself from the application's module
_export("mailtriage.backends.search", "SearchField", "SearchPage", "SearchRequest")
_export("mailtriage.application.list_read", "NoList", "unconfigured_list")
_export("mailtriage.application.search", "SearchResult",
        "search_request", "search_project", "search_mailbox", "search_account", "source_can_search")
_export("mailtriage.application.overview", "ThreadStatus", "thread_status", "filed_issue", "issue_thread")
_export("mailtriage.application.crypto", "KeyImportFlow", "PgpSupport")
_export("mailtriage.application.cases", "case_record", "modes_database")
# -- mail: the contract's types and errors
_export("mailtriage.backends.contract", "ALL_OPS", "Op", "Thread", "ThreadId", "ThreadSummary", "Message",
        "DraftRequest", "MailSource", "SourceFeatures", "Draft")
_export("mailtriage.backends.errors", "MailError", "NotSupported", "Unavailable", "SignInNeeded", "BackendFailure",
        "ConnectionLost", "MandatoryBackendUnavailable", "NoBackendAvailable", "NoBackendReachable",
        "DraftAlreadyPending", "SendRefused")
_export("mailtriage.backends.mailbox_contract", "MailQuery", "MailHeader", "MailFolder", "MailPage")
_export("mailtriage.backends.registry", "SourceSet", "Dispatch", "open_mailbox")
_export("mailtriage.backends.summary_wire", "pack_summaries", "unpack_summaries", "PackedSummaries")
_export("mailtriage.backends.imap.summary_cache", flush_summary_caches="flush_all")
_export("mailtriage.backends.resolution", "Resolution")
_export("mailtriage.backends.security_cc", "CcResolution", "configured_address", "resolve_security_cc")
_export("mailtriage.backends.imap.account", "load_account", "password_key", "smtp_password_key")
_export("mailtriage.backends.imap.adapter", "ImapMailbox")
_export("mailtriage.backends.gmail.account", "GoogleAccount", "token_key")
_export("mailtriage.backends.gmail.adapter", "GmailMailbox")
_export("mailtriage.backends.gmail.auth", "GoogleSignIn")
_export("mailtriage.backends.microsoft.account", "MicrosoftAccount")
_export("mailtriage.backends.microsoft.adapter", "GraphMailbox")
_export("mailtriage.backends.microsoft.auth", "MicrosoftSignIn", "forget_cache")
# -- trackers
_export("mailtriage.trackers.contract", "CLOSE_REASONS", "STATES", "REFUSED_OPS", "EditRequest", "Tracker",
        "TrackerFeatures", "refused_op")
_export("mailtriage.trackers.errors", "NotFound", "Refused", "TrackerError", "MalformedIssue",
        TrackerUsageError="UsageError", TrackerBackendError="BackendError")
_export("mailtriage.trackers.registry", "open_tracker")
_export("mailtriage.trackers.fields", "get_field", "sections", "split_lines")
_export("mailtriage.trackers", rollup="rollup")
_export("mailtriage.application.dates", "shown_date", DATE_HEADINGS="HEADINGS")
# -- flows' own types, for the front ends that show them
_export("mailtriage.workflows.proposals", "ApplyReport", "Blocked", "BlockedBy", "Proposal", "confirm_interactively")
_export("mailtriage.workflows.alerts", "NewReportPoller", "PollOutcome", "poll_seconds", "run_poll_loop",
        "MIN_POLL_GAP_SECONDS", "POLL_GAP_FACTOR")
_export("mailtriage.workflows.sync", "Picks")
_export("mailtriage.workflows.importer", "propose_import")
_export("mailtriage.workflows.organize", "propose_organize", "outcome_lines")
_export("mailtriage.workflows.publish", "propose_publish")
_export("mailtriage.workflows.reply", "propose_reply")
_export("mailtriage.workflows.sync", "collect_sync", "propose_sync")
_export("mailtriage.workflows.templates", "receipt_body", "Identity", "identity")
_export("mailtriage.workflows.compose", "ComposeForm", "DraftAttachmentError", "editor_text", "read_editor_text",
        "default_reply_kind", "KIND_TITLES", "FORWARD_INLINE", "FORWARD_ATTACHED", "refused_personal")
# -- configuration and the one inert-text module
_export("mailtriage.core.errors", "ConfigError", "ProjectFileError")
_export("mailtriage.core.projectconfig", "ProjectConfig", "load_project")
_export("mailtriage.core.secrets", "SecretMissing", "SecretUnavailable", "KeyringUnavailable", "SecretCommandFailed")
_export("mailtriage.core.safe_names", "safe_name", "SavedFile", "SaveError")
_export("mailtriage.core", inert="inert")
_export("mailtriage.core.inert", "terminal_line", "terminal_text", "json_dumps", "sender_label", "sender_mismatch",
        "has_hidden_characters", "marker", "pattern", "clean_line", "clean_lines", "header_text")
# -- the MAS modes endpoint (mailtriage modes …)
_export("mailtriage.modes.config", "endpoint_token", "mode_tokens", "token_hint", load_modes_config="load_config")
_export("mailtriage.modes.server", "ModesServer", "serve_forever")
_export("mailtriage.modes.store", "Store", "StoreError")

__all__ = sorted(_EXPORTS)


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
    except AttributeError:  # a submodule re-exported by name (trackers.rollup, core.inert)
        __import__(f"{module}.{original}")
        value = sys.modules[f"{module}.{original}"]
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
