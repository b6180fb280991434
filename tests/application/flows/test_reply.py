"""Reply drafts answer the reporter, whoever wrote last, with the security CC resolved."""

from datetime import datetime, timezone

from mailtriage.backends.contract import Op
from mailtriage.backends.registry import SourceSet
from mailtriage.core.projectconfig import load_project
from mailtriage.demo import demo_project_dir
from mailtriage.application.flows.reply import propose_reply
from mailtriage.application.flows.templates import receipt_body


def demo_thread(subject_start: str):
    sources = SourceSet(load_project(demo_project_dir()))
    since = datetime(2026, 9, 1, tzinfo=timezone.utc)
    threads = sources.dispatch(Op.LIST_RECENT_THREADS, lambda b: b.list_recent_threads(None, since)).value
    summary = next(t for t in threads if t.subject.startswith(subject_start))
    return sources, sources.dispatch(Op.READ_THREAD, lambda b: b.read_thread(summary.thread_id)).value


def test_reply_goes_to_the_reporter_even_when_a_team_member_wrote_last():
    sources, thread = demo_thread("Request smuggling")
    reporter = thread.messages[0].sender.email
    assert thread.messages[-1].sender.email != reporter  # a team member answered last
    proposal = propose_reply(sources, thread, "Thanks")
    shown = proposal.preview or (proposal.writes[0].fields if proposal.writes else [])
    to = [f.value for f in shown if f.label == "To"]
    assert to == [reporter]
    cc = [(f.value, f.marker) for f in shown if f.label == "Cc"]
    assert cc == [("security@frobnicator.apache.org", "security CC")]


def test_receipt_names_the_fallback_cc_when_the_list_is_unset(tmp_path):
    import shutil

    project = tmp_path / "p"
    shutil.copytree(demo_project_dir(), project)
    text = (project / "project.md").read_text(encoding="utf-8")
    (project / "project.md").write_text(text.replace("security_list: security@frobnicator.apache.org",
                                                     "security_list: TODO"), encoding="utf-8")
    config = load_project(project)
    _, thread = demo_thread("Request smuggling")
    body = receipt_body(config, thread).text
    assert "keep  in copy" not in body
    assert config.get("security_inbox.foundation_security_address") in body


def test_the_receipt_breaks_lines_only_between_paragraphs(tmp_path):
    # A break fixed inside a paragraph lands anywhere once a long subject is filled in (ragged).
    import shutil

    from mailtriage.application.flows.templates import DEFAULT_RECEIPT

    project = tmp_path / "p"
    shutil.copytree(demo_project_dir(), project)
    _, thread = demo_thread("Request smuggling")
    demo_text = receipt_body(load_project(project), thread).text
    (project / "templates" / "receipt.md").unlink()  # the default text, with a note
    default = receipt_body(load_project(project), thread)
    assert default.note and default.text.startswith(DEFAULT_RECEIPT.split("{")[0])
    default_text = default.text
    for text in (demo_text, default_text):
        *prose, signature = text.rstrip("\n").split("\n\n")
        assert len(prose) == 3 and all("\n" not in paragraph for paragraph in prose), text
        assert signature.endswith("security team")  # the sign-off: test_the_receipt_signs_once_with_or_without_a_name


def test_the_receipt_signs_once_with_or_without_a_name(tmp_path):
    # With no name set it signed "The security team / on behalf of the … security team" (issue 35).
    import shutil

    project = tmp_path / "p"
    shutil.copytree(demo_project_dir(), project)
    config = load_project(project)
    team = f"the {config.title} security team"
    _, thread = demo_thread("Request smuggling")
    legacy = (project / "templates" / "receipt.md").read_text(encoding="utf-8").replace(
        "{sign_off}", "{sender_name}\non behalf of the {project} security team")
    for template in ("demo", "default", "copied before {sign_off}"):
        if template == "default":
            (project / "templates" / "receipt.md").unlink()
        elif template.startswith("copied"):  # a project's copy of the old demo template
            (project / "templates" / "receipt.md").write_text(legacy, encoding="utf-8")
        config = load_project(project)
        unnamed = receipt_body(config, thread).text.rstrip("\n")
        named = receipt_body(config, thread, sender_name="Priya Raman").text.rstrip("\n")
        assert unnamed.endswith("\n\n" + team[0].upper() + team[1:]), (template, unnamed[-120:])
        assert "on behalf of" not in unnamed
        assert named.endswith(f"\n\nPriya Raman\non behalf of {team}"), (template, named[-120:])
