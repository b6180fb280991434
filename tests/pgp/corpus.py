"""The verdict corpus: signed mails built with gpg, each beside what ``gpg --verify`` says of it.

Each case builds one mail the way a real client lays it out (the layouts of issue 32 among them)
and says which bytes gpg itself verifies: for PGP/MIME the signed entity exactly as it sits
between the boundaries of the raw mail, for inline armor the text part's transfer-decoded bytes
(what neomutt hands gpg), for inline armor in HTML the armor as gpg wrote it (what the text
extracted from the HTML must be). :func:`gpg_verdict` runs ``gpg --verify`` (``--decrypt`` for an
encrypted and signed armor) on those bytes; the suite compares mailtriage's verdict with it.
"""

from __future__ import annotations

import html
import quopri
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .conftest import Homes, headers, pgp_mime_signed

LATIN1 = "Rapport: débordement dans l'analyse d'en-tête, façon « AAAA ».\nMerci, Rité\n"
KOI8R = "Отчёт: переполнение буфера в разборе заголовка.\nСпасибо, Рита\n"


@dataclass
class Case:
    name: str
    raw: bytes  # the mail
    data: bytes  # what gpg verifies (the signed entity, or the clearsigned text)
    signature: bytes | None  # a detached signature, or None for inline
    shown: str  # a piece of text the reader must show
    issue_layout: bool = False  # one of the nine genuine layouts issue 32 found read as BAD
    decrypt: bool = False  # ``data`` is an encrypted (and signed) armor: gpg --decrypt gives the verdict


def _crlf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def inline(homes: Homes, name: str, text: str, charset: str, cte: str, signer: str = "reporter",
           tamper: bool = False) -> Case:
    signed = homes.detach_sign_clear(text.encode(charset), signer)
    if tamper:
        signed = signed.replace("Rita".encode(charset), "Ruth".encode(charset), 1).replace(
            "Rité".encode(charset), "Ruth".encode(charset), 1)
    body = quopri.encodestring(signed) if cte == "quoted-printable" else signed
    raw = (headers() + f"Content-Type: text/plain; charset={charset}\r\nContent-Transfer-Encoding: {cte}\r\n\r\n"
           ).encode() + _crlf(body)
    return Case(name, raw, _crlf(signed), None, text.splitlines()[0], issue_layout=not tamper)


# Inline armor in HTML, as webmail sends it. The HTML is written here the way each client writes
# it; ``data`` is the armor gpg produced, which is what the text extracted from the HTML must be.
HTML_TEXT = 'Report: frob <= 2.3 & "friends" crash on <script>.\n\nSteps:  run it twice.\n- a dash line\nMerci, Rité\n'


def _html_gmail(armor: str) -> str:
    """Gmail-like: one <div>, lines joined by <br> (a newline after each in the source), runs of
    spaces as &nbsp;."""
    lines = [html.escape(line).replace("  ", "&nbsp; ") for line in armor.split("\n")]
    return '<div dir="ltr">' + "<br>\n".join(lines) + "</div>\n"


def _html_div_lines(armor: str) -> str:
    """A <div> per line, an empty line as <div><br></div> (Outlook on the web, Thunderbird's HTML)."""
    lines = [html.escape(line).replace("  ", " &nbsp;") or "<br>" for line in armor.rstrip("\n").split("\n")]
    return "<html><head><style>div { margin: 0 }</style></head><body>\n" + "\n".join(
        f"<div>{line}</div>" for line in lines) + "\n</body></html>\n"


def _html_pre(armor: str) -> str:
    """The armor in a <pre>, entities for <, > and & only (a webmail's "plain text" mode)."""
    return "<html><body><!-- -----BEGIN PGP MESSAGE----- in a comment is no armor --><pre>" + html.escape(
        armor, quote=False) + "</pre></body></html>\n"


HTML_LAYOUTS = {"gmail <br>": _html_gmail, "<div> per line": _html_div_lines, "<pre>": _html_pre}


