"""The errors of core: the root :class:`CoreError`, and the configuration errors shared by every layer.

They live apart from the configuration reader so that a front end can name them (to
explain them, or to choose an exit code) without loading the reader and its YAML parser.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ConfigError", "CoreError", "ProjectFileError"]


class CoreError(Exception):
    """Root of every error core raises: the configuration (:class:`ConfigError`), secrets and the
    keyring, URLs that may carry a secret, the one HTTP client, saving a file. The layers above
    translate the ones that are not configuration problems at their boundary."""


class ConfigError(CoreError):
    """A configuration problem, always naming the file, the key and what is valid."""

    def __init__(self, file: Path | str, key: str, problem: str, valid: str | None = None) -> None:
        self.file = str(file)
        self.key = key
        self.problem = problem
        self.valid = valid
        text = f"{self.file}: {key}: {problem}"
        if valid:
            text += f" (valid: {valid})"
        super().__init__(text)


class ProjectFileError(ConfigError):
    """project.md itself cannot be read: missing, or not UTF-8 text."""
