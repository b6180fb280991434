"""Generated awkward mails for what CPython's email test data lacks.

Each entry is raw RFC 5322 bytes, built by hand on purpose (a library would
produce well-formed mail; these are not).
"""

from __future__ import annotations

import base64


def _b64(text: str, charset: str) -> bytes:
    return base64.b64encode(text.encode(charset))


DSN_BOUNCE = b"""\
From: Mail Delivery System <MAILER-DAEMON@mx.example.org>
To: reporter@example.net
Subject: Undelivered Mail Returned to Sender
Date: Tue, 02 Jan 2024 10:00:05 +0000
Message-ID: <20240102100005.DSN1@mx.example.org>
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="dsn-boundary"

--dsn-boundary
Content-Type: text/plain; charset=us-ascii

This is the mail system at host mx.example.org.
I'm sorry to have to inform you that your message could not be delivered.

--dsn-boundary
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.org
Arrival-Date: Tue,  2 Jan 2024 10:00:01 +0000 (UTC)

Final-Recipient: rfc822; nobody@example.com
Action: failed
Status: 5.1.1
Diagnostic-Code: smtp; 550 5.1.1 <nobody@example.com>: Recipient address rejected

--dsn-boundary
Content-Type: message/rfc822

From: reporter@example.net
To: nobody@example.com
Subject: Security issue in the parser
Message-ID: <original-report@example.net>
Date: Tue, 02 Jan 2024 09:59:00 +0000

The original report body.

--dsn-boundary--
"""

CR_ONLY = (
    b"From: Old Mac <mac@example.org>\r"
    b"To: security@example.org\r"
    b"Subject: CR-only line ends\r"
    b"Date: Wed, 03 Jan 2024 11:00:00 +0100\r"
    b"Message-ID: <cr-only@example.org>\r"
    b"\r"
    b"First line.\rSecond line.\r"
)

NO_MESSAGE_ID = b"""\
From: Anonymous <anon@example.org>
To: security@example.org
Subject: A report without a Message-ID
Date: Thu, 04 Jan 2024 12:00:00 +0000

There is no Message-ID header on this message.
"""

SHARED_ID_FIRST = b"""\
From: First <first@example.org>
To: security@example.org
Subject: Same ID, first message
Date: Fri, 05 Jan 2024 08:00:00 +0000
Message-ID: <same-id@example.org>

First of two messages sharing one Message-ID.
"""

SHARED_ID_SECOND = b"""\
From: Second <second@example.org>
To: security@example.org
Subject: Same ID, second message
Date: Fri, 05 Jan 2024 09:00:00 +0000
Message-ID: <same-id@example.org>

Second of two messages sharing one Message-ID.
"""

LATIN1_QP = b"""\
From: =?iso-8859-1?q?Fran=E7ois_P=E9rez?= <fp@example.fr>
To: security@example.org
Subject: =?iso-8859-1?q?Probl=E8me_de_s=E9curit=E9?=
Date: Sat, 06 Jan 2024 10:00:00 +0100
Message-ID: <latin1-qp@example.fr>
MIME-Version: 1.0
Content-Type: text/plain; charset=iso-8859-1
Content-Transfer-Encoding: quoted-printable

Bonjour, j'ai trouv=E9 un probl=E8me dans l'analyseur =E0 la ligne 42.
"""

SHIFT_JIS = (
    b"From: =?shift_jis?b?" + _b64("山田太郎", "shift_jis") + b"?= <yamada@example.jp>\n"
    b"To: security@example.org\n"
    b"Subject: =?shift_jis?b?" + _b64("脆弱性の報告", "shift_jis") + b"?=\n"
    b"Date: Sun, 07 Jan 2024 10:00:00 +0900\n"
    b"Message-ID: <sjis@example.jp>\n"
    b"MIME-Version: 1.0\n"
    b"Content-Type: text/plain; charset=Shift_JIS\n"
    b"Content-Transfer-Encoding: 8bit\n"
    b"\n" + "パーサーに脆弱性があります。\n".encode("shift_jis")
)

KOI8_R = (
    b"From: =?koi8-r?b?" + _b64("Иван Петров", "koi8-r") + b"?= <ivan@example.ru>\n"
    b"To: security@example.org\n"
    b"Subject: =?koi8-r?b?" + _b64("Уязвимость", "koi8-r") + b"?=\n"
    b"Date: Mon, 08 Jan 2024 10:00:00 +0300\n"
    b"Message-ID: <koi8@example.ru>\n"
    b"MIME-Version: 1.0\n"
    b"Content-Type: text/plain; charset=koi8-r\n"
    b"Content-Transfer-Encoding: 8bit\n"
    b"\n" + "Найдена уязвимость в разборщике.\n".encode("koi8-r")
)

