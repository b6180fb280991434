"""A message's raw bytes (the raw view and ``|``) and piping them to the user's command.

The bytes are read through the backend that read the thread (a project source) or the
personal account's mailbox, held in memory only. :func:`run_pipe` hands them to a command
the user typed — after the user confirmed it — without a shell, on stdin, with a timeout
and a cap on what it prints; its output is returned, never interpreted.
"""

from __future__ import annotations

import subprocess
from typing import Sequence

from mailtriage.application.attachments import command_argv
from mailtriage.application.errors import UsageError
from mailtriage.backends.errors import NotSupported
from mailtriage.core.lean_dataclass import frozen_dataclass

#: What a piped command may run and print before it is stopped / cut.
PIPE_TIMEOUT = 60.0
PIPE_MAX_OUTPUT = 1024 * 1024


def for_source(project, backend: str | None, message_ref: str | None) -> bytes:
    """The raw message ``message_ref`` (a ``Message.backend_ref``) as the project's ``backend`` holds it.

    Raises:
        NotSupported: no such backend, no reference, or the backend keeps no raw message.
    """
    source = project.sources.backends.get(backend) if backend else None
    if source is None or not message_ref:
        raise NotSupported(str(backend or "(none)"), "raw_message", "no configured backend read this message")
    return source.raw_message(message_ref)


def for_mailbox(mailboxes, account_id: str, message_id: str) -> bytes:
    """The raw message ``message_id`` of a personal account."""
    return mailboxes.get(account_id).raw(message_id)


@frozen_dataclass
class PipeResult:
    argv: tuple[str, ...]
    returncode: int
    output: bytes  # stdout then stderr, cut at ``max_output``
    cut: bool


def run_pipe(command: str | Sequence[str], data: bytes, *, timeout: float = PIPE_TIMEOUT,
             max_output: int = PIPE_MAX_OUTPUT) -> PipeResult:
    """Run ``command`` (split like a shell would, never run by one) with ``data`` on stdin.

    Raises:
        UsageError: the command is empty, cannot be split, is not found, or timed out.
    """
    argv = command_argv(command)
    try:
        done = subprocess.run(argv, input=data, capture_output=True, timeout=timeout, shell=False, check=False)
    except FileNotFoundError as exc:
        raise UsageError(f"no program {argv[0]!r}") from exc
    except subprocess.TimeoutExpired as exc:
        raise UsageError(f"{argv[0]!r} did not finish within {timeout:g} s (stopped)") from exc
    except OSError as exc:
        raise UsageError(f"{argv[0]!r} could not run: {exc.strerror or exc}") from exc
    output = done.stdout + done.stderr
    return PipeResult(tuple(argv), done.returncode, output[:max_output], len(output) > max_output)
