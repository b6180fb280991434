"""A list read needs a list (mail-source contract, security CC resolution): "When a list
read has no configured list, skip that read with a configuration warning (or stop if
mandatory)". Without one, a backend would read its whole folder or archive as if it were
the list; the front ends ask :func:`unconfigured_list` first and skip (or stop) instead.
"""

from __future__ import annotations


from mailtriage.backends.contract import Op
from mailtriage.backends.registry import SourceSet
from mailtriage.backends.security_cc import LIST_KEY, configured_address
from mailtriage.core.lean_dataclass import frozen_dataclass


@frozen_dataclass
class NoList:
    """Why a list read does not run: ``stop`` when a mandatory backend would have read it."""

    warning: str
    stop: bool


def unconfigured_list(sources: SourceSet, given: str | None) -> NoList | None:
    """None when the read has a list: ``given`` (``--list``), else a configured
    ``security_list`` (missing, null, blank and placeholders are unconfigured)."""
    if given and given.strip():
        return None
    config = sources.config
    if configured_address(config.get(LIST_KEY)):
        return None
    stop = any(entry.mandatory and entry.name in sources.backends
               and sources.backends[entry.name].supports(Op.LIST_RECENT_THREADS) for entry in config.mail_sources)
    held = []
    for entry in config.mail_sources:
        value = config.source_settings(entry.name).get("list")
        if isinstance(value, str) and value.strip() and value.strip() not in held:
            held.append(value.strip())
    hint = "give --list ADDRESS" + (f" (the archives hold: {', '.join('--list ' + h for h in held)})" if held else "")
    outcome = "run aborted (a mandatory backend would read it)" if stop else "skipped"
    return NoList(f"CONFIGURATION WARNING: no list to read: {LIST_KEY} is not configured in {config.file} "
                  f"(missing, null, blank or a placeholder); {Op.LIST_RECENT_THREADS.value} {outcome}. "
                  f"Set {LIST_KEY}, or {hint}.", stop)
