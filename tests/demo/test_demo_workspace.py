"""`--demo` runs on a copy of the demo project in a temporary git repository with a tracker."""

import json
import os
import subprocess
import sys

import pytest


def run(env, *args, stdin=None):
    return subprocess.run([sys.executable, "-m", "mailtriage.cli.main", *args], env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def env(tmp_path):
    return {**os.environ, "MAILTRIAGE_DEMO_DIR": str(tmp_path / "demo"),
            "MAILTRIAGE_DATA_DIR": str(tmp_path / "data"), "MAILTRIAGE_CONFIG_DIR": str(tmp_path / "config")}


def test_demo_import_writes_the_demo_tracker_once_and_offers_publish(env, tmp_path):
    listing = run(env, "--demo", "mail", "list-recent-threads")
    assert listing.returncode == 0, listing.stderr
    threads = json.loads(listing.stdout)["result"]
    assert len(threads) >= 40
    workspace = tmp_path / "demo"
    assert (workspace / "tracker" / "tracker-format.yaml").is_file()
    assert subprocess.run(["git", "status", "--porcelain"], cwd=workspace, capture_output=True,
                          text=True).stdout == ""

    thread_id = next(t["thread_id"] for t in threads if t["subject"].startswith("CSRF"))
    first = run(env, "--demo", "import", thread_id, "--yes")
    assert first.returncode == 0, first.stderr
    issues = json.loads(run(env, "--demo", "tracker", "list", "--state", "all").stdout)
    # The workspace starts with three filed reports; the import adds the fourth.
    assert sorted(i["id"] for i in issues) == ["SEC-0001", "SEC-0002", "SEC-0003", "SEC-0004"]
    assert next(i for i in issues if i["id"] == "SEC-0004")["title"].startswith("CSRF")

    again = run(env, "--demo", "import", thread_id, "--yes")
    assert again.returncode == 0, again.stderr
    assert len(json.loads(run(env, "--demo", "tracker", "list", "--state", "all").stdout)) == 4

    pending = json.loads(run(env, "--demo", "tracker", "pending").stdout)
    assert pending["needs_publish"] is True
    assert [c["path"] for c in pending["changes"]] == ["tracker/SEC-0004.md"]
    # The packaged demo folder itself was never written.
    from mailtriage.demo import demo_project_dir

    assert not (demo_project_dir() / "tracker").exists()
