"""Verifying TLS contexts for the mail and API clients, made once a process per CA setting.

``ssl.create_default_context()`` reads the system's CA store (~22 ms of CPU) and an account's
``ca_file`` (a self-hosted CA, a TLS-inspecting proxy, the tests' servers) each time; every IMAP
connection, SMTP send and OAuth client made its own. A context only configures the sockets
wrapped with it, so one is shared by every client of the same CAs and use, as core/http.py
shares httpx's (issue 36 §7). An HTTP client's context is never a mail protocol's: httpx sets
its ALPN protocols ("http/1.1") on the context it is given, which an IMAP or SMTP handshake
must not offer.
"""

from __future__ import annotations

import hashlib
import os
import ssl
import threading

_CONTEXTS: dict[tuple, ssl.SSLContext] = {}
_LOCK = threading.Lock()


def trusting(ca_file: str | None = None, *, use: str, system_cas: bool = True) -> ssl.SSLContext:
    """A verifying context for ``use`` ("http" or "mail": never shared between the two) of the
    system's CAs (``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` as OpenSSL reads them) and ``ca_file``'s; with ``system_cas=False``, of ``ca_file``'s alone (what
    ``ssl.create_default_context(cafile=…)`` makes). The file is read on every call, so a
    replaced CA is loaded again and an unreadable one raises OSError (ssl.SSLError: not a CA
    file) at each call, as before."""
    digest = b""
    if ca_file:
        with open(ca_file, "rb") as handle:
            digest = hashlib.sha256(handle.read()).digest()
    key = (use, ca_file, digest, system_cas, os.environ.get("SSL_CERT_FILE", ""), os.environ.get("SSL_CERT_DIR", ""))
    with _LOCK:
        context = _CONTEXTS.get(key)
        if context is None:
            if system_cas or not ca_file:
                context = ssl.create_default_context()
                if ca_file:
                    context.load_verify_locations(cafile=ca_file)
            else:
                context = ssl.create_default_context(cafile=ca_file)
            _CONTEXTS[key] = context
        return context
