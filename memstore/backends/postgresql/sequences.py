"""Postgres: integer ids come from sequences that every tenant shares.

Rows imported with their ids leave a sequence behind them; the next insert of
any tenant would take an imported id. Moving each sequence past the largest id
fixes that, and never moves it backwards, since other tenants' ids came from it.
"""

from __future__ import annotations

from sqlalchemy import Integer, Table, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from memstore.db.crosstenant import cross_tenant

__all__ = ["advance_sequences"]


async def advance_sequences(session: AsyncSession, table: Table) -> None:
    """Move the sequence of each of ``table``'s integer columns past the column's largest value."""
    for column in table.columns:
        if not isinstance(column.type, Integer):
            continue
        seq = await session.scalar(select(func.pg_get_serial_sequence(table.name, column.name)))
        if seq is None:
            continue
        quote = session.get_bind().dialect.identifier_preparer.quote
        # Never move a sequence backwards: other tenants' ids came from it.
        await session.execute(
            cross_tenant(
                text(
                    "SELECT setval(CAST(:seq AS regclass), GREATEST(m, "
                    "COALESCE(pg_sequence_last_value(CAST(:seq AS regclass)), 0))) FROM "
                    f"(SELECT max({quote(column.name)}) AS m FROM {quote(table.name)}) s "
                    "WHERE m IS NOT NULL"
                ),
                "sequence-advance",
            ),
            {"seq": seq},
        )
