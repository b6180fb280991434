"""The local-files format's YAML: libyaml's loader reads what the pure one reads, and the plain
descriptor reader reads what PyYAML reads or declines (trackers/localformat.py)."""

from __future__ import annotations

import datetime
import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from mailtriage.trackers import localformat as fmt
from mailtriage.trackers.contract import MalformedIssue

# Front matter and descriptors as people write them by hand (the general reader's cases).
DOCUMENTS = [
    fmt.Descriptor("SEC").render(),
    fmt.Descriptor("VULN7", 6, True).render(),
    'id: "SEC-0001"\ntitle: "Overflow"\nstate: "open"\nlabels: ["needs triage"]\nassignees: []\nmilestone: null\n',
    "id: SEC-0002\ntitle: Plain scalar title, a question? no\nstate: open\n",
    "id: SEC-0003\ntitle: 'single ''quoted'''\nstate: closed\nlabels:\n  - a\n  - b c\nassignees:\n- x\n",
    "id: SEC-0004\ntitle: \"unicode \\u00e9 é ✓\"\ncreated: 2026-11-21T14:00:00Z\nupdated: 2026-11-21 14:00:00\n",
    "id: SEC-0005\ntitle: |\n  two\n  lines\nstate: open\nmilestone: ~\nflag: yes\nother: off\nn: 0o17\nh: 0x1f\nf: 1.5e3\n",
    "id: SEC-0006\ntitle: >\n  folded\n  text\n\nstate: open\nnested: {a: 1, b: [1, 2]}\ndate: 2026-12-04\n",
    "# comment\nformat: mailtriage-local-tracker # trailing\nversion: 1\nprefix: SEC\ndigits: 4\naccess_restricted: True\n",
    "---\nformat: mailtriage-local-tracker\nversion: 1\nprefix: SEC\n...\n",
    "key: value\r\nother: 2\r\n",
    "",
    "just text",
    "- a\n- b\n",
    "a: 1\na: 2\n",
]
BROKEN = ["key: [unclosed", "a: b: c", "title: Plain scalar: with a colon", "\tkey: tab", "key: 'open", "a:\n  - x\n y: 2\n", "{", "a: *alias"]


@pytest.mark.parametrize("text", DOCUMENTS)
def test_libyamls_loader_reads_what_the_pure_loader_reads(text):
    assert yaml.__with_libyaml__, "PyYAML without libyaml here: the check would compare the pure loader with itself"
    assert fmt.safe_load(text) == yaml.load(text, Loader=yaml.SafeLoader)


@pytest.mark.parametrize("text", BROKEN)
def test_libyamls_loader_refuses_what_the_pure_loader_refuses(text):
    with pytest.raises(yaml.YAMLError):
        yaml.load(text, Loader=yaml.SafeLoader)
    with pytest.raises(yaml.YAMLError):
        fmt.safe_load(text)


def test_without_libyaml_the_pure_loader_reads_it(monkeypatch):
    monkeypatch.delattr(yaml, "CSafeLoader")
    assert fmt.safe_load(DOCUMENTS[4]) == yaml.load(DOCUMENTS[4], Loader=yaml.SafeLoader)
    assert fmt.safe_load(DOCUMENTS[5])["created"] == datetime.datetime(2026, 11, 21, 14, 0, tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize("text", DOCUMENTS)
def test_the_plain_reader_reads_what_pyyaml_reads_or_declines(text):
    plain = fmt._simple_mapping(text)
    assert plain is None or plain == yaml.load(text, Loader=yaml.SafeLoader)


@pytest.mark.parametrize("descriptor", [fmt.Descriptor("SEC"), fmt.Descriptor("A", 1, True), fmt.Descriptor("Z9Z", 9)])
def test_every_rendered_descriptor_is_read_without_pyyaml(descriptor):
    text = descriptor.render()
    assert fmt._simple_mapping(text) == yaml.load(text, Loader=yaml.SafeLoader)
    assert fmt.parse_descriptor(text, "tracker-format.yaml") == descriptor


def test_a_descriptor_the_plain_reader_declines_is_read_and_checked_by_pyyaml():
    text = "format: mailtriage-local-tracker\nversion: 1\nprefix: 'SEC'\ndigits: 3\naccess_restricted: yes\n"
    assert fmt._simple_mapping(text) is None
    assert fmt.parse_descriptor(text, "d") == fmt.Descriptor("SEC", 3, True)
    with pytest.raises(MalformedIssue, match="not valid YAML"):
        fmt.parse_descriptor("format: [", "d")
    with pytest.raises(MalformedIssue, match="access_restricted 'sure' is not true or false"):
        fmt.parse_descriptor("format: mailtriage-local-tracker\nversion: 1\nprefix: SEC\naccess_restricted: sure\n", "d")


# Words and numbers YAML 1.1 reads in many ways, keys among them: the plain reader must agree or decline.
TOKEN_LIST = ["a", "SEC", "x-y", "0", "1", "01", "010", "08", "10", "1_0", "-1", "+1", "0x1", "1e3", "1.5", ".5", "true",
                          "false", "True", "FALSE", "yes", "No", "on", "Off", "y", "n", "null", "Null", "~", "'q'",
                          '"q"', "a#b", "#c", "a:b", "[1]", "{}", "2026-12-04", ".inf", "NaN", "é", "-", "*x", "&x"]
KEY_LIST = ["a", "b", "prefix", "on", "yes", "null", "n", "k_1", "Key", "1", "-a"]
TOKENS, KEYS = st.sampled_from(TOKEN_LIST), st.sampled_from(KEY_LIST)


def test_the_plain_reader_reads_each_key_and_word_as_pyyaml_or_declines():
    for key in KEY_LIST:
        for token in TOKEN_LIST:
            text = f"{key}: {token}\n"
            plain = fmt._simple_mapping(text)
            assert plain is None or plain == yaml.load(text, Loader=yaml.SafeLoader), text
PLAIN_LINES = st.tuples(KEYS, TOKENS).map(lambda t: f"{t[0]}: {t[1]}")  # the reader's own shape, mostly
LINES = st.one_of(
    PLAIN_LINES, PLAIN_LINES, PLAIN_LINES,
    st.tuples(KEYS, st.sampled_from([": ", ":  ", ":", " : ", ":\t"]), TOKENS, st.sampled_from(["", " ", "\t", " # c"]))
    .map(lambda t: "".join(t)),
    st.sampled_from(["", "# comment", "  # indented", "---", "...", " a: 1", "\ta: 1", "- a"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(LINES, max_size=4))
def test_the_plain_reader_never_reads_a_document_otherwise_than_pyyaml(lines):
    text = "\n".join(lines)
    plain = fmt._simple_mapping(text)
    if plain is not None:
        assert plain == yaml.load(text, Loader=yaml.SafeLoader)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=12).map(lambda t: f'"{t}"'), st.text(max_size=12),
                 st.sampled_from(["null", "[]", '"a\\"b"', '"tab\there"', '"\u2028"', ' "x"', '"x" ', '"a"b"'])))
def test_a_front_matter_value_reads_as_json_reads_it(text):
    """The written shapes taken without the JSON decoder (a first sync parses 10,000 front matters)."""
    try:
        want = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            fmt._json_value(text)
        return
    got = fmt._json_value(text)
    assert repr(got) == repr(want) and type(got) is type(want)  # (repr: NaN is a JSON value too)
