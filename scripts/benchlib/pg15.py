"""A private plain PostgreSQL 15 server (Debian's, with pgvector) for same-run baselines.

Configured like the nodes of ``../shared/citus/cluster.sh`` (loopback only, trust auth,
``fsync = off``, ``max_connections = 200``) so that a plain node and a Citus cluster
differ only in Citus. The server runs as the ``postgres`` user from its own temp
directory and is stopped (and the directory removed) on exit, even on failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["PG15_BIN", "free_port", "pg15_unavailable", "private_pg15"]

PG15_BIN = Path("/usr/lib/postgresql/15/bin")


def pg15_unavailable() -> str | None:
    """Why no plain PostgreSQL 15 with pgvector can start here, or None."""
    if not (PG15_BIN / "pg_ctl").is_file():
        return f"no PostgreSQL 15 at {PG15_BIN}"
    if not Path("/usr/share/postgresql/15/extension/vector.control").is_file():
        return "pgvector is not installed for PostgreSQL 15"
    if os.geteuid() != 0:
        return "the server runs as the postgres user, which needs root"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_postgres(command: str) -> None:
    subprocess.run(
        ["su", "postgres", "-s", "/bin/bash", "-c", command],
        check=True,
        capture_output=True,
        timeout=120,
    )


def _psql(port: int, database: str, sql: str) -> None:
    subprocess.run(
        [
            f"{PG15_BIN}/psql",
            *("-X", "-q", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres"),
            *("-d", database, "-v", "ON_ERROR_STOP=1", "-c", sql),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )


@contextmanager
def private_pg15(database: str = "bench") -> Iterator[str]:
    """Start the server, create ``database`` with pgvector; yields its asyncpg URL."""
    reason = pg15_unavailable()
    if reason is not None:
        raise RuntimeError(reason)
    directory = Path(tempfile.mkdtemp(prefix="memstore-bench-pg15-"))
    directory.chmod(0o755)
    shutil.chown(directory, "postgres")
    data = directory / "data"
    port = free_port()
    started = False
    try:
        _as_postgres(f"{PG15_BIN}/initdb -D '{data}' -A trust -U postgres")
        with (data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"listen_addresses = '127.0.0.1'\nport = {port}\n"
                f"unix_socket_directories = '{directory}'\nmax_connections = 200\n"
                "fsync = off\n"
            )
        _as_postgres(f"{PG15_BIN}/pg_ctl -D '{data}' -l '{directory}/log' -w start")
        started = True
        _psql(port, "postgres", f'CREATE DATABASE "{database}"')
        _psql(port, database, "CREATE EXTENSION vector")
        yield f"postgresql+asyncpg://postgres@127.0.0.1:{port}/{database}"
    finally:
        pid = _postmaster_pid(data)
        if started:
            subprocess.run(
                [
                    "su",
                    "postgres",
                    "-s",
                    "/bin/bash",
                    "-c",
                    f"{PG15_BIN}/pg_ctl -D '{data}' -m fast -w stop",
                ],
                capture_output=True,
                timeout=120,
                check=False,
            )
        if pid is not None and _postmaster_pid(data) == pid:  # pg_ctl stop failed
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        shutil.rmtree(directory, ignore_errors=True)


def _postmaster_pid(data: Path) -> int | None:
    try:
        return int((data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
