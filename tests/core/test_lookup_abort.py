"""A quit does not wait for a name lookup (core/lookups.py): a connect whose host's lookup a
DNS server holds (HTTP sockets, an IMAP connection) fails at once on abort(), where it waited
for the resolver (here 30 s; glibc's default is 5 s a server and attempt).

No network and no stand-in: the real glibc resolver asks a real DNS server on 127.0.0.1:53 that
never answers. That needs a namespace of its own (``unshare -mn``, as root): a loopback of its
own and /etc/resolv.conf bind-mounted to name that server, the machine's left alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHELL = ('ip link set lo up && mount --bind "$RESOLV" /etc/resolv.conf && '
         'exec "$PYTHON" -m tests.core.held_resolver_child "$KIND"')


def _in_own_namespace(kind: str, tmp_path: Path) -> dict:
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        pytest.skip("needs root, unshare and ip: a namespace with a resolver the test holds")
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\n", encoding="utf-8")
    env = {**os.environ, "RESOLV": str(resolv), "PYTHON": sys.executable, "KIND": kind,
           "RES_OPTIONS": "timeout:30 attempts:1"}
    done = subprocess.run(["unshare", "-mn", "sh", "-c", SHELL], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    if done.returncode != 0 and "unshare failed" in done.stderr:
        pytest.skip(f"no namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind", ["http", "imap"])
def test_a_quit_ends_a_connect_waiting_on_its_name_lookup(kind, tmp_path):
    result = _in_own_namespace(kind, tmp_path)
    assert result["reached"], result  # the lookup was at the held server when abort() came
    assert result["over"], f"abort() left the call waiting on its lookup: {result}"
    [error] = result["outcome"]
    assert "the app quits" in error, error
