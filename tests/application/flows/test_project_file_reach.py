"""project.md is team data (an attacker's pull request can change it): a key that names a file
cannot reach outside the project's folder. ``templates.receipt`` names the receipt text, which
goes into a draft to the reporter, so ``~/.ssh/id_ed25519`` there would mail a private file to
a stranger. The template is read only from inside the folder of project.md."""

from __future__ import annotations

import pytest

from tests.servers.fixtures import memory_keyring  # noqa: F401

from mailtriage.backends.contract import ThreadId
from mailtriage.backends.registry import SourceSet
from mailtriage.application.flows.importer import propose_import
from tests.application.flows.conftest import REPORT

SECRET = "PRIVATE KEY of the triager, never to be mailed"


def _receipt(env):
    proposal = propose_import(SourceSet(env.config()), env.tracker(), ThreadId("mbox", REPORT),
                              sender_name="Sam Security")
    return {f.label: f.value for f in proposal.preview}["Body"], proposal.notes


def _point_template_at(env, value: str) -> None:
    env.write_project([("mbox", "primary", "yes")],
                      extra={"mail_sources.mbox": {"path": env.archive.name, "list": "security@frobnicator.example.org"},
                             "templates.receipt": value})


@pytest.mark.parametrize("how", ["absolute", "dotdot", "home", "symlink"])
def test_a_receipt_template_outside_the_project_folder_is_not_read(mbox_env, tmp_path, monkeypatch, how):
    outside = tmp_path / "home" / "private.txt"
    outside.parent.mkdir()
    outside.write_text(SECRET + "\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(outside.parent))
    if how == "symlink":
        (mbox_env.project / "templates" / "link.md").symlink_to(outside)
    value = {"absolute": str(outside), "dotdot": "../../home/private.txt", "home": "~/private.txt",
             "symlink": "templates/link.md"}[how]
    _point_template_at(mbox_env, value)
    body, notes = _receipt(mbox_env)
    assert SECRET not in body
    assert body.startswith("Hi Rita Reporter,")  # the default text is proposed
    assert any("templates.receipt" in n and "outside the project folder" in n for n in notes), notes


def test_a_receipt_template_inside_the_project_folder_is_used(mbox_env):
    (mbox_env.project / "templates" / "team.md").write_text("Dear {reporter_name}: received.\n", encoding="utf-8")
    _point_template_at(mbox_env, "templates/team.md")
    body, _notes = _receipt(mbox_env)
    assert body.startswith("Dear Rita Reporter: received.")


@pytest.mark.parametrize("field", ["{subject:>20000000}", "{reporter_name.__class__}", "{subject!r}",
                                   "{reporter_name[0]}"])
def test_a_receipt_template_takes_plain_placeholders_only(mbox_env, field):
    # A format spec would let a pull request make one huge string; attribute and index access
    # reach into Python objects. Only {name} is a placeholder.
    (mbox_env.project / "templates" / "team.md").write_text(f"Dear {{reporter_name}} {field}\n", encoding="utf-8")
    _point_template_at(mbox_env, "templates/team.md")
    body, notes = _receipt(mbox_env)
    assert body.startswith("Hi Rita Reporter,") and len(body) < 10_000
    assert any("not a valid template" in n and "{name}" in n for n in notes), notes
