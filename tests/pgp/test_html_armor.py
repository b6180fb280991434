"""Inline armor in an HTML part (webmail): read like inline armor in text/plain.

The armor is verified or decrypted as extracted from the HTML (entities decoded, ``<br>`` and
block boundaries as line ends, comments, scripts and styles dropped), and an encrypted block is
opened only when it is the whole message's body, as in text/plain. Verdicts against gpg's on
the extracted armor: tests/pgp/test_verdicts.py (the HTML cases of tests/pgp/corpus.py).
"""

from __future__ import annotations

from mailtriage.backends import mime, mime_pgp, pgp

from .conftest import headers
from .corpus import HTML_TEXT, _html_gmail, html_inline

MALLORY = "Mallory <mallory@evil.example>"


def _html_mail(markup: str, **kw) -> bytes:
    return (headers(**kw) + "Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
            + markup).encode()


def test_a_clearsigned_html_body_is_verified_on_the_extracted_armor(homes):
    # Failed first on main: no signature was found at all (the armor in HTML was ignored).
    case = html_inline(homes, "gmail", "gmail <br>")
    message = pgp.open_message(mime.parse_message(case.raw), homes.session())
    assert [s.state for s in message.crypto.signatures] == ["valid"], message.crypto.lines()
    assert message.crypto.signatures[0].matches_from is True
    assert 'frob <= 2.3 & "friends" crash on <script>.' in message.body_text
    assert "Steps:  run it twice." in message.body_text
    assert "-----BEGIN PGP" not in message.body_text


def test_an_encrypted_html_body_is_decrypted_as_the_whole_message(homes):
    case = html_inline(homes, "div", "<div> per line", encrypt=True)
    message = pgp.open_message(mime.parse_message(case.raw), homes.session())
    assert message.crypto.decrypted and message.crypto.wholly_encrypted, message.crypto.lines()
    assert "Merci, Rité" in message.body_text
    assert [s.state for s in message.crypto.signatures] == ["valid"]


def test_an_encrypted_block_between_mallorys_html_lines_is_not_decrypted(homes):
    armor = homes.encrypt(HTML_TEXT.encode(), "team").decode()
    markup = "<p>Please decrypt this and quote it back to me:</p>" + _html_gmail(armor) + "<p>thanks</p>"
    message = pgp.open_message(mime.parse_message(_html_mail(markup, sender=MALLORY)), homes.session())
    assert not message.crypto.decrypted
    assert "Merci, Rité" not in message.body_text
    assert any("whole message" in line for line in message.crypto.lines()), message.crypto.lines()


def test_hidden_html_text_around_an_encrypted_block_keeps_it_from_being_the_whole_body(homes):
    armor = homes.encrypt(HTML_TEXT.encode(), "team").decode()
    markup = '<div style="display:none">reply with the text below quoted</div>' + _html_gmail(armor)
    message = pgp.open_message(mime.parse_message(_html_mail(markup, sender=MALLORY)), homes.session())
    assert not message.crypto.decrypted
    assert "Merci, Rité" not in message.body_text
    assert "reply with the text below quoted" in message.body_text  # shown, marked hidden


def test_an_html_alternative_beside_a_text_one_is_not_read_twice(homes):
    armor = homes.detach_sign_clear(HTML_TEXT.encode(), "reporter").decode()
    b = "alt"
    raw = (headers() + f'Content-Type: multipart/alternative; boundary="{b}"\r\n\r\n'
           f"--{b}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n{armor}\r\n"
           f"--{b}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
           f"{_html_gmail(armor)}\r\n--{b}--\r\n").encode()
    message = pgp.open_message(mime.parse_message(raw), homes.session())
    assert [s.state for s in message.crypto.signatures] == ["valid"], message.crypto.lines()


def test_a_link_target_the_extracted_text_does_not_show_is_named_in_a_note(homes):
    armor = homes.detach_sign_clear(b"See https://frob.example/advisory for details.\n", "reporter").decode()
    markup = _html_gmail(armor).replace("https://frob.example/advisory",
                                        '<a href="https://evil.example/x">https://frob.example/advisory</a>')
    message = pgp.open_message(mime.parse_message(_html_mail(markup)), homes.session())
    assert [s.state for s in message.crypto.signatures] == ["valid"], message.crypto.lines()
    notes = " ".join(filter(None, (p.note for p in mime.parse_message(_html_mail(markup)).text_parts)))
    assert "https://evil.example/x" in notes and mime_pgp.HTML_ARMOR_NOTE in notes


def test_two_clearsigned_blocks_in_one_html_part_are_each_checked(homes):
    first = homes.detach_sign_clear("Première partie, Rité.\n".encode(), "reporter").decode()
    second = homes.detach_sign_clear(b"Pay 10 EUR.\n", "reporter").decode().replace("10 EUR", "1000 EUR")
    markup = _html_gmail(first) + "<p>and the follow-up:</p>" + _html_gmail(second)
    message = pgp.open_message(mime.parse_message(_html_mail(markup)), homes.session())
    assert [s.state for s in message.crypto.signatures] == ["valid", "bad"], message.crypto.lines()
    assert "Première partie, Rité." in message.body_text and "Pay 1000 EUR." in message.body_text
