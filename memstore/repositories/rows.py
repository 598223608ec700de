"""A stored row as the public dataclass whose fields are its columns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

from memstore.core.tenancy import public_user_id

if TYPE_CHECKING:
    from _typeshed import DataclassInstance
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["by_key", "from_row"]

_D = TypeVar("_D", bound="DataclassInstance")
_R = TypeVar("_R")
_T = TypeVar("_T")


@cache
def _field_names(kind: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(f.name for f in fields(kind))


def from_row(kind: type[_D], row: Any, **computed: Any) -> _D:
    """A ``kind`` whose fields are ``row``'s columns of the same names (``user_id`` in its
    public form), but for ``computed``: the fields whose column is named or typed otherwise."""
    values = {name: getattr(row, name) for name in _field_names(kind) if name not in computed}
    if "user_id" in values:
        values["user_id"] = public_user_id(values["user_id"])
    return kind(**values, **computed)


async def by_key(
    session: AsyncSession, model: type[_R], key: tuple[Any, ...], convert: Callable[[_R], _T]
) -> _T | None:
    """The row of ``model`` with primary key ``key`` as the database holds it now, converted;
    None if there is none. Now: statements update rows past the session's identity map, so
    a copy the session already holds may be stale."""
    row = await session.get(model, key, populate_existing=True)
    return None if row is None else convert(row)
