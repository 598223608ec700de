"""Distributing memstore's schema on a Citus coordinator, in one transaction."""

from __future__ import annotations

from sqlalchemy import text

from memstore.backends.postgresql.citus.errors import CitusLayoutConflict, CitusNoWorkers
from memstore.backends.postgresql.citus.plan import citus_plan
from memstore.backends.postgresql.citus.status import database_name, read_status
from memstore.dialects import dialect_for

__all__ = ["apply_citus"]


async def apply_citus(url: str | None = None) -> list[str]:
    """Distribute what is not yet distributed, on the coordinator at ``url``, in one transaction.

    Idempotent: tables already laid out as :func:`citus_plan` plans are skipped,
    so a second run executes nothing and returns an empty list. Raises
    :class:`CitusNotInstalled` when the database does not have the citus
    extension, :class:`CitusNoWorkers` when the coordinator has no active worker,
    :class:`CitusLayoutConflict` when a memstore table is already a Citus table
    of another shape, :class:`~memstore.errors.InvalidInput` for a database that
    is not PostgreSQL; in each case nothing was changed.
    """
    from memstore.db.crosstenant import cross_tenant_connection
    from memstore.db.engine import create_engine, resolve_url
    from memstore.db.errors import translated
    from memstore.errors import InvalidInput
    from memstore.schema.migrate import check_schema

    citus_plan()  # a schema that breaks the rules is refused before connecting
    resolved = resolve_url(url)
    engine = create_engine(resolved, command_timeout=None)
    try:
        if not dialect_for(engine).distributable:
            raise InvalidInput("Citus distributes PostgreSQL only; this URL is not PostgreSQL")
        await check_schema(engine)
        with translated("distribute on citus"):
            async with engine.begin() as conn:
                status = await read_status(conn, database_name(resolved))
                if not status.workers:
                    raise CitusNoWorkers(status.database)
                problems = status.problems()
                conflicts = [
                    f"{name} {why}"
                    for name, why in problems.items()
                    if why not in ("not distributed", "missing")
                ]
                if conflicts:
                    raise CitusLayoutConflict(conflicts)
                done = [t.name for t in status.tables if t.name not in problems]
                statements = citus_plan(done=done).statements
                if not any("create_" in s for s in statements):
                    return []
                await conn.run_sync(cross_tenant_connection, "citus-distribution")
                for statement in statements:
                    await conn.execute(text(statement))
    finally:
        await engine.dispose()
    return statements
