"""A throw-away certificate for loopback TLS, made with the openssl command line."""

from __future__ import annotations

import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TestCertificate:
    cert: Path
    key: Path

    def client_context(self) -> ssl.SSLContext:
        """A verifying client context that trusts only this certificate."""
        ctx = ssl.create_default_context(cafile=str(self.cert))
        return ctx

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(self.cert), str(self.key))
        return ctx


def make_certificate(directory: Path, name: str = "localhost") -> TestCertificate:
    """Create a self-signed EC certificate for ``localhost`` and ``127.0.0.1``."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    return TestCertificate(cert, key)
