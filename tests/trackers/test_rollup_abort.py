"""A quit ends a status-rollup write on GitHub or Jira in its pauses (issue 20 §10: the write
reads back, waits for a concurrent writer's older copy to land, and looks again): ``abort()``
wakes the pause, and the write says the server may have done it, as other ended writes do.

The pause is made 30 s here, far beyond the join's 10 s bound: a join that returns means the
abort ended it, whatever the machine's load (with ``time.sleep`` it waited the 30 s out).
"""

from __future__ import annotations

import threading

import pytest

from mailtriage.trackers.errors import BackendError
from tests.trackers.conftest import make_github_env, make_jira_env

SETTLE = 30.0


@pytest.fixture(params=["github", "jira-v3"])
def server_env(request, tmp_path):
    env = make_github_env(tmp_path) if request.param == "github" else make_jira_env(tmp_path, 3)
    yield env
    env.tracker.close_backend()
    env.server.stop()


def _writes(server) -> int:
    return sum(1 for method, _path, _headers in server.requests if method in ("POST", "PUT", "PATCH"))


@pytest.mark.parametrize("opening_only", [False, True])
def test_a_quit_ends_a_rollup_write_in_its_settle_pause(server_env, opening_only):
    tracker = server_env.tracker
    made = tracker.create("Race", "### CVE\n\nnone\n", [])
    tracker.rollup_min_settle = SETTLE  # the pause after the write's read-back
    before = _writes(server_env.server)
    outcome: list = []

    def append() -> None:
        try:
            outcome.append(tracker.rollup_append(made["id"], "Note", "entry", user="alice"))
        except Exception as exc:  # noqa: BLE001 - the test reads it
            outcome.append(exc)

    writing = threading.Thread(target=append, daemon=True)
    writing.start()
    reached = threading.Event()
    while not reached.wait(0.01) and writing.is_alive():  # until the rollup is written (then it pauses)
        if _writes(server_env.server) > before:
            reached.set()
    assert reached.is_set(), outcome
    tracker.abort(opening_only)
    if opening_only:  # the quit first gives a write its chance to finish: the pause is left alone
        writing.join(0.5)  # an ended pause is over in milliseconds
        assert writing.is_alive(), outcome
        tracker.abort()
    writing.join(10)
    assert not writing.is_alive(), "abort() did not end the rollup write's pause"
    [error] = outcome
    assert isinstance(error, BackendError), error
    assert "ended (the app quits)" in str(error) and "may have done it already" in str(error), error
