"""Postgres COPY of ORM rows through a session's own connection and transaction.

A multi-row INSERT sends every value as a bind parameter and the server plans
and executes it row by row; COPY streams the rows in asyncpg's binary format,
several times faster for large batches. Driver errors are re-raised as the
SQLAlchemy exceptions an INSERT would raise, so the unit of work's single
translation point handles both paths alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import exc as sa_exc
from sqlalchemy import inspect
from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["copy_rows"]

_PROCESSORS: dict[tuple[str, str], list[tuple[str, str, Callable[[Any], Any] | None]]] = {}


def _columns(
    model: type[Any], dialect: Any, keys: Sequence[str]
) -> list[tuple[str, str, Callable[[Any], Any] | None]]:
    """(attribute key, column name, bind processor) of the columns the rows fill."""
    mapper = inspect(model)
    cache_key = (mapper.local_table.name, ",".join(keys))
    found = _PROCESSORS.get(cache_key)
    if found is None:
        wanted = set(keys)
        found = [
            (key, column.name, column.type.dialect_impl(dialect).bind_processor(dialect))
            for key, column in mapper.columns.items()
            if key in wanted
        ]
        _PROCESSORS[cache_key] = found
    return found


async def copy_rows(
    session: AsyncSession, model: type[Any], rows: Sequence[Mapping[str, Any]]
) -> None:
    """COPY ``rows`` (dicts keyed by ``model``'s attributes, as for an ORM insert).

    The session's transaction must have begun (a statement already ran on it):
    the rows then commit or roll back with everything else it wrote.
    """
    if not rows:
        return
    connection = await session.connection()
    columns = _columns(model, connection.dialect, list(rows[0]))
    table = inspect(model).local_table.name
    records = [
        tuple(proc(row[key]) if proc is not None else row[key] for key, _, proc in columns)
        for row in rows
    ]
    raw = await connection.get_raw_connection()
    driver: Any = raw.driver_connection
    statement = f"COPY {table}"
    try:
        await driver.copy_records_to_table(
            table, records=records, columns=[name for _, name, _ in columns]
        )
    except (OSError, ConnectionError) as error:
        raise sa_exc.OperationalError(statement, None, error) from error
    except Exception as error:
        code = str(getattr(error, "sqlstate", "") or "")
        if code.startswith("23"):
            raise sa_exc.IntegrityError(statement, None, error) from error
        if code.startswith("08"):
            raise sa_exc.OperationalError(statement, None, error) from error
        if code.startswith("22"):
            raise sa_exc.DataError(statement, None, error) from error
        if code:
            raise sa_exc.DBAPIError(statement, None, error) from error
        raise
