"""The hostile-mail corpus of ``tests/data/hostile`` and the check every output must pass."""

from __future__ import annotations

import re
from pathlib import Path

from mailtriage.core.inert import NEUTRALIZED

CORPUS = Path(__file__).resolve().parents[1] / "data" / "hostile"

# Exactly the set of issue 20 (tab and newline are checked per sink).
_RAW = re.compile(f"[{NEUTRALIZED}]")


def cases() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(CORPUS.glob("*.eml"))}


def message_id(raw: bytes) -> str:
    m = re.search(rb"^Message-ID: (<[^\r\n]*>)", raw, re.MULTILINE)
    assert m, "every corpus case has a Message-ID"
    return m.group(1).decode()


def thread_root(raw: bytes) -> str:
    """The thread a case belongs to: the first References entry of a reply, else its own ID."""
    m = re.search(rb"^References: (<[^>\s]*>)", raw, re.MULTILINE)
    return m.group(1).decode() if m else message_id(raw)


def raw_hits(text: str) -> list[str]:
    """Every neutralized character found raw in ``text`` (as U+XXXX), for the message."""
    return sorted({f"U+{ord(c):04X}" for c in _RAW.findall(text)})


def assert_inert(text: str, where: str) -> None:
    hits = raw_hits(text)
    assert hits == [], f"{where}: raw {hits} in output"
