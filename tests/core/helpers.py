"""Helpers for writing project.md files in tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

import yaml

HEADER = "| Backend | Role | Mandatory | Notes |\n|---|---|---|---|\n"


def write_project(folder: Path, rows: list[tuple[str, str, str]] | None = None, config: dict | None = None,
                  raw_config: str | None = None, title: str = "Test project") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    parts = [f"# {title}\n\nA project for tests.\n"]
    if rows is not None:
        table = HEADER + "".join(f"| `{n}` | {r} | {m} | notes for {n} |\n" for n, r, m in rows)
        parts.append("## Mail sources\n\n" + table)
    if raw_config is not None:
        parts.append("## Configuration\n\n```yaml\n" + textwrap.dedent(raw_config) + "```\n")
    elif config is not None:
        parts.append("## Configuration\n\n```yaml\n" + yaml.safe_dump(config, sort_keys=False) + "```\n")
    (folder / "project.md").write_text("\n".join(parts), encoding="utf-8")
    return folder
