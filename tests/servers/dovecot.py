"""A real Dovecot for tests: a self-contained config in a temp dir, loopback ports only.

``DovecotServer`` writes ``dovecot.conf`` (passwd-file auth, Maildir under the temp dir,
special-use mailboxes auto-created, plain + STARTTLS + implicit TLS with a throw-away
certificate) and runs ``dovecot -F -c <conf>`` in the foreground. ``stop()`` sends
SIGTERM and then kills whatever ``<base_dir>/master.pid`` still names, so no server
outlives a run (an ``atexit`` hook covers an interrupted session).

Users are added at any time: Dovecot re-reads the passwd-file when it changes, so each
test gets a fresh user (and mailbox) from one server per xdist worker.

Written for Dovecot 2.3 (Debian 12). Dovecot refuses to run login processes or to
access mail as root, so as root the mail user is ``nobody`` and login runs as
``dovenull``; as another user everything runs as that user.
"""

from __future__ import annotations

import atexit
import grp
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tests.servers.certs import TestCertificate, make_certificate
from tests.servers.ports import free_port, wait_for_port

DOVECOT = shutil.which("dovecot") or "/usr/sbin/dovecot"
SPECIAL_USE = {"Drafts": "\\Drafts", "Sent": "\\Sent", "Trash": "\\Trash", "Junk": "\\Junk", "Archive": "\\Archive"}


@dataclass(frozen=True)
class DovecotUser:
    name: str
    password: str
    home: Path

    @property
    def maildir(self) -> Path:
        return self.home / "Maildir"


def _temp_root() -> Path:
    # /dev/shm keeps Maildir writes in memory; fall back to the normal temp dir.
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    root = Path(tempfile.mkdtemp(prefix="mt-dovecot-", dir=base))
    # The mail user (not the test runner) must be able to reach its home below here.
    root.chmod(0o711)
    return root


