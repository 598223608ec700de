"""Alembic environment for memstore (async; shares a connection when one is passed in)."""

from __future__ import annotations

import asyncio
import os
from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection

import memstore.models  # noqa: F401  (registers every table on the metadata)
from memstore.db.base import Base
from memstore.db.crosstenant import cross_tenant_connection
from memstore.db.engine import create_engine
from memstore.schema.migrate import include_object

config = context.config
target_metadata = Base.metadata

if config.config_file_name is not None and config.attributes.get("connection") is None:
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def database_url() -> str | None:
    return (
        context.get_x_argument(as_dictionary=True).get("url")
        or os.environ.get("MEMSTORE_URL")
        or config.get_main_option("sqlalchemy.url")
    )


def do_run_migrations(connection: Connection) -> None:
    # Revisions change every tenant's tables: mark them for the tenant audit.
    cross_tenant_connection(connection, "migration")
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things in place; batch mode rebuilds tables.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_object=include_object,
    )
    with context.begin_transaction():
        context.run_migrations()


async def run_async_migrations() -> None:
    # No per-statement timeout: building an index on a big table may take long.
    engine = create_engine(database_url(), command_timeout=None)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(do_run_migrations)
    finally:
        await engine.dispose()


def run_migrations_offline() -> None:
    context.configure(
        url=database_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
elif (shared := config.attributes.get("connection")) is not None:
    do_run_migrations(shared)
else:
    asyncio.run(run_async_migrations())
