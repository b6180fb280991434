"""Security CC resolution: steps 1–4 of the mail-source contract, as a pure function.

Only trusted configuration decides the CC; recipient overrides found in reporter
content are never an input here.
"""

from __future__ import annotations

import re
from dataclasses import field

from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.projectconfig import ConfigError, ProjectConfig

LIST_KEY = "security_list"
FALLBACK_KEY = "security_inbox.foundation_security_address"

# The documented placeholders (docs/configuration.md), matched against the whole value:
# literal template tokens, and TODO / TBD / FIXME / CHANGEME alone or followed by a note
# ("TODO: ask infra"). A word inside an address (TBD@example.org) is an address, also
# before a dash (todo-security@example.org): see _is_placeholder.
_PLACEHOLDER = re.compile(
    r"^(?:<[^<>@]*>|\{\{.*\}\}|\$\{.*\}|@@.*@@|%[A-Za-z_]+%|\[[^\]]*\])$"
    r"|^(?:TODO|TBD|FIXME|CHANGEME)(?:[\s:(\-].*)?$",
    re.IGNORECASE | re.DOTALL,
)
_ADDRESS = re.compile(r"^[^@\s<>(),;:\"\[\]]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$")


@frozen_dataclass
class CcResolution:
    security_cc: str | None
    cc_fallback: str | None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    blocked: bool = False
    list_source: str | None = None  # layer that declared security_list
    fallback_source: str | None = None  # layer that declared the fallback key

    def to_json(self) -> dict:
        return {
            "security_cc": self.security_cc,
            "cc_fallback": self.cc_fallback,
            "warnings": list(self.warnings),
            "blocked": self.blocked,
            "list_source": self.list_source,
            "fallback_source": self.fallback_source,
        }


def _is_placeholder(text: str) -> bool:
    """A documented placeholder; never a value that is one whole email address."""
    return bool(_PLACEHOLDER.search(text)) and not _ADDRESS.match(text)


def configured_address(value: object) -> str | None:
    """Trim and validate a configured address; None when unconfigured.

    Missing, null, blank, TODO and literal placeholders (``<security-list>``,
    ``{{x}}``, ``${X}``) count as unconfigured. ``<a@b.org>`` reads as ``a@b.org``.
    """
    if value is None or not isinstance(value, str):
        return None
    text = value.strip()
    if text.startswith("<") and text.endswith(">") and "@" in text:
        text = text[1:-1].strip()
    if not text or _is_placeholder(text):
        return None
    if not _ADDRESS.match(text):
        return None
    return text


def _is_unconfigured(value: object) -> bool:
    """Missing, null, blank or a documented placeholder: the key is unconfigured."""
    if value is None:
        return True
    if not isinstance(value, str):
        return False
    text = value.strip()
    return not text or _is_placeholder(text)


def _require_one_address(config: ProjectConfig, key: str, declared) -> str | None:
    """The configured address of ``declared``; None when unconfigured. A value that is
    neither unconfigured nor one address is a configuration error naming the key."""
    if declared is None or _is_unconfigured(declared.value):
        return None
    address = configured_address(declared.value)
    if address is None:
        file = declared.file if getattr(declared, "file", None) else config.file
        raise ConfigError(file, key, f"is not one email address: {declared.value!r}",
                          "one address such as security@example.org (or leave it unset / null)")
    return address


def resolve_security_cc(config: ProjectConfig) -> CcResolution:
    """Resolve the security CC once per run from the layered project configuration."""
    declared_list = config.lookup(LIST_KEY)
    list_addr = _require_one_address(config, LIST_KEY, declared_list)
    list_layer = declared_list.layer if declared_list else None
    if list_addr:
        # Step 2: a configured list wins and clears any fallback from a previous run.
        return CcResolution(list_addr, None, (), False, list_layer, None)

    why_list = _why_unconfigured(LIST_KEY, declared_list)
    # Step 3: the fallback key from the first layer that *declares* it, even if blank.
    declared_fb = config.lookup(FALLBACK_KEY)
    if declared_fb is not None:
        fallback = _require_one_address(config, FALLBACK_KEY, declared_fb)
        if fallback:
            warning = (
                f"CONFIGURATION WARNING: {why_list}; the security CC falls back to {fallback} "
                f"({FALLBACK_KEY} from {declared_fb.layer}). Set {LIST_KEY} in {config.file}."
            )
            return CcResolution(fallback, fallback, (warning,), False, list_layer, declared_fb.layer)
        why_fb = _why_unconfigured(FALLBACK_KEY, declared_fb)
        if declared_fb.layer == "project":
            why_fb += " (the project disabled the fallback, so lower layers are not consulted)"
    else:
        why_fb = f"{FALLBACK_KEY} is not set in any layer"
    # Step 4: nothing configured: block drafting, let read-only work continue.
    warning = (
        f"CONFIGURATION WARNING: no security CC can be resolved: {why_list}; {why_fb}. "
        f"Drafts are blocked until {LIST_KEY} is set in {config.file}."
    )
    return CcResolution(None, None, (warning,), True, list_layer, declared_fb.layer if declared_fb else None)


def _why_unconfigured(key: str, declared) -> str:
    if declared is None:
        return f"{key} is missing"
    value = declared.value
    if value is None:
        return f"{key} is null in {declared.layer}"
    if isinstance(value, str) and not value.strip():
        return f"{key} is blank in {declared.layer}"
    return f"{key} in {declared.layer} is not a usable address ({value!r})"


def merge_cc(existing: list[str] | tuple[str, ...], security_cc: str | None, exclude: tuple[str, ...] = ()) -> list[str]:
    """Add the security CC to a CC list, keeping order and removing duplicates (case-insensitive)."""
    out: list[str] = []
    seen = {e.lower() for e in exclude}
    for addr in list(existing) + ([security_cc] if security_cc else []):
        key = addr.strip().lower()
        if key and key not in seen:
            seen.add(key)
            out.append(addr.strip())
    return out
