"""`mailtriage --demo queue`: the demo's queue is judged at the demo's pinned now, and reads
as a triager would (answered reports are no first-response breach)."""

import json
import os
import subprocess
import sys

from mailtriage.demo import DEMO_NOW_ISO


def test_the_demo_queue_is_judged_at_the_demos_pinned_now_and_answered_rows_are_no_first_response_breach(
        tmp_path):
    env = {**os.environ, "MAILTRIAGE_DEMO_DIR": str(tmp_path / "demo"),
           "MAILTRIAGE_DATA_DIR": str(tmp_path / "data"), "MAILTRIAGE_CONFIG_DIR": str(tmp_path / "config")}
    proc = subprocess.run([sys.executable, "-m", "mailtriage.cli.main", "--demo", "queue", "--json"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["now"] == DEMO_NOW_ISO
    breached = [r for r in doc["rows"] if "first_response" in r["breaches"]]
    assert breached and all(r["state"] == "new" for r in breached)
    automated = {r["subject"]: r for r in doc["rows"] if r["state"] == "automated"}
    assert {"Invoice #88341 overdue - action required", "Boost your project: 10,000 GitHub stars in 7 days!!!",
            "Undelivered Mail Returned to Sender"} <= set(automated)
    assert all(not r["breaches"] for r in automated.values())
    assert [r["state"] for r in doc["rows"]][-len(automated):] == ["automated"] * len(automated)
