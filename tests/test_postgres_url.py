"""Postgres URLs as dashboards hand them out: libpq's parameters become the driver's,
anything else is refused in one line naming the parameter, never showing a password.

The accepted forms run against the session's real server (over its Unix socket, where
libpq and asyncpg use no TLS); TLS itself is tests/test_postgres_tls.py.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from memstore import ConfigurationError, Episode, MemoryStore
from memstore.backends.postgresql.connections import connect_args_of
from memstore.backends.postgresql.signal import LISTENER_APPLICATION_NAME
from memstore.schema.migrate import upgrade
from tests.cli_support import assert_configuration_error_line, run_cli
from tests.pg_tls import PASSWORD, no_home_certificates
from tests.store_parts import store_with_parts

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[1]
BASE = f"postgres://postgres:{PASSWORD}@db.example.invalid:5432/app"


@pytest.fixture
def private_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private directory, also the HOME: no ~/.postgresql certificate is found."""
    path = Path(tempfile.mkdtemp(prefix="memstore-pgurl-test-"))
    try:
        no_home_certificates(monkeypatch, path / "home")
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def refused(private_dir: Path) -> list[tuple[str, str]]:
    """(query, what the one-line message must say) of URLs no connection could honour."""
    missing = private_dir / "no-such-ca.pem"
    return [
        ("sslmode=requir", "sslmode must be one of disable, allow, prefer, require"),
        ("ssl=require&sslmode=disable", "'ssl' and 'sslmode' disagree"),
        ("sslmode=require&sslmode=disable", "'sslmode' is given 2 times"),
        (f"sslmode=prefer&sslrootcert={missing}", "sslrootcert needs sslmode=require"),
        (f"sslrootcert={missing}", "sslrootcert needs sslmode=require"),
        (f"sslmode=verify-full&sslrootcert={missing}", "sslrootcert: cannot load"),
        ("sslmode=verify-full", "sslmode=verify-full needs the certificate of the authority"),
        ("sslmode=verify-ca", "sslmode=verify-ca needs the certificate of the authority"),
        ("sslmode=require&sslrootcert=system", "sslrootcert=system needs sslmode=verify-full"),
        ("sslmode=require&sslkey=/k.pem", "sslkey needs sslcert"),
        ("connect_timeout=0", "connect_timeout must be a positive number of seconds"),
        ("connect_timeout=-3", "connect_timeout must be a positive number of seconds"),
        ("connect_timeout=soon", "connect_timeout must be a positive number of seconds"),
        ("options=-d%205", "options may hold only -c name=value settings"),
        ("options=-c%20search_path", "options may hold only -c name=value settings"),
        ("options=-c%20memstore.user_id%3Dalice", "options may not set memstore.user_id"),
        ("target_session_attrs=leader", "target_session_attrs must be one of"),
        ("channel_binding=require", "channel_binding=require cannot be met"),
        ("gssencmode=require", "gssencmode=require cannot be met"),
        ("pgbouncer=true", "unsupported parameter 'pgbouncer'"),
        ("schema=app", "use options=-c search_path=NAME"),
        ("keepalives=1", "unsupported parameter 'keepalives'"),
        # Values that are secrets: named, never shown.
        (f"sslpassword={PASSWORD}", "unsupported parameter 'sslpassword'"),
        (f"password={PASSWORD}&sslmode=nope", "sslmode must be one of"),
    ]


def check_refusal(error: ConfigurationError, cause: str) -> None:
    message = str(error)
    assert cause in message, message
    assert "\n" not in message, message
    assert "configuration.md#postgres-urls" in message
    for shown in (message, repr(error), str(error.url), repr(error.__dict__)):
        assert PASSWORD not in shown, shown


