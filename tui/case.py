"""The reading pane's Case section: the MAS case a thread belongs to, as the application
layer reads it from the modes record (application/cases.py)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from mailtriage.tui.sanitize import inert_text


def case_text(record: dict[str, Any]) -> Text:
    """The reading pane's Case section: address, each handoff with its status history; inert."""
    out = Text()
    out.append("Case ", "bold reverse")
    out.append(" ")
    out.append_text(inert_text(str(record.get("case", {}).get("address", "")), style="bold"))
    out.append("\n")
    out.append("role ", "dim")
    out.append_text(inert_text(str(record.get("role", ""))))
    out.append(" · resource ", "dim")
    out.append_text(inert_text(f"{record.get('resource_type', '')}={record.get('resource_id', '')}"))
    out.append("\n")
    handoffs = record.get("handoffs") or []
    if not handoffs:
        out.append("no handoffs yet\n", "italic")
    for handoff in handoffs:
        out.append("Handoff ", "bold")
        out.append_text(inert_text(str(handoff.get("handoff_id", ""))))
        out.append(" · mode ", "dim")
        out.append_text(inert_text(str(handoff.get("mode", "")), style="bold"))
        out.append(" · status ", "dim")
        out.append_text(inert_text(str(handoff.get("status", "")), style="bold"))
        out.append("\n")
        for status in handoff.get("statuses") or []:
            seq = status.get("seq")
            out.append("  seq ", "dim")
            out.append(f"{seq if seq is not None else '-':>3}  ")
            out.append_text(inert_text(str(status.get("status", "")), style="bold"))
            out.append("  ")
            out.append_text(inert_text(str(status.get("at", "")), style="dim"))
            out.append("  ")
            out.append_text(inert_text(f"({status.get('source', '')})", style="dim"))
            extra = {k: v for k, v in status.items() if k not in ("status", "seq", "at", "source")}
            for name, value in extra.items():
                out.append("  ")
                out.append_text(inert_text(f"{name}={value}", style="italic"))
            out.append("\n")
    out.rstrip()
    return out
