"""The databases a run uses: a pgserver cluster and SQLite files, all in one temp dir."""

from __future__ import annotations

import asyncio
import itertools
import os
import platform
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

__all__ = ["Databases", "machine_info", "sqlalchemy_url"]

# Settings for a benchmark cluster on a small machine; applied with ALTER SYSTEM.
PG_SETTINGS = {
    "maintenance_work_mem": "4GB",  # HNSW builds fast only while the graph fits
    "max_parallel_maintenance_workers": "1",
    "work_mem": "64MB",
}


class Databases:
    """Owns the temp dir; hands out fresh SQLite files and fresh Postgres databases."""

    def __init__(self, root: str | None = None, *, keep: bool = False) -> None:
        self.root = Path(root or tempfile.mkdtemp(prefix="memstore-bench-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.keep = keep
        self._server: Any = None
        self._admin_dsn: str | None = None
        self._counter = itertools.count()

    # ---- sqlite ---------------------------------------------------------------
    def sqlite_url(self, name: str) -> str:
        path = self.root / f"{name}-{next(self._counter)}.db"
        return f"sqlite+aiosqlite:///{path}"

    # ---- postgres -------------------------------------------------------------
    @property
    def admin_dsn(self) -> str:
        if self._admin_dsn is None:
            external = os.environ.get("MEMSTORE_BENCH_PG_URL")
            if external:
                self._admin_dsn = external
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    import pgserver
                self._server = pgserver.get_server(self.root / "pgdata", cleanup_mode="stop")
                self._admin_dsn = self._server.get_uri()
                for key, value in PG_SETTINGS.items():
                    self._server.psql(f"ALTER SYSTEM SET {key} = '{value}';")
                self._server.psql("SELECT pg_reload_conf();")
        return self._admin_dsn

    def _dsn_for(self, database: str) -> str:
        from sqlalchemy.engine import make_url

        return make_url(self.admin_dsn).set(database=database).render_as_string(hide_password=False)

    def pg_dsn(self, name: str) -> str:
        """A new empty database; returns a libpq-style ``postgresql://`` DSN."""
        import asyncpg

        database = f"{name}_{next(self._counter)}"

        async def create() -> None:
            conn = await asyncpg.connect(self.admin_dsn)
            try:
                await conn.execute(f'DROP DATABASE IF EXISTS "{database}"')
                await conn.execute(f'CREATE DATABASE "{database}"')
                await conn.execute(f'ALTER DATABASE "{database}" SET jit = off')
            finally:
                await conn.close()

        asyncio.run(create())
        return self._dsn_for(database)

    async def pg_versions(self) -> dict[str, str]:
        import asyncpg

        conn = await asyncpg.connect(self.admin_dsn)
        try:
            server = await conn.fetchval("SHOW server_version")
            vector = await conn.fetchval(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
            )
        finally:
            await conn.close()
        return {"postgres": str(server), "pgvector": str(vector)}

    def close(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)


def sqlalchemy_url(dsn: str) -> str:
    return dsn.replace("postgresql://", "postgresql+asyncpg://", 1)


def _memstore_revision() -> str:
    """The commit of the memstore source being measured (and whether it had local edits)."""
    import subprocess

    import memstore

    root = Path(memstore.__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "memstore", "migrations"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"{root} (not a git checkout)"
    return f"git {head}{' + local edits' if dirty else ''}"


def machine_info() -> dict[str, str]:
    mem_kb = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    except OSError:
        pass
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import sqlite3

    return {
        "memstore code": _memstore_revision(),
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": f"{mem_kb / 1024 / 1024:.1f} GiB",
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "os": platform.platform(),
    }
