"""Mail content made inert before it leaves a flow."""

from mailtriage.application.flows.text import display_address, excerpt, markdown_inert, one_line


def test_one_line_removes_controls_and_invisible_characters():
    assert one_line("a\x1b[31mb\u202ec\u200bd\r\ne\tf") == "a [31mbcd e f"
    assert one_line("x" * 10, limit=5) == "xxxx…"


def test_markdown_inert_neutralises_structure():
    text = "### CVE\n<details><summary>x</summary>\n> quote\nplain <b>"
    assert markdown_inert(text).split("\n") == ["\\#\\#\\# CVE", "&lt;details&gt;&lt;summary&gt;x&lt;/summary&gt;",
                                                "&gt; quote", "plain &lt;b&gt;"]


def test_excerpt_keeps_what_the_sender_wrote():
    body = "New finding here.\n\nOn Tue, Rita wrote:\n> old\n-- \nsig"
    assert excerpt(body) == "New finding here."
    assert excerpt("> only quoted\n") == ""


def test_display_address():
    assert display_address("Rita", "rita@x.example") == "Rita (rita@x.example)"
    assert display_address("", "rita@x.example") == "rita@x.example"
    assert display_address("rita@x.example", "rita@x.example") == "rita@x.example"
