"""Benchmark: opening an encrypted 100 KB report beside the same report in clear, same run.

    .venv/bin/python benchmarks/bench_pgp.py [--kb 100] [--runs 7]

A throwaway GNUPGHOME gets a team key (ed25519/cv25519, no passphrase) and a reporter key. Two
mbox projects hold the same ~100 KB report: one in clear, one PGP/MIME encrypted to the team and
signed by the reporter. Each run opens the project, lists the threads and reads the thread
through the application layer (what `mailtriage mail read-thread` and the app do), in a fresh
process-level Project each time so no cache helps. Figures: median read time of each, the
difference (goal: at most +0.3 s), and the listing time of each (goal: the same; the listing
never decrypts). The first encrypted read also starts the gpg-agent; it is reported apart.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mailtriage.application.project import Project  # noqa: E402
from tests.core.helpers import write_project  # noqa: E402
from tests.pgp.conftest import entity, pgp_mime_encrypted  # noqa: E402


def gpg(home: Path, *args: str, data: bytes = b"") -> bytes:
    done = subprocess.run(["gpg", "--homedir", str(home), "--batch", "--yes", "--pinentry-mode", "loopback",
                           "--passphrase", "", *args], input=data, capture_output=True, timeout=120, check=True)
    return done.stdout


def make_key(home: Path, uid: str) -> str:
    gpg(home, "--quick-gen-key", uid, "ed25519", "sign", "0")
    out = gpg(home, "--with-colons", "--list-keys", uid).decode()
    fpr = next(line.split(":")[9] for line in out.splitlines() if line.startswith("fpr"))
    gpg(home, "--quick-add-key", fpr, "cv25519", "encr", "0")
    return fpr


def report_text(kb: int) -> str:
    """``kb`` KB of text that compresses like a real report with logs and hex dumps (not a repeated line)."""
    lines, n = [], 0
    digest = hashlib.sha256(b"report").hexdigest()
    while n < kb * 1024:
        digest = hashlib.sha256(digest.encode()).hexdigest()
        line = f"frame {len(lines):05d}: at 0x{digest[:12]} in parse_header() {digest[12:60]}\n"
        lines.append(line)
        n += len(line)
    return "".join(lines)


def project(folder: Path, raw: bytes) -> Path:
    folder.mkdir(parents=True)
    with (folder / "security.mbox").open("wb") as out:
        out.write(b"From rita@example.net Tue Dec  1 10:00:00 2026\n")
        out.write(raw.replace(b"\r\n", b"\n").replace(b"\nFrom ", b"\n>From ") + b"\n")
    write_project(folder, [("mbox", "primary", "yes")], config={
        "security_list": "security@example.org",
        "mail_sources": {"mbox": {"path": "security.mbox", "list": "security@example.org"}}})
    return folder


def timed_open(folder: Path) -> tuple[float, float, str]:
    """(listing seconds, read seconds, body) for one fresh open of the project."""
    proj = Project.open(folder)
    try:
        started = time.perf_counter()
        proj.list_threads("security@example.org", proj.since("3650d"))
        listed = time.perf_counter() - started
        started = time.perf_counter()
        thread = proj.read_thread(proj.thread_id("msgid:<r1@example.net>")).value
        read = time.perf_counter() - started
        return listed, read, thread.messages[0].body_text
    finally:
        proj.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="mtb", dir="/tmp"))
    home = base / "g"
    home.mkdir(mode=0o700)
    try:
        team = make_key(home, "Security Team <security@example.org>")
        rita = make_key(home, "Rita Reporter <rita@example.net>")
        text = report_text(args.kb)
        inner = entity(text)
        armored = gpg(home, "--armor", "--trust-model", "always", "--encrypt", "--recipient", team,
                      "--sign", "--local-user", rita, data=inner)
        clear_raw = (b"From: Rita Reporter <rita@example.net>\r\nTo: security@example.org\r\n"
                     b"Subject: Report\r\nMessage-ID: <r1@example.net>\r\nDate: Tue, 01 Dec 2026 10:00:00 +0000\r\n"
                     b"MIME-Version: 1.0\r\n") + inner
        clear = project(base / "clear", clear_raw)
        encrypted = project(base / "encrypted", pgp_mime_encrypted(armored))
        config = base / "config"
        config.mkdir()
        (config / "config.toml").write_text(f'[pgp]\ngnupg_home = "{home}"\n', encoding="utf-8")
        os.environ["MAILTRIAGE_CONFIG_DIR"] = str(config)
        os.environ["MAILTRIAGE_DATA_DIR"] = str(base / "data")
        first = timed_open(encrypted)  # starts the agent
        assert text.strip() in first[2], "the encrypted report was not decrypted"
        figures = {"clear": [], "encrypted": []}
        for _ in range(args.runs):
            for name, folder in (("clear", clear), ("encrypted", encrypted)):
                figures[name].append(timed_open(folder))
        med = {name: (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
               for name, runs in figures.items()}
        added = med["encrypted"][1] - med["clear"][1]
        result = {
            "report_bytes": len(inner),
            "armored_bytes": len(armored),
            "runs": args.runs,
            "read_clear_s": round(med["clear"][1], 4),
            "read_encrypted_s": round(med["encrypted"][1], 4),
            "added_by_decryption_s": round(added, 4),
            "first_encrypted_read_s (agent start)": round(first[1], 4),
            "list_clear_s": round(med["clear"][0], 4),
            "list_encrypted_s": round(med["encrypted"][0], 4),
            "goal_added_at_most_s": 0.3,
            "goal_met": added <= 0.3,
        }
        print(json.dumps(result, indent=2))
        return 0 if result["goal_met"] else 1
    finally:
        subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
