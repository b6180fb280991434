import pytest

from mailtriage.core.projectconfig import ConfigError, load_project

from .helpers import write_project


def test_mail_sources_table_as_the_contract_prints_it(tmp_path):
    (tmp_path / "project.md").write_text(
        "# Foo\n\n## Mail sources\n\n"
        "| Backend | Role | Mandatory | Notes |\n"
        "|---|---|---|---|\n"
        "| `gmail`    | primary  | yes | Triager Gmail account is subscribed to `<security-list>` and `<private-list>` |\n"
        "| `ponymail` | fallback | no  | Read-only archive backstop when Gmail history is incomplete |\n",
        encoding="utf-8",
    )
    config = load_project(tmp_path)
    assert [(e.name, e.role, e.mandatory) for e in config.mail_sources] == [
        ("gmail", "primary", True),
        ("ponymail", "fallback", False),
    ]
    assert "`<security-list>`" in config.mail_sources[0].notes


def test_preferred_for_several_ops(tmp_path):
    write_project(tmp_path, [
        ("imap", "preferred for read_thread, list_recent_threads", "no"),
        ("gmail", "preferred for create_draft, list_drafts", "no"),
        ("mbox", "primary", "no"),
        ("ponymail", "optional", "no"),
    ])
    config = load_project(tmp_path)
    imap, gmail, mbox, pony = config.mail_sources
    assert imap.role == "preferred" and imap.preferred_ops == ("read_thread", "list_recent_threads")
    assert gmail.preferred_ops == ("create_draft", "list_drafts")
    assert imap.role_text == "preferred for read_thread, list_recent_threads"
    assert pony.role == "optional"


@pytest.mark.parametrize("rows, message", [
    ([("a", "primary", "no"), ("b", "primary", "no")], "2 backends carry the primary role (a, b)"),
    ([("a", "fallback", "no")], "0 backends carry the primary role"),
    ([("a", "primary", "maybe")], "'maybe' is not yes or no"),
    ([("a", "boss", "no")], "unknown role 'boss'"),
    ([("a", "primary", "no"), ("b", "preferred for send_mail", "no")], "unknown operation(s) send_mail"),
    ([("a", "primary", "no"), ("a", "fallback", "no")], "backend a is listed twice"),
])
def test_mail_source_errors_name_file_key_and_valid_values(tmp_path, rows, message):
    write_project(tmp_path, rows)
    with pytest.raises(ConfigError) as info:
        load_project(tmp_path)
    err = info.value
    assert message in str(err)
    assert err.file.endswith("project.md")
    assert err.key and err.valid


def test_missing_project_file_names_the_path(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_project(tmp_path / "nowhere")
    assert "nowhere/project.md" in str(info.value)


def test_broken_yaml_names_the_line(tmp_path):
    write_project(tmp_path, [("mbox", "primary", "no")], raw_config="security_list: [unclosed\n")
    with pytest.raises(ConfigError) as info:
        load_project(tmp_path)
    assert "Configuration line" in info.value.key
    assert "not valid YAML" in str(info.value)


def test_unknown_organization_lists_profiles(tmp_path):
    write_project(tmp_path, [("mbox", "primary", "no")], config={"organization": "nasa"})
    with pytest.raises(ConfigError) as info:
        load_project(tmp_path)
    assert info.value.key == "organization" and "asf" in info.value.valid


def test_first_layer_that_declares_wins_even_null(tmp_path):
    write_project(tmp_path, [("mbox", "primary", "no")], raw_config="""\
        organization: asf
        security_inbox:
          foundation_security_address: null
        tracker:
          labels: [a, b]
        """)
    config = load_project(tmp_path)
    found = config.lookup("security_inbox.foundation_security_address")
    assert found is not None and found.value is None and found.layer == "project"
    # Absent in the project: the organization layer answers.
    assert config.lookup("tracker.commit_attribution").layer == "organization:asf"
    # Absent in project and organization: the framework default.
    assert config.lookup("alerts.poll_seconds").layer == "default"
    assert config.lookup("no.such.key") is None
    assert config.get("tracker.labels") == ["a", "b"]


def test_headings_inside_code_fences_are_not_sections(tmp_path):
    (tmp_path / "project.md").write_text(
        "# P\n\n```\n## Mail sources\n| x |\n```\n\n## Mail sources\n\n"
        "| Backend | Role | Mandatory | Notes |\n|---|---|---|---|\n| mbox | primary | no | |\n",
        encoding="utf-8")
    assert [e.name for e in load_project(tmp_path).mail_sources] == ["mbox"]


def test_user_settings_refuse_secrets(tmp_path):
    from mailtriage.core.settings import load_settings

    path = tmp_path / "config.toml"
    path.write_text('[accounts.work]\nhost = "imap.example.org"\npassword = "hunter2"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(path).accounts()
    assert info.value.key == "accounts.work.password"
    assert "keyring" in "".join([info.value.problem, info.value.valid or ""]) or "set-password" in info.value.valid


def test_user_settings_round_trip(tmp_path):
    from mailtriage.core.settings import load_settings

    path = tmp_path / "sub" / "config.toml"
    settings = load_settings(path)
    assert settings.theme is None
    settings.set("theme", "mailtriage-light")
    settings.save()
    assert load_settings(path).theme == "mailtriage-light"


def test_broken_user_settings_name_the_file(tmp_path):
    from mailtriage.core.settings import load_settings

    path = tmp_path / "config.toml"
    path.write_text("theme = \n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert str(path) in str(info.value) and "TOML" in str(info.value)
