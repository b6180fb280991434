#!/usr/bin/env python3
"""Check what a user installs: build the wheel and the sdist, install the wheel into a fresh
virtual environment (not editable), and from outside the checkout run ``mailtriage --version``,
``mailtriage --demo list`` and the app itself on a pseudo-terminal until the demo's thread list
is painted, then quit it with ``q``. Then install the sdist over it as pip installs an sdist for
a user (its own isolated build), and check that it installs the same files and asks for the same
dependencies as the wheel (so a fresh environment of it is that one), and that its ``mailtriage
--version`` runs.

Usage: scripts/check_install.py [--python PY]   (PY builds the artifacts and its pip installs them;
                                                 default: .venv/bin/python)
Exit 0 when both artifacts pass; 1 with the failing step on stderr otherwise.
"""

from __future__ import annotations

import argparse
import email.parser
import fcntl
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# CSI, OSC (BEL or ST terminated) and two-byte escape sequences: what a terminal would interpret.
ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


class CheckFailed(Exception):
    pass


def run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise CheckFailed(f"{' '.join(cmd)} exited {done.returncode}\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done.stdout


def build(python: str, out: Path) -> tuple[Path, Path]:
    """Build the sdist, then the wheel from that sdist: a file the sdist lacks fails the wheel."""
    src = out / "src"
    # Build from a copy, so the checkout gets no build/ or egg-info litter.
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info",
                                                              "__pycache__", ".pytest_cache", ".hypothesis"))
    dist = out / "dist"
    run([python, "-m", "build", "--no-isolation", "--outdir", str(dist), str(src)], cwd=out, env=clean_env(out))
    wheels = list(dist.glob("mailtriage-*.whl"))
    sdists = list(dist.glob("mailtriage-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise CheckFailed(f"expected one wheel and one sdist in {dist}, found {sorted(p.name for p in dist.iterdir())}")
    return wheels[0], sdists[0]


def clean_env(home: Path) -> dict[str, str]:
    """An environment like a new user's: own HOME and XDG folders, nothing from the checkout's venv."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "MAILTRIAGE_PROJECT"}}
    for name, sub in (("HOME", "home"), ("XDG_CONFIG_HOME", "home/.config"), ("XDG_DATA_HOME", "home/.local/share"),
                      ("XDG_CACHE_HOME", "home/.cache"), ("XDG_STATE_HOME", "home/.local/state")):
        path = home / sub
        path.mkdir(parents=True, exist_ok=True)
        env[name] = str(path)
    # pip's cache stays shared: a fresh environment, not a fresh download of every dependency.
    env.setdefault("PIP_CACHE_DIR", str(Path(os.environ.get("HOME", "/root")) / ".cache" / "pip"))
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["TERM"] = "xterm-256color"
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    return env


def drive_app(exe: Path, cwd: Path, env: dict[str, str], expect: str, timeout: float = 90) -> None:
    """Run ``mailtriage --demo`` on a pseudo-terminal until ``expect`` is painted, then press q."""
    pid, fd = pty.fork()
    if pid == 0:  # child: the app, as a user's shell would start it
        os.chdir(cwd)
        os.execve(str(exe), [str(exe), "--demo"], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    os.kill(pid, signal.SIGWINCH)
    screen = b""
    deadline = time.monotonic() + timeout
    painted = False
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    break  # the child closed the terminal: it exited
                if not chunk:
                    break
                screen += chunk
                if expect.encode() in ESCAPES.sub(b"", screen):
                    painted = True
                    break
        if not painted:
            text = ESCAPES.sub(b"", screen).decode("utf-8", "replace")
            raise CheckFailed(f"the app did not paint {expect!r} within {timeout:.0f} s; screen text:\n{text[-3000:]}")
        os.write(fd, b"q")
        quit_deadline = time.monotonic() + 20
        while time.monotonic() < quit_deadline:
            waited, status = os.waitpid(pid, os.WNOHANG)
            if waited:
                code = os.waitstatus_to_exitcode(status)
                if code != 0:
                    raise CheckFailed(f"the app exited {code} after q")
                return
            # Keep draining the terminal so the app never blocks on a full pty buffer.
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    os.read(fd, 65536)
                except OSError:
                    pass
        raise CheckFailed("the app did not quit within 20 s of q")
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)


def check_artifact(artifact: Path, work: Path, version: str, pip_python: str) -> Path:
    """Install the wheel into a fresh environment and run it there; returns the environment."""
    name = "wheel"
    home = work / f"user-{name}"
    env = clean_env(home)
    venv = home / "venv"
    # A fresh environment without pip of its own, filled by the checkout's pip (``--python``):
    # ensurepip put a pip into each new environment (~7 CPU-s) that nothing else used. No
    # byte-compiling of the installed files either (``--no-compile``; ~60% of pip's CPU here, as
    # it compiled every module of every dependency): the app compiles what it imports when it
    # first runs, as it would on a read-only install that was never compiled. The resolver, the
    # dependencies and mailtriage's own files are those a user's ``pip install`` gets (issue 36 §7).
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=home, env=env)
    # The sdist builds in pip's isolated environment, as it does for a user.
    run([pip_python, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "--no-compile",
         str(artifact)], cwd=home, env=env)
    exe = venv / "bin" / "mailtriage"
    check_version(exe, home, env, version, name)
    listing = run([str(exe), "--demo", "list"], cwd=home, env=env)
    subject = first_subject(listing)
    drive_app(exe, home, env, subject)
    print(f"check-install: {name} {artifact.name}: --version, --demo list and the app (painted {subject!r}) ok")
    return venv


def check_version(exe: Path, home: Path, env: dict[str, str], version: str, name: str) -> None:
    out = run([str(exe), "--version"], cwd=home, env=env).strip()
    if out != f"mailtriage {version}":
        raise CheckFailed(f"{name}: --version printed {out!r}, expected 'mailtriage {version}'")


def check_sdist(sdist: Path, venv: Path, version: str, pip_python: str) -> None:
    """Install the sdist over the wheel's environment, built as pip builds it for a user (its
    isolated build from the sdist's own build requirements), without its dependencies, and
    require what the wheel installed: the same files byte for byte and the same declared
    requirements. A fresh environment of the sdist then holds what the wheel's holds (pip
    resolves the same requirements from the same index), so the app the wheel ran is the one
    the sdist's user runs: resolving and unpacking its ~40 dependencies again and running the
    app a second time checked nothing more (issue 36 §7: ~4 of the check's ~12 CPU-s)."""
    home = venv.parent
    env = clean_env(home)
    before = installed(venv)
    run([pip_python, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "--no-compile",
         "--force-reinstall", "--no-deps", str(sdist)], cwd=home, env=env)
    after = installed(venv)
    if after.files != before.files:
        differ = sorted(set(after.files.items()) ^ set(before.files.items()))
        raise CheckFailed(f"sdist: installs other files than the wheel: {differ[:20]}")
    if after.requires != before.requires:
        raise CheckFailed(f"sdist: declares {after.requires}, the wheel {before.requires}")
    check_version(venv / "bin" / "mailtriage", home, env, version, "sdist")
    print(f"check-install: sdist {sdist.name}: built in isolation, the wheel's files and requirements, --version ok")


class Installed:
    """mailtriage as installed in an environment: each file with its hash (from the RECORD pip
    wrote, the dist-info itself left out) and the requirements its metadata declares."""

    def __init__(self, files: dict[str, str], requires: list[str]) -> None:
        self.files = files
        self.requires = requires


def installed(venv: Path) -> Installed:
    found = list(venv.glob("lib/python*/site-packages/mailtriage-*.dist-info"))
    if len(found) != 1:
        raise CheckFailed(f"expected one mailtriage dist-info in {venv}, found {[p.name for p in found]}")
    info = found[0]
    files = {}
    for line in (info / "RECORD").read_text(encoding="utf-8").splitlines():
        path, digest, _size = line.rsplit(",", 2)
        if not path.startswith(info.name + "/"):
            files[path] = digest
    meta = email.parser.Parser().parsestr((info / "METADATA").read_text(encoding="utf-8"), headersonly=True)
    requires = sorted(f"{key}: {value}" for key, value in meta.items()
                      if key in ("Requires-Dist", "Requires-Python", "Provides-Extra"))
    entry_points = info / "entry_points.txt"
    requires.append(entry_points.read_text(encoding="utf-8") if entry_points.exists() else "")
    return Installed(files, requires)


def first_subject(listing: str) -> str:
    """The start of the newest thread's subject in ``mailtriage --demo list``, to wait for on screen."""
    for line in listing.splitlines():
        # Rows are "DATE TIME  COUNT  SENDER  SUBJECT", columns apart by two or more spaces.
        if re.match(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}\s", line):
            subject = re.split(r"\s{2,}", line.strip())[-1]
            return " ".join(subject.split()[:3])
    raise CheckFailed(f"mailtriage --demo list printed no thread row:\n{listing[:2000]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=str(REPO / ".venv" / "bin" / "python"))
    args = parser.parse_args()
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    work = Path(tempfile.mkdtemp(prefix="mailtriage-check-install-"))
    try:
        wheel, sdist = build(args.python, work)
        venv = check_artifact(wheel, work, version, args.python)
        check_sdist(sdist, venv, version, args.python)
    except (CheckFailed, subprocess.TimeoutExpired) as exc:
        print(f"check-install FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
