"""Markdown <-> Jira wiki markup and ADF: headings, code blocks, round trips."""

from mailtriage.trackers import jiramarkup as m

DOC = "Intro line one\nline two\n\n### Affected versions\n\n1.2.3\n\n```python\n### not a heading\n```\n\n## Other\n\ntext\n"


def test_wiki_round_trip_and_mapping():
    wiki = m.md_to_wiki(DOC)
    assert "h3. Affected versions" in wiki and "h2. Other" in wiki
    assert "{code:python}\n### not a heading\n{code}" in wiki
    assert m.wiki_to_md(wiki) == DOC
    assert m.wiki_to_md("{noformat}\nh3. raw\n{noformat}\n") == "```\nh3. raw\n```\n"


def test_adf_round_trip_and_nodes():
    doc = m.md_to_adf(DOC)
    kinds = [n["type"] for n in doc["content"]]
    assert kinds == ["paragraph", "heading", "paragraph", "codeBlock", "heading", "paragraph"]
    assert doc["content"][0]["content"][1] == {"type": "hardBreak"}
    assert doc["content"][3]["attrs"] == {"language": "python"}
    assert m.adf_to_md(doc) == DOC


def test_adf_sections():
    doc = m.md_to_adf(DOC)
    assert m.adf_get_field(doc, "AFFECTED versions") == "1.2.3\n\n```python\n### not a heading\n```"
    assert m.adf_get_field(doc, "missing") is None
    new, created = m.adf_set_field(doc, "CVE", "CVE-2025-1")
    assert created and m.adf_to_md(new) == DOC + "\n### CVE\n\nCVE-2025-1\n"
    new, created = m.adf_set_field(doc, "affected versions", "2.0")
    assert not created and new["content"][0] == doc["content"][0] and new["content"][-2:] == doc["content"][-2:]
