"""A git working copy and its bare remote, copied from a template built once a worker
(tests/trackers/conftest.py's ``make_git_env``, tests/application/flows/conftest.py's ``env``):
a copy costs ~14 ms against ~0.4 s for the eleven git runs of a build at load 17. The same for
an svn repository and its working copy (``make_svn_env``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def copy_git_env(template: Path, dest: Path) -> tuple[Path, Path]:
    """``template``'s ``remote.git`` and ``wc`` copied into ``dest``: (remote, working copy). The
    copy's ``origin`` is rewritten to its own remote, the one absolute path the build leaves in
    it (``wc/.git/config``); a template that names it nowhere fails here."""
    for name in ("remote.git", "wc"):
        shutil.copytree(template / name, dest / name, symlinks=True)
    remote, wc = dest / "remote.git", dest / "wc"
    config = wc / ".git" / "config"
    text = config.read_text(encoding="utf-8")
    assert str(template / "remote.git") in text
    config.write_text(text.replace(str(template / "remote.git"), str(remote)), encoding="utf-8")
    return remote, wc


def copy_svn_env(template: Path, dest: Path) -> tuple[Path, Path]:
    """``template``'s ``svnrepo`` (a file-system repository: a copy of its folder is a whole
    repository, the same UUID) and ``wc`` copied into ``dest``: (repository, working copy). The
    copy's working copy is relocated to the copied repository (its one absolute path, the
    repository's URL in ``.svn/wc.db``): ``svn relocate`` refuses a URL the copy does not name."""
    for name in ("svnrepo", "wc"):
        shutil.copytree(template / name, dest / name, symlinks=True)
    repo, wc = dest / "svnrepo", dest / "wc"
    done = subprocess.run(["svn", "relocate", "--non-interactive", (template / "svnrepo").as_uri(), repo.as_uri()],
                          cwd=wc, capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
    assert done.returncode == 0, f"svn relocate failed: {done.stderr}"
    return repo, wc
