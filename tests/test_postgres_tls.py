"""sslmode against a real PostgreSQL with TLS on (certificates made by the test).

``require`` and ``verify-full`` connect, the pool and the listening connection alike;
``verify-full`` refuses a host name the certificate does not name, an authority that did
not sign it, and a missing root certificate; ``require`` refuses a server without TLS.
Each refusal is one ConfigurationError line (the CLI's too) that never shows the password.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from memstore import ConfigurationError, MemoryStore
from memstore.backends.postgresql.signal import LISTENER_APPLICATION_NAME
from memstore.db.engine import create_engine
from memstore.db.signal import ChangeSignal
from tests.pg_tls import (
    CERT_USER,
    OTHER_HOST,
    PASSWORD,
    TlsServer,
    no_home_certificates,
    ssl_capable_bindir,
    tls_pgserver,
)

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[1]
# The server's own view of a connection: whether it is encrypted.
OWN_SSL = "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"


@pytest.fixture(scope="module")
def tls() -> Iterator[TlsServer]:
    bindir = ssl_capable_bindir()
    if bindir is None:
        reason = (
            "no PostgreSQL built with OpenSSL under /usr/lib/postgresql (pgserver's is not); "
            "apt-get install postgresql-15"
        )
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the TLS tests: {reason}")
        pytest.skip(reason)
    with tls_pgserver(bindir) as server:
        yield server


@pytest.fixture(autouse=True)
def no_default_certificates(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    no_home_certificates(monkeypatch, tmp_path / "home")


async def encrypted(url: str) -> bool:
    """Whether a connection of memstore's engine for ``url`` is encrypted, as the server says."""
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            return bool(await connection.scalar(text(OWN_SSL)))
    finally:
        await engine.dispose()


async def test_require_encrypts(tls: TlsServer) -> None:
    for scheme in ("postgres", "postgresql", "postgresql+asyncpg"):
        assert await encrypted(tls.url("sslmode=require", scheme=scheme))
    assert await encrypted(tls.url("ssl=require"))  # asyncpg's own name, as SQLAlchemy users write
    assert not await encrypted(tls.url("sslmode=disable"))


async def test_verify_full_connects_to_the_named_host(tls: TlsServer) -> None:
    ca = tls.certificates.ca
    for host in ("127.0.0.1", "localhost"):
        assert await encrypted(tls.url(f"sslmode=verify-full&sslrootcert={ca}", host=host))
    # verify-ca checks the signature only: the unnamed address passes.
    assert await encrypted(tls.url(f"sslmode=verify-ca&sslrootcert={ca}", host=OTHER_HOST))


async def test_verify_full_from_the_environment(
    tls: TlsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGSSLROOTCERT", str(tls.certificates.ca))
    assert await encrypted(tls.url("sslmode=verify-full"))


async def test_client_certificate_logs_in(tls: TlsServer) -> None:
    certs = tls.certificates
    query = f"sslmode=verify-full&sslrootcert={certs.ca}"
    url = tls.url(f"{query}&sslcert={certs.client_cert}&sslkey={certs.client_key}", user=CERT_USER)
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            assert await connection.scalar(text("SELECT current_user")) == CERT_USER
    finally:
        await engine.dispose()
    # The same role without the certificate is refused by the server (pg_hba `cert`).
    error = await open_refused(tls.url(query, user=CERT_USER))
    assert "certificate" in str(error)


async def open_refused(url: str) -> ConfigurationError:
    with pytest.raises(ConfigurationError) as caught:
        async with MemoryStore.open(url):
            pass
    error = caught.value
    assert "\n" not in str(error)
    assert PASSWORD not in str(error) + repr(error) + str(error.url)
    return error


def cli_refused(url: str, cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MEMSTORE_URL", None)
    result = subprocess.run(
        [sys.executable, "-m", "memstore", "gc", "--url", url],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert ": ConfigurationError: " in lines[0]
    assert PASSWORD not in result.stderr + result.stdout
    return lines[0]


async def test_verify_full_refuses_what_it_cannot_verify(tls: TlsServer, tmp_path: Path) -> None:
    ca, other = tls.certificates.ca, tls.certificates.other_ca
    mismatch = tls.url(f"sslmode=verify-full&sslrootcert={ca}", host=OTHER_HOST)
    error = await open_refused(mismatch)
    assert f"certificate is not valid for '{OTHER_HOST}'" in str(error)
    assert "not valid for" in cli_refused(mismatch, tmp_path)
    error = await open_refused(tls.url(f"sslmode=verify-full&sslrootcert={other}"))
    assert "TLS certificate failed verification" in str(error)
    error = await open_refused(tls.url("sslmode=verify-full"))
    assert "needs the certificate of the authority" in str(error)
    # The machine's trusted roots did not sign the test server's certificate.
    error = await open_refused(tls.url("sslrootcert=system"))
    assert "TLS certificate failed verification" in str(error)


async def test_require_refuses_a_server_without_tls(tls: TlsServer, tmp_path: Path) -> None:
    tls.set_ssl(False)
    try:
        url = tls.url("sslmode=require")
        error = await open_refused(url)
        assert "the server does not accept TLS" in str(error)
        assert "does not accept TLS" in cli_refused(url, tmp_path)
        # prefer still connects, unencrypted.
        assert not await encrypted(tls.url("sslmode=prefer"))
    finally:
        tls.set_ssl(True)


LISTENER_SSL = (
    "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) "
    "WHERE a.application_name = :name"
)


@pytest.mark.parametrize("mode", ["disable", "verify-full"])
async def test_listener_connects_as_the_pool_does(tls: TlsServer, mode: str) -> None:
    root = "" if mode == "disable" else f"&sslrootcert={tls.certificates.ca}"
    engine = create_engine(tls.url(f"sslmode={mode}{root}"))
    signal = ChangeSignal(engine)
    try:
        async with signal.waiting(seconds=60):
            assert signal.connections == 1
            async with engine.connect() as connection:
                pool_ssl = await connection.scalar(text(OWN_SSL))
                listener_ssl = (
                    (
                        await connection.execute(
                            text(LISTENER_SSL), {"name": LISTENER_APPLICATION_NAME}
                        )
                    )
                    .scalars()
                    .all()
                )
    finally:
        await signal.close()
        await engine.dispose()
    assert listener_ssl == [pool_ssl] == [mode != "disable"]
