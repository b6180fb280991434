"""### Heading sections: matching, replacing, appending, and leaving every other byte alone."""

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mailtriage.trackers.fields import JIRA_WIKI, MARKDOWN, get_field, set_field, split_lines

BODY = (
    "Intro line  \n"
    "\n"
    "### Affected versions\n"
    "\n"
    "1.2.3 and 1.2.4   \n"
    "\n"
    "### Affected version\n"
    "\n"
    "only one\n"
    "\n"
    "```\n"
    "### Reporter\n"
    "not a heading, inside a fence\n"
    "```\n"
    "\n"
    "### Reporter ###\n"
    "alice\n"
)


def test_get_matches_case_insensitively_and_ignores_fences():
    assert get_field(BODY, "affected VERSIONS") == "1.2.3 and 1.2.4   "
    assert get_field(BODY, "Affected version") == "only one\n\n```\n### Reporter\nnot a heading, inside a fence\n```"
    assert get_field(BODY, "reporter") == "alice"
    assert get_field(BODY, "Missing") is None


def test_set_replaces_only_the_section_text():
    new, created = set_field(BODY, "affected versions", "2.0.0\n")
    assert created is False
    assert new == BODY.replace("1.2.3 and 1.2.4   \n", "2.0.0\n")


def test_set_does_not_confuse_similar_headings():
    new, _ = set_field(BODY, "Affected version", "x")
    assert get_field(new, "Affected versions") == "1.2.3 and 1.2.4   "
    assert get_field(new, "Affected version") == "x"
    assert new.startswith(BODY[: BODY.index("only one")])


def test_set_appends_a_missing_section_at_the_end():
    new, created = set_field(BODY, "CVE", "CVE-2025-0001")
    assert created is True
    assert new == BODY + "\n### CVE\n\nCVE-2025-0001\n"
    # appended to a body without a final newline
    new, _ = set_field("text", "CVE", "x")
    assert new == "text\n\n### CVE\n\nx\n"
    new, _ = set_field("", "CVE", "x")
    assert new == "### CVE\n\nx\n"


def test_crlf_documents_stay_crlf():
    body = "### A\r\n\r\nold\r\n\r\n### B\r\n\r\nkeep  \r\n"
    new, _ = set_field(body, "a", "new\nlines")
    assert new == "### A\r\n\r\nnew\r\nlines\r\n\r\n### B\r\n\r\nkeep  \r\n"
    assert get_field(new, "A") == "new\nlines"
    new, created = set_field(body, "C", "c")
    assert created and new == body + "\r\n### C\r\n\r\nc\r\n"


def test_empty_section_gets_the_value():
    assert set_field("### A\n### B\nb\n", "A", "v")[0] == "### A\n\nv\n\n### B\nb\n"
    assert set_field("### A\n\n### B\n", "A", "v")[0] == "### A\n\nv\n\n### B\n"
    assert set_field("### A", "A", "v")[0] == "### A\n\nv\n"
    assert get_field("### A\n\n### B\n", "A") == ""


def test_section_ends_at_higher_level_heading_but_not_at_level_four():
    body = "### A\n\ntext\n#### sub\nmore\n## Other\nx\n"
    assert get_field(body, "A") == "text\n#### sub\nmore"
    assert set_field(body, "A", "v")[0] == "### A\n\nv\n## Other\nx\n"


def test_tilde_and_long_fences():
    body = "~~~~\n### X\n~~~\nstill code\n~~~~\n### X\n\nreal\n"
    assert get_field(body, "x") == "real"


def test_jira_wiki_headings_and_code_blocks():
    body = "h3. Affected versions\n\n1.0\n\n{code:java}\nh3. Fake\n{code}\nh3. Fake\nreal\n"
    assert get_field(body, "affected versions", JIRA_WIKI) == "1.0\n\n{code:java}\nh3. Fake\n{code}"
    assert get_field(body, "fake", JIRA_WIKI) == "real"
    new, created = set_field(body, "CVE", "CVE-1", JIRA_WIKI)
    assert created and new == body + "\nh3. CVE\n\nCVE-1\n"


# -- properties ------------------------------------------------------------------------

line_text = st.text(alphabet=st.sampled_from(list("ab #`~\t\r -x")), max_size=12)
lines = st.lists(st.tuples(line_text, st.sampled_from(["\n", "\r\n"])), max_size=12)
headings = st.sampled_from(["Affected", "affected", "Affected versions", "CVE"])


@st.composite
def documents(draw):
    parts = []
    for text, end in draw(lines):
        if draw(st.booleans()):
            text = "### " + draw(headings) + draw(st.sampled_from(["", "  ", " ###"]))
        parts.append(text.replace("\r", "") + end)
    if parts and draw(st.booleans()):
        parts[-1] = parts[-1].rstrip("\r\n")
    return "".join(parts)


values = st.text(alphabet=st.sampled_from(list("vw \n")), max_size=10).filter(lambda v: v.strip())


@settings(max_examples=300, deadline=None)
@given(documents(), headings, values)
def test_set_then_get_returns_the_value(doc, heading, value):
    new, _ = set_field(doc, heading, value)
    got = get_field(new, heading)
    # a section's text starts at its first and ends at its last non-blank line
    kept = [line for line in value.rstrip("\n").split("\n")]
    while kept and not kept[0].strip():
        kept.pop(0)
    while kept and not kept[-1].strip():
        kept.pop()
    assert got == "\n".join(kept)


@settings(max_examples=300, deadline=None)
@given(documents(), headings, values)
def test_set_changes_nothing_before_the_section(doc, heading, value):
    new, created = set_field(doc, heading, value)
    if created:
        assert new.startswith(doc)
    else:
        lines_before = split_lines(doc)
        cut = next(i for i, line in enumerate(lines_before)
                   if line.lstrip().startswith("###") and heading.casefold() in line.casefold())
        prefix = "".join(lines_before[:cut])
        assert new.startswith(prefix)


@settings(max_examples=300, deadline=None)
@given(documents(), headings)
def test_setting_the_current_value_of_an_lf_document_is_identity(doc, heading):
    doc = doc.replace("\r", "")
    value = get_field(doc, heading)
    if value:  # a present, non-empty section
        assert set_field(doc, heading, value)[0] == doc


@settings(max_examples=200, deadline=None)
@given(documents(), headings, values, st.sampled_from(["Affected", "CVE", "Other"]))
def test_other_sections_keep_their_text(doc, heading, value, other):
    if other.casefold() == heading.casefold():
        return
    # A body ending inside an open fence gets the fence closed before a new section is
    # appended (tested on its own below); every other section must keep its text.
    assume(get_field(doc, heading) is not None or MARKDOWN.open_block_closer(split_lines(doc)) is None)
    before = get_field(doc, other)
    new, _ = set_field(doc, heading, value)
    after = get_field(new, other)
    assert after == before


def test_appending_after_an_open_fence_closes_it_first():
    doc = "### Affected\n```\ncode\n"
    new, created = set_field(doc, "CVE", "CVE-2026-1")
    assert created
    assert new == "### Affected\n```\ncode\n```\n\n### CVE\n\nCVE-2026-1\n"
    assert get_field(new, "CVE") == "CVE-2026-1"
