"""``mailtriage mail save-attachments KIND:ID --to DIR [--name NAME] [--yes]``.

Reads the thread through the resolution rule (or ``--backend``), proposes saving its
attachments (or the one ``NAME`` names: a real name, a safe name or ``<message>.<n>``)
into ``DIR`` under safe names, shows the proposal on stderr, and writes after
confirmation (``--yes`` or ``y`` at the prompt). stdout gets one JSON document: what was
written (real name, saved path, size, sha256), the backend and the resolution. Real names
are untrusted mail text: JSON escapes their control, bidi and zero-width characters.

A part a size cap cut (the mbox archive's ``max_message_bytes``) is never saved: it is listed
with ``truncated_at`` and under ``refused`` with the reason ("truncated at N bytes"), and the
proposal says so.

Exit codes as every ``mail`` command: 0 ok (also "not confirmed, nothing written" and "no
attachments"), 2 usage (``--to`` is not a folder, is another user's or others can write it,
``NAME`` names nothing), 3 the backend cannot read message parts, 4 a backend failed, a file
could not be written, or every selected part was cut by a size cap.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import mailtriage.application as application
from mailtriage.application.errors import UsageError
from mailtriage.cli.exit_codes import MAIN, ExitCode, exit_code
from mailtriage.cli.output import ask_line, emit, err

OP = "save-attachments"


def register(op_parser) -> None:
    """The ``mail save-attachments`` sub-command (``op_parser`` is the ``mail`` command's factory)."""
    q = op_parser(OP, "save a thread's attachments (or one) into a folder under safe names, after confirmation")
    q.add_argument("thread_id", help="KIND:VALUE, e.g. msgid:<root@example.org>")
    q.add_argument("--to", required=True, metavar="DIR", help="the folder to save into (must exist)")
    q.add_argument("--name", dest="attachment_name", metavar="NAME",
                   help="only the attachment with this real name, safe name or key (<message>.<n>)")
    q.add_argument("--yes", action="store_true", help="confirm without asking (the proposal is still printed)")




def run(args: argparse.Namespace, service: application.Service) -> int:
    Op = application.Op
    abort = service.mandatory_abort(Op.READ_THREAD)
    if abort is not None:
        err(abort.aborted or "")
        emit({"op": "save_attachments", "backend": None, "aborted": abort.aborted, "resolution": abort.to_json(),
              "written": False, "saved": []})
        return ExitCode.FAILED
    folder = Path(args.to).expanduser()
    if not folder.is_dir():
        raise UsageError(f"--to {folder}: not an existing folder")
    problem = application.attachment_folder_problem(folder)
    if problem:
        raise UsageError(f"--to {problem}")
    thread_id = service.thread_id(args.thread_id, args.backend)
    try:
        read = service.read_thread(thread_id, backend=args.backend)
    except application.NoBackendAvailable as exc:
        err(f"nothing written: {exc}")
        emit({"op": "save_attachments", "backend": None, "skipped": str(exc),
              "resolution": service.resolution(Op.READ_THREAD).to_json(), "written": False, "saved": []})
        return exit_code(exc, MAIN)
    attachments = service.attachments(read.value, backend=read.resolution.chosen)
    items = attachments.select(args.attachment_name)
    proposal = attachments.propose_save(folder, items)
    doc = {"op": "save_attachments", "backend": read.resolution.chosen, "resolution": read.resolution.to_json(),
           "thread_id": str(read.value.thread_id), "to": str(folder),
           "attachments": [item.to_json() for item in attachments.items],
           "refused": proposal.facts.get("refused", [])}  # parts a size cap cut: never saved
    if proposal.blocked:
        sys.stderr.write(proposal.render_text() + "\n")
        err(f"nothing written: {proposal.blocked.text}")
        emit({**doc, "written": False, "saved": [], "proposal": proposal.to_json()})
        return ExitCode.FAILED
    if proposal.empty:
        err("nothing to save: the thread has no attachments")
        emit({**doc, "written": False, "saved": []})
        return ExitCode.OK
    sys.stderr.write(proposal.render_text() + "\n")
    if not application.confirm_interactively(proposal, yes=args.yes, ask=ask_line):
        err("not confirmed: nothing written")
        emit({**doc, "written": False, "saved": [], "proposal": proposal.to_json()})
        return ExitCode.OK
    report = service.apply(proposal)
    saved = [value.to_json() for _summary, value in report.written]
    emit({**doc, "written": report.ok, "saved": saved, "report": report.to_json()})
    if not report.ok:
        err(f"saving stopped: {report.failed[0]}: {report.failed[1]}")
        return ExitCode.FAILED
    return ExitCode.OK
