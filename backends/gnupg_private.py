"""Every private member of python-gnupg the OpenPGP backend uses, in this one module
(issue 36 §4).

python-gnupg has no public call that feeds gpg our own arguments with the data on stdin and
hands each chunk of its output to a callback (``on_data``), nor one that starts gpg with an
inherited pipe (a detached signature goes through ``-&FD``, never a file) or kills it at a
time limit. ``GPG._handle_io`` is that call, and ``GPG._open_subprocess`` the step that starts
gpg: :func:`piped_gpg_class` overrides it. An upstream rename would not fail loudly: the
override would just stop being called (no time limit, no inherited pipe). ``MEMBERS`` lists
both, and tests/pgp/test_gnupg_private.py checks them against the installed python-gnupg,
naming the member that is gone or changed; the upper bound on ``python-gnupg`` in
pyproject.toml is the next minor version for the same reason. No other module of ours reads a
private member of a library (tests/core/test_library_private_members.py scans).

python-gnupg is imported on the first gpg call only (~0.15 s of start-up otherwise).
"""

from __future__ import annotations

import io
import subprocess
import threading
from typing import Any, Callable

#: (module, class, member, how it is used): "method" is called (or overridden) with the
#: parameters named after it.
MEMBERS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("gnupg", "GPG", "_open_subprocess", ("method", "args", "passphrase")),
    ("gnupg", "GPG", "_handle_io", ("method", "args", "fileobj_or_path", "result", "passphrase", "binary")),
)

_PIPED_GPG: type | None = None
_PIPED_GPG_LOCK = threading.Lock()


def piped_gpg_class() -> type:
    """python-gnupg's GPG with two additions: an inherited pipe (for a detached signature) and a
    timer that kills a gpg running past the time limit. Made once, whichever thread asks first."""
    if _PIPED_GPG is not None:
        return _PIPED_GPG
    with _PIPED_GPG_LOCK:
        return _PIPED_GPG or _make_piped_gpg_class()


def _make_piped_gpg_class() -> type:
    global _PIPED_GPG
    # Start-up cost measured (python -X importtime): python-gnupg adds ~0.15 s to every command
    # that opens a project; it is loaded on the first gpg call, i.e. only for mail with OpenPGP.
    import gnupg

    class _PipedGPG(gnupg.GPG):
        def __init__(self, *args: Any, timeout: float, **kwargs: Any) -> None:
            self._pass_fds: tuple[int, ...] = ()
            self._timeout = max(timeout, 30.0)  # gpg --list-config at start-up is not a decryption
            self._timers: list[threading.Timer] = []
            self.timed_out = False
            super().__init__(*args, **kwargs)
            self.stop_timers()
            self._timeout = timeout

        def _open_subprocess(self, args, passphrase=False):  # noqa: ANN001 - python-gnupg's signature
            cmd = self.make_args(args, passphrase)
            process = subprocess.Popen(cmd, shell=False, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, env=self.env, pass_fds=self._pass_fds)

            def kill() -> None:
                if process.poll() is None:
                    self.timed_out = True
                    process.kill()

            timer = threading.Timer(self._timeout, kill)
            timer.daemon = True
            timer.start()
            self._timers.append(timer)
            return process

        def stop_timers(self) -> None:
            for timer in self._timers:
                timer.cancel()
            self._timers.clear()

    _PIPED_GPG = _PipedGPG
    return _PIPED_GPG


def run_piped(gpg: Any, args: list[str], data: bytes, *, on_data: Callable[[bytes], bool],
              pass_fds: tuple[int, ...], time_limit: float, env: dict[str, str] | None,
              passphrase: str | None) -> tuple[Any, bool]:
    """Run gpg (a :func:`piped_gpg_class` instance) with ``args``, ``data`` on its stdin (a
    passphrase on stdin's first line, gpg's loopback pinentry, never argv), ``pass_fds``
    inherited, killed after ``time_limit`` s; each chunk of its output goes to ``on_data``.
    Returns python-gnupg's result and whether gpg was killed at the time limit. gpg that stops
    reading its stdin (killed, or failed early) is no error here: its status says why. Any
    other ``OSError`` (gpg could not be run) is raised."""
    gpg._pass_fds = pass_fds
    gpg._timeout = time_limit
    gpg.timed_out = False
    gpg.on_data = on_data
    saved_env = gpg.env
    if env is not None:
        gpg.env = env
    result = gpg.result_map["crypt"](gpg)
    try:
        gpg._handle_io(args, io.BytesIO(data), result, passphrase=passphrase, binary=True)
    except BrokenPipeError:
        pass
    finally:
        gpg.stop_timers()
        gpg.on_data = None
        gpg._pass_fds = ()
        gpg.env = saved_env
    return result, gpg.timed_out