async def test_unusable_parameters_are_refused_by_name(private_dir: Path) -> None:
    for query, cause in refused(private_dir):
        for scheme in ("postgres", "postgresql", "postgresql+asyncpg"):
            url = BASE.replace("postgres", scheme, 1) + "?" + query
            with pytest.raises(ConfigurationError) as caught:
                async with MemoryStore.open(url):
                    pass
            check_refusal(caught.value, cause)
        # Migrations (alembic's env.py) read the same URL and refuse it the same way.
        with pytest.raises(ConfigurationError) as caught:
            await upgrade(BASE + "?" + query)
        check_refusal(caught.value, cause)


def assert_one_line(result: subprocess.CompletedProcess[str], cause: str) -> None:
    assert_configuration_error_line(result, cause)
    assert PASSWORD not in result.stderr + result.stdout


def test_cli_refuses_in_one_line(private_dir: Path) -> None:
    cases = [
        (["migrate"], f"sslpassword={PASSWORD}", "unsupported parameter 'sslpassword'"),
        (["gc"], "sslmode=requir", "sslmode must be one of"),
        (["rls", "status"], "pgbouncer=true", "unsupported parameter 'pgbouncer'"),
        (["citus", "--status"], "channel_binding=require", "channel_binding=require"),
    ]
    for command, query, cause in cases:
        assert_one_line(run_cli(private_dir, *command, "--url", f"{BASE}?{query}"), cause)


def libpq_url(pg_cluster: Any, database: str, scheme: str, query: dict[str, str]) -> str:
    """The cluster's URL of ``database`` as a dashboard writes it (a password trust ignores)."""
    url = make_url(pg_cluster.url_for(database)).set(drivername=scheme, password=PASSWORD)
    return url.update_query_dict(query).render_as_string(hide_password=False)


@pytest.fixture(scope="module")
def migrated_database(pg_cluster: Any) -> str:
    url = pg_cluster.create_database("pgurl")
    asyncio.run(upgrade(url))
    return str(make_url(url).database)


QUERY = {
    "sslmode": "prefer",
    "connect_timeout": "7",
    "application_name": "pasted-url-test",
    "options": "-c statement_timeout=45s --lock-timeout=3s -c search_path=public",
    "target_session_attrs": "read-write",
}


@pytest.mark.parametrize("scheme", ["postgres", "postgresql", "postgresql+asyncpg"])
async def test_libpq_url_opens_the_store(
    pg_cluster: Any, migrated_database: str, scheme: str
) -> None:
    url = libpq_url(pg_cluster, migrated_database, scheme, QUERY)
    user = f"alice-{scheme}"
    # The store's own engine (built as MemoryStore.open builds it), to look at its sessions.
    async with store_with_parts(url) as parts:
        store = parts.store
        await store.remember(Episode(session_id="s", input="pasted URL", user_id=user))
        hits = await store.recall("pasted URL", user_id=user)
        assert [episode.input for episode in hits] == ["pasted URL"]
        async with parts.engine.connect() as connection:
            shown = {
                name: await connection.scalar(text(f"SHOW {name}"))
                for name in ("application_name", "statement_timeout", "lock_timeout")
            }
        assert shown == {
            "application_name": "pasted-url-test",
            "statement_timeout": "45s",
            "lock_timeout": "3s",
        }
        assert connect_args_of(parts.engine)["timeout"] == 7.0
        # The listening connection is made with the same arguments, its own name kept.
        async with parts.db.signal.waiting(seconds=30):
            async with parts.engine.connect() as connection:
                listeners = await connection.scalar(
                    text(
                        "SELECT count(*) FROM pg_stat_activity "
                        "WHERE application_name = :name AND datname = current_database()"
                    ),
                    {"name": LISTENER_APPLICATION_NAME},
                )
        assert listeners == 1


def test_cli_takes_a_libpq_url(pg_cluster: Any, private_dir: Path) -> None:
    database = str(make_url(pg_cluster.create_database("pgurlcli")).database)
    url = libpq_url(pg_cluster, database, "postgres", QUERY)
    for command in (["migrate"], ["gc"]):
        result = run_cli(private_dir, *command, "--url", url)
        assert result.returncode == 0, result.stderr
        assert PASSWORD not in result.stderr + result.stdout
