"""Schema migrations: run Alembic from code and check a database is current.

Alembic (and Mako under it) is imported inside the functions that need it, not at
module level: ``import memstore`` and every ``memstore`` CLI call would otherwise
pay for it even when nothing is migrated.
"""

from __future__ import annotations

import logging
import os
import time
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from memstore.db.engine import create_engine
from memstore.db.errors import translated
from memstore.dialects import dialect_for
from memstore.embeddings.base import check_dim
from memstore.errors import SchemaOutOfDate

# The width migration 0003 records (its own copy reads the same variable).
EMBEDDING_DIM_ENV = "MEMSTORE_EMBEDDING_DIM"

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

__all__ = [
    "alembic_config",
    "check_schema",
    "current_revision",
    "downgrade",
    "head_revision",
    "include_object",
    "migrations_path",
    "needs_upgrade",
    "upgrade",
]

logger = logging.getLogger(__name__)


# Search structures that only migrations manage, because the ORM cannot express
# them portably: SQLite FTS5 tables (and their shadow and key-map tables) and
# the Postgres HNSW / full-text GIN indexes of revision 0003, SQLite's search
# versions of revision 0008. Autogenerate and
# `alembic check` would otherwise report them as objects to drop.
MIGRATION_ONLY = ("_fts", "_embedding_hnsw", "search_versions")


def include_object(
    obj: object, name: str | None, type_: str, reflected: bool, compare_to: object
) -> bool:
    """Alembic ``include_object`` hook: hide the migration-only objects above."""
    return not (
        reflected and compare_to is None and name and any(m in name for m in MIGRATION_ONLY)
    )


def migrations_path() -> Path:
    """Where the revision scripts live: inside an installed wheel, else the source tree."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "_migrations", package.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError("memstore's migration scripts are missing from this installation")


def alembic_config(url: str | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_path()))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


@lru_cache(maxsize=1)
def _scripts() -> ScriptDirectory:
    # Parsing the revision files costs milliseconds; every MemoryStore.open
    # checks the schema, so read them once per process.
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str:
    head = _scripts().get_current_head()
    assert head is not None, "migration scripts have no head"
    return head


def _run(connection: Connection, action: str, revision: str) -> None:
    from alembic import command

    config = alembic_config()
    # env.py uses this connection instead of opening its own (connection sharing).
    config.attributes["connection"] = connection
    getattr(command, action)(config, revision)


async def _with_engine(target: AsyncEngine | str | None, action: str, revision: str) -> None:
    # No per-statement timeout: building an index on a big table may take long.
    engine = (
        target if isinstance(target, AsyncEngine) else create_engine(target, command_timeout=None)
    )
    dialect = dialect_for(engine)
    started = time.perf_counter()
    try:
        with translated(f"migrate ({action} {revision})"):
            async with engine.begin() as connection:
                before = await connection.run_sync(_heads)
                logger.info(
                    "migration %s to %s starting (database at %s, backend %s)",
                    action,
                    revision,
                    before,
                    dialect.name,
                )
                await connection.run_sync(_run, action, revision)
                after = await connection.run_sync(_heads)
            await dialect.after_migration(engine)
        logger.info(
            "migration %s done: %s -> %s in %.2f s",
            action,
            before,
            after,
            time.perf_counter() - started,
        )
    except BaseException:
        logger.error(
            "migration %s to %s failed after %.2f s; the transaction was rolled back",
            action,
            revision,
            time.perf_counter() - started,
        )
        raise
    finally:
        # Pooled connections opened before the migration may lack codecs for
        # types it created (pgvector); start afresh. A caller's SQLite engine is
        # kept: it has no codecs, and disposing would lose a :memory: database.
        if engine is not target or dialect.native_vectors:
            await engine.dispose()


async def upgrade(target: AsyncEngine | str | None = None, revision: str = "head") -> None:
    """Upgrade the schema; a ``$MEMSTORE_EMBEDDING_DIM`` no store could use is
    :class:`ConfigurationError` before the database is touched (or created)."""
    width = (os.environ.get(EMBEDDING_DIM_ENV) or "").strip()
    if width:
        try:
            value: object = int(width)
        except ValueError:
            value = width
        check_dim(value, what=f"${EMBEDDING_DIM_ENV}", setting=EMBEDDING_DIM_ENV)
    await _with_engine(target, "upgrade", revision)


async def downgrade(target: AsyncEngine | str | None, revision: str) -> None:
    await _with_engine(target, "downgrade", revision)


def _heads(connection: Connection) -> str | None:
    # For the log only: every head, so a (never expected) branched database is
    # reported rather than failing the migration the way get_current_revision would.
    from alembic.runtime.migration import MigrationContext

    heads = MigrationContext.configure(connection).get_current_heads()
    return ",".join(heads) if heads else None


def _current(connection: Connection) -> Any:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


async def current_revision(bind: AsyncEngine | AsyncConnection) -> str | None:
    """The database's schema revision, read on ``bind`` (a connection: in its transaction)."""
    with translated("read schema revision"):
        if isinstance(bind, AsyncConnection):
            return await bind.run_sync(_current)
        async with bind.connect() as connection:
            return await connection.run_sync(_current)


async def needs_upgrade(engine: AsyncEngine) -> bool:
    """True when the schema is missing or older than the code (not when it is newer)."""
    current = await current_revision(engine)
    if current == head_revision():
        return False
    return current is None or current in {rev.revision for rev in _scripts().walk_revisions()}


async def check_schema(engine: AsyncEngine) -> None:
    current = await current_revision(engine)
    head = head_revision()
    if current == head:
        return
    if current is None:
        raise SchemaOutOfDate(
            "the database has no memstore schema yet; run `memstore migrate` "
            "(or `alembic upgrade head`) against it first"
        )
    known = {rev.revision for rev in _scripts().walk_revisions()}
    if current not in known:
        raise SchemaOutOfDate(
            f"the database schema is at revision {current}, which this version of memstore "
            "does not know (is the database newer than the code?)"
        )
    raise SchemaOutOfDate(
        f"the database schema is at revision {current} but this memstore needs {head}; "
        "run `memstore migrate` (or `alembic upgrade head`)"
    )
