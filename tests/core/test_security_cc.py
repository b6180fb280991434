"""Security CC resolution, steps 1–4 of the mail-source contract, table-driven."""

from pathlib import Path

import pytest

from mailtriage.backends.security_cc import configured_address, merge_cc, resolve_security_cc
from mailtriage.core.projectconfig import ConfigError, load_project

from .helpers import write_project

ASF = "security@apache.org"
LIST = "security@foo.apache.org"
OWN = "psirt@example.org"

# (case id, yaml, expected security_cc, expected cc_fallback, blocked, warning fragments)
CASES = [
    ("list configured", f"security_list: {LIST}\n", LIST, None, False, []),
    ("list trimmed", f"security_list: '  {LIST}  '\n", LIST, None, False, []),
    ("list wins over org fallback", f"organization: asf\nsecurity_list: {LIST}\n", LIST, None, False, []),
    ("list in angle brackets", f"security_list: '<{LIST}>'\n", LIST, None, False, []),
    ("list missing, org supplies fallback", "organization: asf\n", ASF, ASF, False,
     ["security_list is missing", ASF, "organization:asf"]),
    ("list null, org fallback", "organization: asf\nsecurity_list: null\n", ASF, ASF, False,
     ["security_list is null in project", ASF]),
    ("list blank, org fallback", "organization: asf\nsecurity_list: '   '\n", ASF, ASF, False,
     ["security_list is blank in project", ASF]),
    ("list TODO, org fallback", "organization: asf\nsecurity_list: TODO\n", ASF, ASF, False,
     ["not a usable address", ASF]),
    ("list literal placeholder", "organization: asf\nsecurity_list: <security-list>\n", ASF, ASF, False,
     ["not a usable address", ASF]),
    ("list template braces", "organization: asf\nsecurity_list: '{{security_list}}'\n", ASF, ASF, False, [ASF]),
    ("project blanks the fallback while org supplies one",
     "organization: asf\nsecurity_inbox:\n  foundation_security_address: ''\n", None, None, True,
     ["no security CC can be resolved", "project disabled the fallback", "Drafts are blocked"]),
    ("project nulls the fallback while org supplies one",
     "organization: asf\nsecurity_inbox:\n  foundation_security_address: null\n", None, None, True,
     ["no security CC can be resolved", "null in project"]),
    ("project fallback is a TODO: lower layers not consulted",
     "organization: asf\nsecurity_inbox:\n  foundation_security_address: TODO\n", None, None, True,
     ["no security CC can be resolved"]),
    ("project supplies its own fallback", f"security_inbox:\n  foundation_security_address: {OWN}\n", OWN, OWN,
     False, ["security_list is missing", OWN, "from project"]),
    ("project fallback beats org fallback",
     f"organization: asf\nsecurity_inbox:\n  foundation_security_address: {OWN}\n", OWN, OWN, False, [OWN]),
    ("nothing configured anywhere", "{}\n", None, None, True,
     ["no security CC can be resolved", "not set in any layer"]),
    ("project nulls the whole security_inbox while org supplies the fallback",
     "organization: asf\nsecurity_inbox: null\n", None, None, True,
     ["no security CC can be resolved", "null in project"]),
    ("a placeholder word inside an address is an address", "security_list: TBD@example.org\n",
     "TBD@example.org", None, False, []),
    ("an address that starts with a placeholder word and a dash is an address",
     "organization: asf\nsecurity_list: todo-security@example.org\n", "todo-security@example.org", None, False, []),
    ("no configuration block at all", None, None, None, True, ["security_list is missing"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_cc_resolution(tmp_path, case):
    _, raw, cc, fallback, blocked, fragments = case
    write_project(tmp_path, [("mbox", "primary", "no")], raw_config=raw) if raw is not None else \
        write_project(tmp_path, [("mbox", "primary", "no")])
    result = resolve_security_cc(load_project(tmp_path))
    assert (result.security_cc, result.cc_fallback, result.blocked) == (cc, fallback, blocked)
    text = " ".join(result.warnings)
    for fragment in fragments:
        assert fragment in text
    if cc and not fallback:
        assert result.warnings == ()
    if blocked or fallback:
        assert len(result.warnings) == 1 and result.warnings[0].startswith("CONFIGURATION WARNING")


@pytest.mark.parametrize("value, expected", [
    (None, None), ("", None), ("  ", None), ("TODO", None), ("todo: fill", None), ("<security-list>", None),
    ("${SECURITY_LIST}", None), ("[security list]", None), ("no-at-sign", None), ("a@b", None),
    (42, None), ("a@b.org", "a@b.org"), (" a@b.org ", "a@b.org"), ("<a@b.org>", "a@b.org"),
])
def test_configured_address(value, expected):
    assert configured_address(value) == expected


def test_merge_cc_keeps_order_and_dedupes_case_insensitively():
    assert merge_cc(["x@e.org", "Sec@E.org"], "sec@e.org") == ["x@e.org", "Sec@E.org"]
    assert merge_cc(["x@e.org"], "sec@e.org") == ["x@e.org", "sec@e.org"]
    assert merge_cc([], "rep@e.org", exclude=("REP@e.org",)) == []
    assert merge_cc([], None) == []


def test_only_the_asf_profile_names_the_asf_address():
    root = Path(__file__).resolve().parents[2]
    offenders = []
    for folder in ("core", "backends", "trackers", "application/flows", "tui", "themes", "cli"):
        for path in (root / folder).rglob("*"):
            if path.is_file() and path.suffix in (".py", ".tcss", ".yaml", ".toml", ".md"):
                if path.name == "asf.yaml":
                    continue
                if ASF in path.read_text(encoding="utf-8", errors="replace"):
                    offenders.append(str(path.relative_to(root)))
    assert offenders == []


@pytest.mark.parametrize("value", ["security-at-example", "a@x.org, b@y.org", "security team", "a@x.org b@y.org"])
@pytest.mark.parametrize("key", ["security_list", "security_inbox.foundation_security_address"])
def test_a_value_that_is_not_one_address_is_a_configuration_error(tmp_path, key, value):
    """Not a placeholder and not one address: a configuration error naming the key, never
    a silent fall back to the organization's address."""
    if key == "security_list":
        raw = f"organization: asf\nsecurity_list: '{value}'\n"
    else:
        raw = f"organization: asf\nsecurity_inbox:\n  foundation_security_address: '{value}'\n"
    write_project(tmp_path, [("mbox", "primary", "no")], raw_config=raw)
    with pytest.raises(ConfigError) as info:
        resolve_security_cc(load_project(tmp_path))
    text = str(info.value)
    assert key in text and "project.md" in text and "one address" in text


@pytest.mark.parametrize("value", ["TBD@example.org", "todo@example.org", "fixme@example.org",
                                   "changeme@example.org",
                                   # issue 30 §7: a placeholder word then "-" began a "note" before
                                   "todo-security@example.org", "TBD-list@example.org", "changeme-soon@example.org"])
def test_placeholder_words_are_placeholders_only_as_the_whole_value(value):
    assert configured_address(value) == value
