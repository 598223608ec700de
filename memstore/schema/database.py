"""The database as adapters name it: by URL, never by engine or session.

The command line, the inspector and the MCP server reach a database only through
the facade and these whole-database operations, each of which opens and disposes
its own engine (the import contracts forbid adapters the engine, the ORM models
and the repositories).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memstore.db.engine import create_engine, require_existing_database, resolve_url, sqlite_file
from memstore.schema.migrate import check_schema, current_revision, downgrade, upgrade

if TYPE_CHECKING:
    from memstore.embeddings.base import Embedder
    from memstore.search.reembed import ReembedResult

__all__ = [
    "migrate",
    "reembed_database",
    "require_existing_database",
    "resolve_url",
    "sqlite_file",
]


async def migrate(url: str | None, revision: str = "head", *, down: bool = False) -> str | None:
    """Upgrade (``down``: downgrade) the schema at ``url`` to ``revision``.

    A SQLite file is created if missing. Returns the revision the database is at
    afterwards.
    """
    resolved = resolve_url(url)
    if down:
        await downgrade(resolved, revision)
    else:
        await upgrade(resolved, revision)
    engine = create_engine(resolved)
    try:
        return await current_revision(engine)
    finally:
        await engine.dispose()


async def reembed_database(
    url: str | None,
    embedder: Embedder,
    *,
    all_rows: bool = False,
    passages: bool = False,
    drop_forms: bool = False,
) -> ReembedResult:
    """:func:`memstore.search.reembed.reembed` on the existing store at ``url``.

    Never creates a database behind a mistyped SQLite path (:class:`NotFound`), and
    a database without the schema is :class:`SchemaOutOfDate` naming the fix, not
    "no such table" from the first statement.
    """
    # Imported here: the commands that only check a URL stay light (tests/test_import_cost.py).
    from memstore.search.reembed import reembed

    engine = create_engine(require_existing_database(url))
    try:
        await check_schema(engine)
        return await reembed(
            engine, embedder, all_rows=all_rows, passages=passages, drop_forms=drop_forms
        )
    finally:
        await engine.dispose()
