"""pgvector's column types, as SQLAlchemy declares and binds them."""

from __future__ import annotations

from typing import Any

from sqlalchemy.types import UserDefinedType

__all__ = ["PgVector", "PgVectorArray"]


class PgVector(UserDefinedType[Any]):
    """pgvector's ``vector`` column; values pass straight to the asyncpg codec.

    The engine registers pgvector's binary asyncpg codec, which takes and
    returns numpy arrays, so no text conversion happens here. The width is
    fixed by the migration (``vector(dim)``), not by the model.
    """

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "VECTOR"


class PgVectorArray(UserDefinedType[Any]):
    """pgvector's ``vector[]``, without a width: a row's passages can outlive a change of
    embedder width (``memstore reembed`` recomputes them) without a column rewrite."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "VECTOR[]"
