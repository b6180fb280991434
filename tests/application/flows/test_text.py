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


def test_excerpt_of_a_reply_that_quotes_first_keeps_what_follows_the_quote():
    # The demo's Sync proposed "(no text)" for the reporter's follow-up: an interleaved reply
    # opens with the quote header, and everything after it was dropped.
    body = ("On Thu, 12 Nov 2026 at 13:05, Priya Raman wrote:\n> Thank you for your report.\n\n"
            "Hello Priya,\n\nTwo weeks on, is there any update?\n\n> And this?\nA bypass too.\n-- \nElena\n")
    assert excerpt(body) == "Hello Priya, Two weeks on, is there any update? A bypass too."
    # A top-posted reply still ends where its quote begins, quoted with ">" or not.
    assert excerpt("Fixed in 3.4.3.\n\nOn Tue, Rita wrote:\nthe old text, not quoted\n") == "Fixed in 3.4.3."
    assert excerpt("\nOn Tue, Rita wrote:\n> only quoted\n") == ""


def test_excerpt_of_a_forward_with_no_words_of_its_own_is_empty():
    # An Outlook-style quote (an "Original Message" or "From:" header, the quote below it not
    # marked with ">") is all someone else's words: none of them is the sender's text, even when
    # the sender wrote nothing above it. Only "On ... wrote:" opens a ">" quote that the
    # sender's own words may follow.
    forward = ("-----Original Message-----\nFrom: Mallory <m@evil.example>\nSent: Monday\n"
               "To: security@frobnicator.example.org\nSubject: x\n\nThe original text\n")
    assert excerpt(forward) == ""
    assert excerpt("\nFrom: Mallory <m@evil.example>\nSent: Monday\n\nThe original text\n") == ""


def test_display_address():
    assert display_address("Rita", "rita@x.example") == "Rita (rita@x.example)"
    assert display_address("", "rita@x.example") == "rita@x.example"
    assert display_address("rita@x.example", "rita@x.example") == "rita@x.example"