class DovecotServer:
    """One Dovecot instance. Use :meth:`start` / :meth:`stop` (or the pytest fixtures)."""

    host = "127.0.0.1"

    def __init__(self, *, capability: str | None = None, special_use: dict[str, str | None] | None = None,
                 root: Path | None = None, acl: bool = False) -> None:
        """``capability`` replaces what the server advertises after login (to test fallbacks);
        ``special_use`` maps auto-created folder names to their SPECIAL-USE flag (or None);
        ``acl`` loads Dovecot's ``acl`` and ``imap_acl`` plugins (per-folder rights, see
        :meth:`set_rights`)."""
        self.acl = acl
        self.root = root or _temp_root()
        self.capability = capability
        self.special_use = SPECIAL_USE if special_use is None else special_use
        self.base_dir = self.root / "run"
        self.mail_root = self.root / "mail"
        self.passwd = self.root / "passwd"  # a directory: one passwd-file per user
        self.conf = self.root / "dovecot.conf"
        self.log = self.root / "dovecot.log"
        self.users: dict[str, DovecotUser] = {}
        self.port = 0  # plain, offers STARTTLS
        self.tls_port = 0  # implicit TLS
        self.cert: TestCertificate | None = None
        self.proc: subprocess.Popen | None = None
        self._as_root = os.geteuid() == 0
        atexit.register(self.stop)

    # -- lifecycle ----------------------------------------------------
    def start(self) -> "DovecotServer":
        if self.cert is None:
            self.cert = make_certificate(self.root / "tls")
        self.base_dir.mkdir(exist_ok=True)
        self.mail_root.mkdir(exist_ok=True)
        if self._as_root:
            os.chown(self.mail_root, pwd.getpwnam("nobody").pw_uid, self._mail_gid())
        self.passwd.mkdir(mode=0o700, exist_ok=True)
        last_error = ""
        # A restart (after kill_master) must come back on the same ports: the tests hold
        # accounts that point at them. Only a first start may move to fresh ports.
        restarting = bool(self.port)
        for _attempt in range(8 if restarting else 3):
            if not self.port:
                self.port, self.tls_port = free_port(), free_port()
            self.conf.write_text(self._config(), encoding="utf-8")
            self.log.write_text("")
            # A process group of its own, which every service it forks joins: kill_master ends
            # them all at once, so no child the master forks meanwhile is left holding the ports.
            self.proc = subprocess.Popen([DOVECOT, "-F", "-c", str(self.conf)], process_group=0,
                                         stdout=subprocess.DEVNULL, stderr=open(self.root / "stderr.log", "ab"))
            try:
                wait_for_port(self.port, timeout=10)
                wait_for_port(self.tls_port, timeout=10)
                if self.proc.poll() is not None:
                    raise TimeoutError("dovecot exited right after starting")
                return self
            except TimeoutError:
                last_error = self.log_text() + (self.root / "stderr.log").read_text(errors="replace")
                self._terminate()
                if restarting:
                    time.sleep(0.5)  # the killed server's children may still hold the sockets
                else:
                    self.port = self.tls_port = 0  # maybe a port was taken meanwhile: pick new ones
        raise RuntimeError(f"dovecot did not start:\n{last_error}")

    def stop(self) -> None:
        # Killed, not asked to shut down: its mail goes with it, and a SIGTERM'd master took
        # 5-6 s to exit (each stop waited 5 s, then killed it anyway).
        self.kill_master()
        self._terminate()
        shutil.rmtree(self.root, ignore_errors=True)

    def kill_master(self) -> None:
        """Kill the whole server abruptly (SIGKILL), as a crash would. :meth:`start` brings it back.

        The whole process group at once: killed one by one (children first), the master still
        alive forked a new login process (process_min_avail) that outlived it holding the
        listening ports, so the restarted master failed to listen ("Address already in use")
        while the orphan answered the port check and then reset the test's connection."""
        pids = self._dovecot_pids()
        group = self.proc.pid if self.proc is not None else None
        if group is not None:
            try:
                os.killpg(group, signal.SIGKILL)
            except OSError:
                pass
        for pid in reversed(pids):  # a master from a pidfile (no group of ours): one by one
            _kill(pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(5)
            self.proc = None
        # Children hold the listening sockets until they are really gone: wait for that,
        # or a restart would find its ports taken (or a dying process answering on them).
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (any(_running(pid) for pid in pids)
                                               or (group is not None and _group_running(group))):
            time.sleep(0.01)
        (self.base_dir / "master.pid").unlink(missing_ok=True)

    def _terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None
        self._kill_from_pidfile(signal.SIGKILL)

    def _kill_from_pidfile(self, sig: int) -> None:
        pidfile = self.base_dir / "master.pid"
        pid = _pid_from(pidfile)
        if pid is None:
            return
        if _alive(pid) and _cmdline(pid).startswith(("dovecot", DOVECOT)):
            _kill(pid, sig)
        pidfile.unlink(missing_ok=True)

    def _dovecot_pids(self) -> list[int]:
        """The master of *this* instance and its children (every Dovecot service is one)."""
        master = self.proc.pid if self.proc is not None else _pid_from(self.base_dir / "master.pid")
        if master is None or not _alive(master):
            return []
        children = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and _ppid(int(entry.name)) == master:
                children.append(int(entry.name))
        return [master, *children]

    # -- users and mail -------------------------------------------------
    def add_user(self, name: str | None = None, password: str | None = None) -> DovecotUser:
        name = name or f"u{uuid.uuid4().hex[:12]}"
        password = password or uuid.uuid4().hex
        user = DovecotUser(name, password, self.mail_root / name)
        self.users[name] = user
        self._write_passwd(user)
        return user

    def set_password(self, user: DovecotUser, password: str) -> DovecotUser:
        """Change ``user``'s password on the server; returns once the server takes the new one.

        Dovecot's passwd-file driver re-reads a file when it looks at it in a later second than
        its last look and finds the file's mtime or size changed. So the new file gets an mtime
        other than the old one's, and a login with the new password is tried until it passes
        (within about a second) instead of sleeping a fixed 1.1 s."""
        from imapclient.exceptions import LoginError

        path = self.passwd / f"{user.name}.passwd"
        old_mtime = path.stat().st_mtime if path.exists() else 0
        changed = DovecotUser(user.name, password, user.home)
        self.users[user.name] = changed
        self._write_passwd(changed)
        if int(path.stat().st_mtime) <= int(old_mtime):
            later = int(old_mtime) + 1
            os.utime(path, (later, later))
        deadline = time.monotonic() + 60
        while True:
            try:
                with self.client(changed):
                    return changed
            except LoginError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)  # polling the server, not a guess at a time

    def _write_passwd(self, user: DovecotUser) -> None:
        # One passwd-file per user (the passdb path holds %n): Dovecot re-reads a changed
        # passwd-file at most once a second, but opens a file it has not seen at once.
        path = self.passwd / f"{user.name}.passwd"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(f"{user.name}:{{PLAIN}}{user.password}::::::nodelay=yes\n", encoding="utf-8")
        tmp.chmod(0o600)
        os.replace(tmp, path)

    def client(self, user: DovecotUser):
        """An imapclient connection logged in as ``user``, for seeding and inspecting mail."""
        from imapclient import IMAPClient

        client = IMAPClient(self.host, self.port, ssl=False, timeout=10)
        client.login(user.name, user.password)
        return client

    def append(self, user: DovecotUser, folder: str, raw: bytes, flags: tuple = (),
               when: datetime | None = None) -> int:
        """APPEND one message and return its UID."""
        with self.client(user) as client:
            if not client.folder_exists(folder):
                client.create_folder(folder)
            response = client.append(folder, raw, flags=flags, msg_time=when)
            # "[APPENDUID <validity> <uid>] ..."
            text = response.decode() if isinstance(response, bytes) else str(response)
            return int(text.split("]")[0].split()[-1])

    def set_rights(self, user: DovecotUser, folder: str, rights: str) -> None:
        """Give the owner only ``rights`` (RFC 4314 letters, e.g. ``lr``, ``lrs``) on
        ``folder`` (``acl=True`` servers). The folder must exist (create it first)."""
        assert self.acl, "set_rights needs DovecotServer(acl=True)"
        folder_dir = user.maildir if folder == "INBOX" else user.maildir / ("." + folder.replace("/", "."))
        path = folder_dir / "dovecot-acl"
        path.write_text(f"owner {rights}\n", encoding="utf-8")
        if self._as_root:
            os.chown(path, pwd.getpwnam("nobody").pw_uid, self._mail_gid())

    def imap_pids(self, user: DovecotUser) -> list[int]:
        """PIDs of the imap processes serving ``user`` (verbose_proctitle names the user)."""
        found = []
        for pid in self._dovecot_pids():
            title = _cmdline(pid)
            if "/imap [" in title and f"[{user.name} " in title:
                found.append(pid)
        return found

    def kill_user_connections(self, user: DovecotUser) -> int:
        pids = self.imap_pids(user)
        for pid in pids:
            _kill(pid, signal.SIGKILL)
        return len(pids)

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    # -- config ---------------------------------------------------------
    def _mail_gid(self) -> int:
        nobody = pwd.getpwnam("nobody")
        try:
            return grp.getgrnam("nogroup").gr_gid
        except KeyError:
            return nobody.pw_gid

    def _config(self) -> str:
        if self._as_root:
            identity = f"""
default_internal_user = root
default_internal_group = root
default_login_user = {'dovenull' if _user_exists('dovenull') else 'nobody'}
mail_uid = nobody
mail_gid = {self._mail_gid()}
first_valid_uid = 1
first_valid_gid = 1
"""
            chroot = ""
        else:
            me = pwd.getpwuid(os.getuid()).pw_name
            my_group = grp.getgrgid(os.getgid()).gr_name
            identity = f"""
default_internal_user = {me}
default_internal_group = {my_group}
default_login_user = {me}
mail_uid = {me}
mail_gid = {my_group}
first_valid_uid = {os.getuid()}
first_valid_gid = {os.getgid()}
"""
            # Without root there is no chroot for the login processes.
            chroot = """
service imap-login {
  chroot =
}
service anvil {
  chroot =
}
"""
        mailboxes = "".join(
            f"  mailbox \"{name}\" {{\n" + (f"    special_use = {flag}\n" if flag else "") + "    auto = subscribe\n  }\n"
            for name, flag in self.special_use.items()
        )
        capability = f"protocol imap {{\n  imap_capability = {self.capability}\n}}\n" if self.capability else ""
        if self.acl:
            # Per-folder rights from a dovecot-acl file in each Maildir folder; imap_acl
            # answers GETACL/MYRIGHTS so a client can see them.
            capability += ("mail_plugins = $mail_plugins acl\nprotocol imap {\n"
                           "  mail_plugins = $mail_plugins imap_acl\n}\nplugin {\n  acl = vfile\n}\n")
        return f"""# generated by tests/servers/dovecot.py for one test session
base_dir = {self.base_dir}
state_dir = {self.base_dir}/state
instance_name = mt-{self.root.name}
protocols = imap
listen = 127.0.0.1
log_path = {self.log}
info_log_path = {self.log}
{identity}
mail_home = {self.mail_root}/%n
mail_location = maildir:~/Maildir
mail_attachment_detection_options = add-flags
verbose_proctitle = yes
auth_failure_delay = 0
auth_mechanisms = plain login xoauth2 oauthbearer
disable_plaintext_auth = no
ssl = yes
ssl_cert = <{self.cert.cert}
ssl_key = <{self.cert.key}
mail_max_userip_connections = 200
passdb {{
  driver = passwd-file
  args = {self.passwd}/%n.passwd
}}
userdb {{
  driver = passwd-file
  args = {self.passwd}/%n.passwd
}}
# One server serves every test of an xdist worker (tests/conftest.py): room for the sessions a
# worker's tests hold at once, above Dovecot's default of 100 processes per service.
default_process_limit = 1000
default_client_limit = 4000
# No brute-force penalty: tests fail logins on purpose, from 127.0.0.1, many times.
service anvil {{
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
# Processes reused from one connection to the next (Dovecot's "high-performance mode"): by
# default every connection forks and execs a login process and then an imap process, ~8 ms of
# CPU a session; the suite opens thousands (~100 CPU-s a run, billed to each worker's last test).
# With reuse, 150 sessions cost the server 0.11 CPU-s instead of 1.21 (issue 36 §7). A test
# that kills a user's imap process (kill_user_connections) still finds it by its title.
service imap {{
  service_count = 0
  process_min_avail = 1
}}
service imap-login {{
  service_count = 0
  process_min_avail = 1
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {self.tls_port}
    ssl = yes
  }}
}}
{chroot}
namespace inbox {{
  inbox = yes
  separator = /
{mailboxes}}}
{capability}"""


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _running(pid: int) -> bool:
    """Alive and not a zombie (a zombie holds no sockets, and in a container nobody may reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _group_running(group: int) -> bool:
    """Whether a process of process group ``group`` is alive and not a zombie."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] not in ("Z", "X"):
            return True
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def _pid_from(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces, so split after the last ")".
    return int(stat.rsplit(")", 1)[1].split()[1])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""