# Declares us-ascii but the body is utf-8: the commonest mislabel in the wild.
MISLABELLED = (
    b"From: Someone <someone@example.org>\n"
    b"Subject: Mislabelled charset\n"
    b"Date: Tue, 09 Jan 2024 10:00:00 +0000\n"
    b"Message-ID: <mislabelled@example.org>\n"
    b"Content-Type: text/plain; charset=us-ascii\n"
    b"\n" + "Crash in Zürich's résumé parser.\n".encode("utf-8")
)

UNKNOWN_CHARSET = (
    b"From: Someone <someone@example.org>\n"
    b"Subject: =?x-martian?q?caf=E9?=\n"
    b"Date: Tue, 09 Jan 2024 11:00:00 +0000\n"
    b"Message-ID: <unknown-charset@example.org>\n"
    b"Content-Type: text/plain; charset=x-martian\n"
    b"\n" + "café\n".encode("latin-1")
)

BROKEN_BASE64 = b"""\
From: Someone <someone@example.org>
Subject: Broken base64
Date: Wed, 10 Jan 2024 10:00:00 +0000
Message-ID: <broken-b64@example.org>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b64"

--b64
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: base64

SGVsbG8sIHRoaXMgaXMgYnJva2Vu
IGJhc2U2N
--b64
Content-Type: application/octet-stream
Content-Disposition: attachment; filename="poc.bin"
Content-Transfer-Encoding: base64

AAECAwQF
--b64--
"""

BROKEN_QP = b"""\
From: Someone <someone@example.org>
Subject: Broken quoted-printable
Date: Wed, 10 Jan 2024 11:00:00 +0000
Message-ID: <broken-qp@example.org>
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: quoted-printable

Bad escapes =ZZ and =4 here, good one: caf=C3=A9.
"""

EIGHT_BIT_HEADERS = (
    b"From: J\xc3\xb6rg M\xc3\xbcller <joerg@example.de>\n"
    b"Subject: Sicherheitsl\xfccke im Parser\n"
    b"Date: Thu, 11 Jan 2024 10:00:00 +0100\n"
    b"Message-ID: <eight-bit@example.de>\n"
    b"\n"
    b"Body.\n"
)

HTML_ONLY = b"""\
From: Reporter <reporter@example.net>
To: security@example.org
Subject: HTML-only report
Date: Fri, 12 Jan 2024 10:00:00 +0000
Message-ID: <html-only@example.net>
MIME-Version: 1.0
Content-Type: text/html; charset=utf-8

<html><head><style>p { color: red }</style></head><body>
<p>Hello <b>team</b>, the <a href="https://example.net/advisory">advisory draft</a> is ready.</p>
<p><img src="REMOTE_IMAGE_URL" alt="tracking pixel"></p>
<script>alert("no")</script>
</body></html>
"""

LIST_MAIL = b"""\
From: Announce <announce@example.org>
To: list@example.org
Subject: Weekly digest
Date: Sat, 13 Jan 2024 10:00:00 +0000
Message-ID: <list-mail@example.org>
Precedence: bulk
Auto-Submitted: auto-generated
List-Id: <list.example.org>
List-Unsubscribe: <mailto:list-leave@example.org?subject=unsubscribe>,
 <https://example.org/unsubscribe?u=abc>, <http://example.org/u>

Digest body.
"""

ATTACHMENTS = b"""\
From: Reporter <reporter@example.net>
To: security@example.org
Subject: PoC attached
Date: Sun, 14 Jan 2024 10:00:00 +0000
Message-ID: <attachments@example.net>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="mix"

--mix
Content-Type: multipart/alternative; boundary="alt"

--alt
Content-Type: text/plain; charset=utf-8

See the attached proof of concept.
--alt
Content-Type: text/html; charset=utf-8

<p>See the attached <b>proof of concept</b>.</p>
--alt--
--mix
Content-Type: application/octet-stream
Content-Disposition: attachment; filename*=utf-8''r%C3%A9sum%C3%A9%20poc.py
Content-Transfer-Encoding: base64

cHJpbnQoImhlbGxvIikK
--mix
Content-Type: text/x-diff
Content-Disposition: attachment; filename="=?utf-8?q?fix-=C3=BC.patch?="

--- a/x
+++ b/x
--mix--
"""

ALL = {
    "dsn_bounce": DSN_BOUNCE,
    "cr_only": CR_ONLY,
    "no_message_id": NO_MESSAGE_ID,
    "shared_id_first": SHARED_ID_FIRST,
    "shared_id_second": SHARED_ID_SECOND,
    "latin1_qp": LATIN1_QP,
    "shift_jis": SHIFT_JIS,
    "koi8_r": KOI8_R,
    "mislabelled": MISLABELLED,
    "unknown_charset": UNKNOWN_CHARSET,
    "broken_base64": BROKEN_BASE64,
    "broken_qp": BROKEN_QP,
    "eight_bit_headers": EIGHT_BIT_HEADERS,
    "html_only": HTML_ONLY,
    "list_mail": LIST_MAIL,
    "attachments": ATTACHMENTS,
}
