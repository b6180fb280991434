"""The app ends when its terminal hangs up (see :func:`watch_terminal`)."""

from __future__ import annotations

import os
import signal
import termios
import threading
import time

#: How often the terminal is checked.
TERMINAL_CHECK_SECONDS = 1.0
#: The exit code when the terminal hung up (128 + SIGHUP, as a shell reports a hangup).
TERMINAL_GONE = 129


def watch_terminal(fd: int) -> None:
    """Watch the terminal ``fd`` from a daemon thread for as long as the process lives."""
    threading.Thread(target=_watch, args=(fd,), name="terminal-watch", daemon=True).start()


def _watch(fd: int) -> None:
    """End the process when its terminal hangs up (an SSH connection dropped, a terminal
    window closed) and no SIGHUP ended it: Textual's output thread dies on the closed
    terminal, its input thread then spins at full CPU and the main loop blocks on the full
    output queue, for as long as the process lives, with its server connections open.
    Nothing can be shown any more: the process gets the SIGHUP it missed, and where that is
    ignored (nohup) it ends with 129 (128 + SIGHUP, as a shell reports a hangup)."""
    while True:
        time.sleep(TERMINAL_CHECK_SECONDS)
        try:
            termios.tcgetattr(fd)
        except (termios.error, OSError):
            break
    os.kill(os.getpid(), signal.SIGHUP)  # the default action ends the process; nohup ignores it
    time.sleep(2 * TERMINAL_CHECK_SECONDS)
    os._exit(TERMINAL_GONE)
