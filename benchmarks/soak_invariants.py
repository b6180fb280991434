"""Soak: the state machines of issue 30 run longer than in CI, on fresh random sequences: the
app machine (tests/tui/test_app_machine.py, a real Dovecot and aiosmtpd) and the process
machines (tests/application/flows/test_process_machine.py: concurrent CLI runs on git, the GitHub and
Jira emulators and IMAP drafts). Not part of the suite.

    .venv/bin/python benchmarks/soak_invariants.py [--examples 40] [--steps 20] [--process-examples 10]

Prints the number of sequences and steps run, how many proposals were confirmed and
written, and, on a violation (security mail over SMTP, a draft for a security thread
without the CC, a write with no confirmation), the failing sequence as hypothesis prints it.
Exit status: pytest's (0 when every invariant held).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MACHINES = ["tests/tui/test_app_machine.py", "tests/application/flows/test_process_machine.py"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=40, help="sequences per machine")
    parser.add_argument("--steps", type=int, default=20, help="steps per sequence")
    parser.add_argument("--process-examples", type=int, default=10,
                        help="examples (batch lists of concurrent CLI runs) per process machine")
    args = parser.parse_args()
    env = dict(os.environ, MAILTRIAGE_MACHINE_EXAMPLES=str(args.examples), MAILTRIAGE_MACHINE_STEPS=str(args.steps),
               MAILTRIAGE_MACHINE_RANDOM="1", MAILTRIAGE_PROCESS_EXAMPLES=str(args.process_examples))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:randomly", *MACHINES],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith(("app machine:", "process machine:")) or "passed" in line or "failed" in line:
            print(line)
    if proc.returncode:  # the violation and the sequence that led to it
        print("\n".join(x for x in proc.stdout.splitlines() if x.lstrip(" |").startswith(("E ", "state.")))
              or proc.stdout[-4000:], proc.stderr[-2000:], sep="\n")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
