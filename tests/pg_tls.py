"""A private PostgreSQL on TCP with TLS on, and the certificates it and its clients use.

pgserver's binaries are built without OpenSSL ("SSL is not supported by this
build"), so the server comes from an installation built with it: Debian's
``postgresql-15`` (which ``.ci/run`` installs, as ``../shared/citus/install.sh`` does).

The test makes its own certificate authority (and a second one that signed nothing
the server shows); the server's certificate names ``localhost`` and ``127.0.0.1``
only. The server listens on 127.0.0.1 and on 127.0.0.2, an address the certificate
does not name, so ``verify-full`` can be refused for a real host-name mismatch.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "CERT_USER",
    "PASSWORD",
    "Certificates",
    "TlsServer",
    "make_certificates",
    "no_home_certificates",
    "ssl_capable_bindir",
    "tls_pgserver",
]

MATCHING_HOST = "127.0.0.1"
OTHER_HOST = "127.0.0.2"
# In every URL of the tests, so they can check no message ever shows it (trust ignores it).
PASSWORD = "url-secret-pw"
STOP_TIMEOUT_S = 60
# The role that may log in over TLS only with a client certificate (pg_hba `cert`).
CERT_USER = "certuser"


@dataclass(frozen=True)
class Certificates:
    ca: Path  # the authority that signed the server's certificate
    other_ca: Path  # an authority that signed nothing the server shows
    server_cert: Path
    server_key: Path
    client_cert: Path  # signed by ``ca`` for CERT_USER
    client_key: Path


def _key() -> Any:
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str) -> Any:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _authority(common_name: str) -> tuple[Any, Any]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _signed(ca: tuple[Any, Any], subject: str, usage: Any, names: list[Any]) -> tuple[Any, Any]:
    """A key and a certificate for ``subject``, signed by ``ca`` (key, certificate)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    ca_key, ca_cert = ca
    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def make_certificates(directory: Path) -> Certificates:
    """A CA, the server's certificate for localhost / 127.0.0.1 and a client's for
    :data:`CERT_USER`, both signed by it, and another CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.x509.oid import ExtendedKeyUsageOID

    ca = _authority("memstore test CA")
    _, other_cert = _authority("memstore other CA")
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address(MATCHING_HOST))]
    server = _signed(ca, "localhost", ExtendedKeyUsageOID.SERVER_AUTH, names)
    client = _signed(ca, CERT_USER, ExtendedKeyUsageOID.CLIENT_AUTH, [])
    pem = serialization.Encoding.PEM
    paths = Certificates(
        ca=directory / "ca.pem",
        other_ca=directory / "other-ca.pem",
        server_cert=directory / "server.crt",
        server_key=directory / "server.key",
        client_cert=directory / "client.crt",
        client_key=directory / "client.key",
    )
    paths.ca.write_bytes(ca[1].public_bytes(pem))
    paths.other_ca.write_bytes(other_cert.public_bytes(pem))
    for (key, cert), cert_path, key_path in (
        (server, paths.server_cert, paths.server_key),
        (client, paths.client_cert, paths.client_key),
    ):
        cert_path.write_bytes(cert.public_bytes(pem))
        key_path.write_bytes(
            key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        )
        key_path.chmod(0o600)
    return paths


def ssl_capable_bindir() -> Path | None:
    """A PostgreSQL installation built with OpenSSL (pgserver's is not): Debian's, if any."""
    for bindir in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        config = bindir / "pg_config"
        if not (bindir / "postgres").is_file() or not config.is_file():
            continue
        configure = subprocess.run(
            [str(config), "--configure"], capture_output=True, text=True, check=False
        ).stdout
        if "--with-openssl" in configure or "--with-ssl=openssl" in configure:
            return bindir
    return None


@dataclass
class TlsServer:
    bindir: Path
    data: Path
    port: int
    certificates: Certificates
    user: str | None  # the system user the server runs as (root may not run it)

    def url(
        self,
        query: str = "",
        *,
        host: str = MATCHING_HOST,
        scheme: str = "postgresql",
        user: str = "postgres",
    ) -> str:
        """A TCP URL of the server's ``memstore`` database, with a password trust ignores."""
        tail = f"?{query}" if query else ""
        return f"{scheme}://{user}:{PASSWORD}@{host}:{self.port}/memstore{tail}"

    def run(self, program: str, *args: str) -> str:
        return subprocess.run(
            [str(self.bindir / program), *args],
            check=True,
            capture_output=True,
            text=True,
            user=self.user,
            cwd=self.data,
            timeout=STOP_TIMEOUT_S,
        ).stdout

    def psql(self, sql: str, database: str = "postgres") -> str:
        """``sql`` run by psql over the server's socket (no TLS there)."""
        dsn = f"host={self.data} port={self.port} user=postgres dbname={database}"
        return self.run("psql", "-At", "-d", dsn, "-c", sql)

    def set_ssl(self, on: bool) -> None:
        """Turn TLS on or off (a reload); returns once a new connection sees it."""
        value = "on" if on else "off"
        self.psql(f"ALTER SYSTEM SET ssl = {value}")
        self.psql("SELECT pg_reload_conf()")
        # The postmaster applies the reload asynchronously: wait until a new backend,
        # forked after it did, reports the value.
        while self.psql("SHOW ssl").strip() != value:
            pass


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((MATCHING_HOST, 0))
        return int(probe.getsockname()[1])


def _server_config(port: int, data: Path) -> str:
    return "\n".join(
        [
            f"listen_addresses = '{MATCHING_HOST},{OTHER_HOST}'",
            f"port = {port}",
            f"unix_socket_directories = '{data}'",
            "ssl = on",
            "ssl_cert_file = 'server.crt'",
            "ssl_key_file = 'server.key'",
            # Ask clients for a certificate signed by the test CA (pg_hba's `cert` needs one).
            "ssl_ca_file = 'ca.pem'",
            "fsync = off",
            "max_connections = 30",
            "",
        ]
    )


@contextmanager
def tls_pgserver(bindir: Path) -> Iterator[TlsServer]:
    """A private server of ``bindir`` with ``ssl = on`` on 127.0.0.1 and 127.0.0.2.

    Its own ``mkdtemp`` directory, removed afterwards; stopped for sure in teardown
    and checked to leave no process behind.
    """
    import psutil

    root = Path(tempfile.mkdtemp(prefix="memstore-tlspg-"))
    user = "postgres" if os.geteuid() == 0 else None
    data = root / "data"
    server: TlsServer | None = None
    try:
        certificates = make_certificates(root)
        data.mkdir(mode=0o700)
        if user is not None:
            for path in (root, data):
                shutil.chown(path, user=user)
        server = TlsServer(bindir, data, _free_port(), certificates, user)
        server.run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        for source, name in (
            (certificates.server_cert, "server.crt"),
            (certificates.server_key, "server.key"),
            (certificates.ca, "ca.pem"),
        ):
            shutil.copy(source, data / name)
            (data / name).chmod(0o600)
            if user is not None:
                shutil.chown(data / name, user=user)
        with open(data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write(_server_config(server.port, data))
        hba = data / "pg_hba.conf"
        # First match wins: CERT_USER over TCP needs TLS and a client certificate.
        hba.write_text(
            f"hostssl all {CERT_USER} 127.0.0.1/32 cert\n"
            f"host all {CERT_USER} 0.0.0.0/0 reject\n" + hba.read_text()
        )
        server.run("pg_ctl", "-D", str(data), "-w", "-l", str(data / "log"), "start")
        server.psql("CREATE DATABASE memstore")
        server.psql(f"CREATE ROLE {CERT_USER} LOGIN")
        yield server
    finally:
        pid = _postmaster_pid(data)
        if server is not None and pid is not None:
            try:
                server.run("pg_ctl", "-D", str(data), "-w", "-m", "fast", "stop")
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                pass  # killed below
        if pid is not None and psutil.pid_exists(pid):
            process = psutil.Process(pid)
            children = process.children(recursive=True)
            for each in (process, *children):
                each.kill()
            psutil.wait_procs([process, *children], timeout=10)
        shutil.rmtree(root, ignore_errors=True)
        assert pid is None or not psutil.pid_exists(pid), "the TLS test server outlived its test"


def _postmaster_pid(data: Path) -> int | None:
    try:
        return int((data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def no_home_certificates(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """Point libpq's certificate defaults (``$PGSSL*``, ``~/.postgresql``) at nothing."""
    for name in ("PGSSLROOTCERT", "PGSSLCERT", "PGSSLKEY", "PGSSLMODE"):
        monkeypatch.delenv(name, raising=False)
    home.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