def html_inline(homes: Homes, name: str, layout: str, cte: str = "8bit", tamper: bool = False,
                encrypt: bool = False, text: str = HTML_TEXT, charset: str = "utf-8") -> Case:
    if encrypt:
        armor = homes.encrypt(text.encode(charset), "team", sign="reporter").decode(charset)
    else:
        armor = homes.detach_sign_clear(text.encode(charset), "reporter").decode(charset)
    markup = HTML_LAYOUTS[layout](armor)
    if tamper:
        markup = markup.replace("twice", "thrice", 1)
    body = markup.encode(charset)
    body = quopri.encodestring(body) if cte == "quoted-printable" else body
    raw = (headers() + f"Content-Type: text/html; charset={charset}\r\nContent-Transfer-Encoding: {cte}\r\n\r\n"
           ).encode() + _crlf(body)
    shown = "thrice" if tamper else text.splitlines()[0] if text != HTML_TEXT else \
        'frob <= 2.3 & "friends" crash on <script>.'
    data = (armor.replace("twice", "thrice", 1) if tamper else armor).encode(charset)
    return Case(name, raw, data, None, shown, decrypt=encrypt)


def pgp_mime(homes: Homes, name: str, entity: bytes, shown: str, signer: str = "reporter",
             tamper: Callable[[bytes], bytes] | None = None, issue_layout: bool = False) -> Case:
    signature = homes.detach_sign(entity, signer)
    carried = tamper(entity) if tamper else entity
    return Case(name, pgp_mime_signed(carried, signature), carried, signature, shown, issue_layout)


def cases(homes: Homes) -> list[Case]:
    """The corpus (keys are the session's, so the mails are built per test)."""
    out = [
        # Inline clearsigned text in its own charset and transfer encoding (4 layouts of issue 32).
        inline(homes, "inline latin-1 8bit", LATIN1, "iso-8859-1", "8bit"),
        inline(homes, "inline latin-1 quoted-printable", LATIN1, "iso-8859-1", "quoted-printable"),
        inline(homes, "inline koi8-r 8bit", KOI8R, "koi8-r", "8bit"),
        inline(homes, "inline koi8-r quoted-printable", KOI8R, "koi8-r", "quoted-printable"),
        # PGP/MIME signed entities written unlike the email generator would write them (5 layouts).
        pgp_mime(homes, "pgp/mime Content-Type without a space",
                 b"Content-Type:text/plain; charset=utf-8\r\n\r\nI found a bug.\r\n", "I found a bug.",
                 issue_layout=True),
        pgp_mime(homes, "pgp/mime an empty header value",
                 b"Content-Type: text/plain; charset=utf-8\r\nContent-Description:\r\n\r\nEmpty value.\r\n",
                 "Empty value.", issue_layout=True),
        pgp_mime(homes, "pgp/mime lower-case names and extra spaces",
                 b'content-type:   text/plain;  charset="utf-8"\r\ncontent-transfer-encoding:  7bit\r\n\r\n'
                 b"Spaces.\r\n", "Spaces.", issue_layout=True),
        pgp_mime(homes, "pgp/mime a tab after the colon",
                 b"Content-Type:\ttext/plain; charset=utf-8\r\n\r\nA tab.\r\n", "A tab.", issue_layout=True),
        pgp_mime(homes, "pgp/mime a nested multipart whose closing delimiter ends the part",
                 b'Content-Type: multipart/mixed; boundary="inner"\r\n\r\n--inner\r\n'
                 b"Content-Type: text/plain; charset=utf-8\r\n\r\nNested.\r\n--inner--", "Nested.",
                 issue_layout=True),
        pgp_mime(homes, "pgp/mime a header folded with a tab",
                 b"Content-Type: text/plain;\r\n\tcharset=us-ascii\r\nContent-Disposition: inline\r\n\r\nFolded.\r\n",
                 "Folded."),
        pgp_mime(homes, "pgp/mime latin-1 8bit body",
                 b"Content-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
                 + LATIN1.encode("iso-8859-1").replace(b"\n", b"\r\n"), "Rapport: débordement"),
        # The usual cases, for the comparison to cover every verdict.
        pgp_mime(homes, "pgp/mime plain", b"Content-Type: text/plain; charset=utf-8\r\n\r\nPlain.\r\n", "Plain."),
        pgp_mime(homes, "pgp/mime tampered", b"Content-Type: text/plain; charset=utf-8\r\n\r\nPay 10 EUR.\r\n",
                 "Pay 1000 EUR.", tamper=lambda e: e.replace(b"10 EUR", b"1000 EUR")),
        pgp_mime(homes, "pgp/mime by a key not in the keyring",
                 b"Content-Type: text/plain; charset=utf-8\r\n\r\nStranger.\r\n", "Stranger.", signer="stranger"),
        inline(homes, "inline latin-1 tampered", LATIN1, "iso-8859-1", "8bit", tamper=True),
        # Inline armor in HTML (webmail): verified on the armor extracted from the HTML.
        html_inline(homes, "html clearsigned, gmail <br>", "gmail <br>"),
        html_inline(homes, "html clearsigned, gmail <br>, quoted-printable", "gmail <br>", "quoted-printable"),
        html_inline(homes, "html clearsigned, <div> per line", "<div> per line"),
        html_inline(homes, "html clearsigned, <pre>", "<pre>"),
        html_inline(homes, "html clearsigned, tampered", "gmail <br>", tamper=True),
        html_inline(homes, "html encrypted and signed, gmail <br>", "gmail <br>", encrypt=True),
        html_inline(homes, "html encrypted and signed, <div> per line", "<div> per line", encrypt=True),
        html_inline(homes, "html clearsigned koi8-r, quoted-printable", "gmail <br>", "quoted-printable",
                    text=KOI8R, charset="koi8-r"),
        html_inline(homes, "html clearsigned latin-1, <pre>", "<pre>", text=LATIN1, charset="iso-8859-1"),
        html_inline(homes, "html encrypted and signed koi8-r", "<div> per line", text=KOI8R, charset="koi8-r",
                    encrypt=True),
    ]
    return out


