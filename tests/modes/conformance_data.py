"""The conformance data (tests/modes/conformance/*.yaml), read at collection by every worker.

With libyaml's loader (PyYAML's C extension, installed with it here): the 34 files took
0.15-0.18 CPU-s a worker through the pure-Python SafeLoader, 0.02 with CSafeLoader, the same
documents (compared equal). Without the extension, the Python loader reads the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

CONFORMANCE = Path(__file__).parent / "conformance"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(path: Path) -> Any:
    """``yaml.safe_load`` of ``path`` (UTF-8)."""
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
