"""The application service (application/service.py): the surface tui/ calls, reached only
through the application layer, and the user's settings it owns for both front ends."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from mailtriage.application.service import Service
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.settings import UserSettings
from tests.tui.helpers import mbox_project

ROOT = Path(__file__).resolve().parents[2]
SERVICE = ROOT / "application" / "service.py"
#: The service's class and its bases (the mail and the triage sides, modules of their own for size).
SERVICE_MODULES = (SERVICE, ROOT / "application" / "service_mail.py", ROOT / "application" / "service_triage.py")


def used_by_tui() -> set[str]:
    """Every ``session.X`` (and ``self.session.X``) that tui/ reads: the app's service is its
    ``session`` attribute."""
    names: set[str] = set()
    for path in sorted((ROOT / "tui").rglob("*.py")):
        names |= set(re.findall(r"\bsession\.([A-Za-z_][A-Za-z0-9_]*)", path.read_text(encoding="utf-8")))
    return names


def test_the_service_keeps_what_the_tui_uses(tmp_path):
    service = Service(tmp_path, demo=False, settings=UserSettings(tmp_path / "config.toml", {}))
    missing = sorted(name for name in used_by_tui() if not hasattr(service, name))
    assert missing == []


def used_by_cli() -> set[str]:
    """Every ``service.X`` that cli/ calls: the command line holds the same service as ``service``."""
    names: set[str] = set()
    for path in sorted((ROOT / "cli").rglob("*.py")):
        names |= set(re.findall(r"(?<![/.\w])service\.(?!py\b)([A-Za-z_][A-Za-z0-9_]*)",  # not "cli/service.py"
                                path.read_text(encoding="utf-8")))
    return names


def test_the_service_keeps_what_the_cli_uses(tmp_path):
    # The command line calls the service's entries (issue 36 §1), as the app does.
    service = Service(tmp_path, demo=False, settings=UserSettings(tmp_path / "config.toml", {}))
    used = used_by_cli()
    assert {"propose_reply", "propose_sync", "propose_publish", "poll", "sweep", "queue", "apply"} <= used
    assert sorted(name for name in used if not hasattr(Service, name) and name not in vars(service)) == []


def test_the_service_is_the_only_facade_the_tui_holds():
    assert not (ROOT / "tui" / "session.py").exists()
    assert not list((ROOT / "tui").glob("session_*.py"))


@pytest.mark.parametrize("module", SERVICE_MODULES, ids=lambda path: path.name)
def test_the_service_does_not_branch_on_a_kind(module):
    assert not re.search(r"\.kind\s*[!=]=", module.read_text(encoding="utf-8"))  # a backend's or a tracker's


@pytest.mark.parametrize("module", SERVICE_MODULES, ids=lambda path: path.name)
def test_the_service_never_imports_a_front_end(module):
    tree = ast.parse(module.read_text(encoding="utf-8"))
    modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert not [m for m in modules if m.startswith(("mailtriage.tui", "mailtriage.cli", "textual"))]


def _service(tmp_path, settings: dict, **project) -> Service:
    folder = tmp_path / "p"
    mbox_project(folder, **project)
    service = Service(folder, demo=False, settings=UserSettings(tmp_path / "config.toml", settings))
    service.open()
    return service


def test_poll_interval_user_setting_wins_and_zero_turns_polling_off(tmp_path):
    project = {"extra_config": {"alerts": {"poll_seconds": 45}}}
    assert _service(tmp_path / "a", {}, **project).poll_interval() == 45
    assert _service(tmp_path / "b", {"alerts": {"poll_seconds": 300}}, **project).poll_interval() == 300
    off = _service(tmp_path / "c", {"alerts": {"poll_seconds": 0}}, **project)
    assert off.poll_interval() == 0 and off.alert_watch() is None
    assert off.poll_interval(7.5) == 7.5  # the command line's --interval
    with pytest.raises(ConfigError) as err:
        _service(tmp_path / "d", {"alerts": {"poll_seconds": "soon"}}, **project).poll_interval()
    assert err.value.key == "alerts.poll_seconds"


def test_a_contract_ops_arguments_read_alike_for_both_front_ends(tmp_path):
    # The command line's `mail` reads them as a usage error naming its option (exit 2); the
    # app's console gets the same problem as the ValueError it shows.
    from mailtriage.application.errors import UsageError
    from mailtriage.backends.contract import Op

    service = _service(tmp_path, {})
    with pytest.raises(UsageError, match="--since"):
        service.op_args(Op.LIST_SENT_SINCE, {"thread_id": "mbox:<a@b>", "since": "soon"}, label="--since")
    with pytest.raises(ValueError, match="needs a thread id") as err:
        service.run_op(Op.READ_THREAD, None, {"thread_id": " "})
    assert not isinstance(err.value, UsageError)
    entry = service.list_threads(None).value[0]
    read = service.run_op(Op.READ_THREAD, None, {"thread_id": str(entry.thread_id)})
    assert read.value.thread_id == entry.thread_id and read.resolution.chosen == "mbox"


def test_the_tracker_command_opens_the_tracker_from_project_md_alone(tmp_path):
    from mailtriage.core.projectconfig import load_project
    from mailtriage.demo.tracker import make_demo_tracker
    from tests.tui.test_tracker_pane import TRACKER

    folder = tmp_path / "p"
    mbox_project(folder, extra_config={"tracker": TRACKER})
    make_demo_tracker(load_project(folder), folder / "repo")
    service = Service(folder, demo=False, settings=UserSettings(tmp_path / "config.toml", {}))
    assert service.tracker_kind() == ("local-files", True)
    listed = service.tracker_call("list", state="all", limit=5)
    assert listed.items and service.sources is None  # no mail source was built for it
    with pytest.raises(ValueError, match="close_backend"):
        service.tracker_call("close_backend")
    service.close()


# -- the calls the UI thread makes never wait on the backend lock (issue 36 review) ----------
class _Holder:
    """A real thread holding a real lock of the service until :meth:`release` (or 10 s, which
    only a call that waited on the lock lets run out: ``released_in_time`` is then False)."""

    def __init__(self, lock) -> None:
        import threading

        self._held, self._release = threading.Event(), threading.Event()
        self.released_in_time: bool | None = None

        def hold() -> None:
            with lock:
                self._held.set()
                self.released_in_time = self._release.wait(10)

        self._thread = threading.Thread(target=hold, daemon=True)
        self._thread.start()
        assert self._held.wait(10)

    def release(self) -> bool:
        self._release.set()
        self._thread.join(15)
        return bool(self.released_in_time)


def test_forgetting_availability_never_waits_and_the_next_check_reads_it(tmp_path):
    service = _service(tmp_path, {})
    availability = service.opened.sources.availability
    assert availability.reason("mbox") is None  # the archive is there: checked, and the answer kept
    (tmp_path / "p" / "list.mbox").unlink()
    assert availability.reason("mbox") is None  # the kept answer
    holder = _Holder(service._lock)  # a listing in progress
    service.forget_availability()
    assert holder.release(), "forget_availability waited for the backend lock"
    assert availability.reason("mbox") is not None  # checked again: the archive is gone


def test_unlocking_a_key_never_waits_on_the_backend_lock(tmp_path):
    service = _service(tmp_path, {})
    entry = service.list_threads(None).value[0]
    thread = service.read_thread(entry.thread_id).value
    holder = _Holder(service._lock)  # a listing in progress while the user types the passphrase
    assert service.pgp_unlock(thread) is None  # nothing to unlock here, and said at once
    assert holder.release(), "pgp_unlock waited for the backend lock"


def test_applying_a_proposal_takes_the_tracker_lock(tmp_path):
    """A proposal may write to the tracker (a ticket, a comment): it waits for another tracker call."""
    import threading

    service = _service(tmp_path, {})
    applied = threading.Event()

    class Proposal:
        def apply(self, *, confirmed: bool):
            applied.set()
            return confirmed

    holder = _Holder(service._tracker_lock)  # a tracker call in progress
    worker = threading.Thread(target=lambda: service.apply(Proposal()), daemon=True)
    worker.start()
    assert not applied.wait(0.2)  # still waiting for the tracker call (a bounded look, not a sleep-and-hope)
    assert holder.release() and applied.wait(10)
    worker.join(10)


def test_a_read_is_served_while_a_screens_statuses_wait_for_the_tracker(tmp_path):
    """thread_statuses (the row marks of a screen) holds each lock for its own part only: while
    its tracker part waits for the tracker (an import in progress), the backend lock is free and
    the thread the user opens is read at once, not after the tracker call."""
    import linecache
    import sys
    import threading

    from mailtriage.core.projectconfig import load_project
    from mailtriage.demo.tracker import make_demo_tracker
    from tests.tui.test_tracker_pane import TRACKER

    folder = tmp_path / "p"
    mbox_project(folder, extra_config={"tracker": TRACKER})
    make_demo_tracker(load_project(folder), folder / "repo")
    service = Service(folder, demo=False, settings=UserSettings(tmp_path / "config.toml", {}))
    service.open()
    service.open_tracker()
    ids = [entry.thread_id for entry in service.list_threads(None).value]
    holder = _Holder(service._tracker_lock)  # a tracker call in progress
    batch = threading.Thread(target=lambda: service.thread_statuses(ids), daemon=True)
    batch.start()

    def waits_on_a_lock() -> bool:  # the batch stands on a `with …lock…:` line: blocked there
        frame = sys._current_frames().get(batch.ident)
        line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip() if frame else ""
        return line.startswith("with ") and "lock" in line

    for _ in range(2000):
        if waits_on_a_lock():
            break
        threading.Event().wait(0.005)  # polling the condition
    assert waits_on_a_lock(), "the batch never reached the tracker lock"
    read = threading.Thread(target=lambda: service.read_thread(ids[0]), daemon=True)
    read.start()
    read.join(10)  # a bound: the fixed code returns at once
    served_meanwhile = not read.is_alive() and batch.is_alive()
    released = holder.release()
    batch.join(10)
    assert served_meanwhile, "the read waited for the statuses' tracker part"
    assert released and not batch.is_alive()