# Public real-world test mail: CPython's own email test messages (Debian libpython3.11-testsuite,
# PSF License), read in place; nothing is copied into this repository.
CPYTHON_EMAIL_DATA = Path("/usr/lib/python3.11/test/test_email/data")


def real_world_cases() -> list[Case]:
    """Real signed mail, with the signed part and signature cut out here by hand (RFC 2046
    delimiters, CRLF form), independently of mailtriage's own cutting."""
    raw = (CPYTHON_EMAIL_DATA / "msg_45.txt").read_bytes()  # a real GnuPG 2.0.6 PGP/MIME signature
    pieces = raw.split(b"\n--borderline")
    data = pieces[1].split(b"\n", 1)[1].replace(b"\n", b"\r\n")
    body = pieces[2].split(b"\n\n", 1)[1]
    return [Case("real world: CPython msg_45.txt", raw, data, body, "This is the signed contents.")]


_STATES = (("GOODSIG", "valid"), ("BADSIG", "bad"), ("EXPKEYSIG", "expired-key"), ("REVKEYSIG", "revoked-key"),
           ("EXPSIG", "expired-signature"), ("NO_PUBKEY", "unknown-key"), ("ERRSIG", "error"))


def gpg_verdict(home: Path, case: Case) -> str:
    """What ``gpg --verify`` says of the case's bytes, in mailtriage's state words."""
    base = ["gpg", "--homedir", str(home), "--batch", "--status-fd", "1", "--no-auto-key-retrieve",
            "--decrypt" if case.decrypt else "--verify"]
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        if case.signature is None:
            args = [*base, "-"] if not case.decrypt else [*base, "--output", "/dev/null", "-"]
        else:
            sig = Path(tmp) / "sig.asc"
            sig.write_bytes(case.signature)
            args = [*base, str(sig), "-"]
        done = subprocess.run(args, input=case.data, capture_output=True, timeout=60)
    keys = {line.split()[1] for line in done.stdout.decode(errors="replace").splitlines()
            if line.startswith("[GNUPG:] ") and len(line.split()) > 1}
    return next((state for key, state in _STATES if key in keys), "none")
