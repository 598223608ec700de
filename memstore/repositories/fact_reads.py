"""Fact reads that are one statement each: history and the versions believed at a time.

Statements of table columns run and return rows through Core, without the
ORM's per-row loading; the statement objects are built once per filter shape.
"""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, or_, select
from sqlalchemy.sql.elements import BindParameter, ColumnElement

from memstore.core.tenancy import public_user_id
from memstore.db.prepared import fetch
from memstore.db.unit import Reader
from memstore.models import FactRow
from memstore.models.facts import subject_key
from memstore.types import Fact

__all__ = ["FACT_COLUMNS", "FactReads", "fact_from_columns"]

_FACTS = FactRow.__table__.c
# The columns a Fact is made of, as table columns: a statement of table columns
# runs and returns rows through Core, without the ORM's per-row loading.
FACT_COLUMNS = tuple(
    _FACTS[name]
    for name in (
        "id",
        "fact_id",
        "user_id",
        "subject",
        "predicate",
        "object",
        "single_valued",
        "confidence",
        "sources",
        "valid_from",
        "valid_to",
        "recorded_at",
        "superseded_at",
    )
)


_FIELDS = tuple(c.name for c in FACT_COLUMNS)
_new_fact = object.__new__
_set_fields = object.__setattr__


def fact_from_columns(row: Any) -> Fact:
    """A Fact from a row of ``FACT_COLUMNS``, without the dataclass ``__init__``.

    Fact has no ``__post_init__`` and its frozen ``__init__`` sets each of its 13
    fields through ``object.__setattr__``: more than half the Python cost per
    row of a long history. Filling ``__dict__`` at once gives an equal object
    (tests/test_facts_reads.py compares the two).
    """
    fields = dict(zip(_FIELDS, row, strict=True))
    fields["user_id"] = public_user_id(fields["user_id"])
    fields["sources"] = tuple(fields["sources"] or ())
    fact = _new_fact(Fact)
    _set_fields(fact, "__dict__", fields)
    return fact


def _subject_predicate_filter(subject: bool, predicate: bool) -> list[ColumnElement[bool]]:
    """Conditions on ``:subject_key``/``:subject`` and ``:predicate``, as asked for."""
    conditions: list[ColumnElement[bool]] = []
    if subject:
        conditions += [
            _FACTS.subject_key == bindparam("subject_key"),
            _FACTS.subject == bindparam("subject"),
        ]
    if predicate:
        conditions.append(_FACTS.predicate == bindparam("predicate"))
    return conditions


def _subject_predicate_params(subject: str | None, predicate: str | None) -> dict[str, Any]:
    """Values for :func:`_subject_predicate_filter`'s parameters."""
    params: dict[str, Any] = {}
    if subject is not None:
        params |= {"subject_key": subject_key(subject), "subject": subject}
    if predicate is not None:
        params["predicate"] = predicate
    return params


@cache
def _history_statement(subject: bool, predicate: bool, fact_id: bool) -> Select[Any]:
    """Built once per combination of filters; values are bound per call.

    Building a select with its comparisons costs more than compiling it (which
    SQLAlchemy caches anyway), so the statement objects are kept too.
    """
    conditions = [
        _FACTS.user_id == bindparam("user_id"),
        *_subject_predicate_filter(subject, predicate),
    ]
    if fact_id:
        conditions.append(_FACTS.fact_id == bindparam("fact_id"))
    return (
        select(*FACT_COLUMNS)
        .where(*conditions)
        .order_by(_FACTS.valid_from, _FACTS.recorded_at, _FACTS.id)
    )


@cache
def _believed_statement(subject: bool, predicate: bool) -> Select[Any]:
    """Facts true at ``:valid_at`` as recorded by ``:known_at``, newest first (built once)."""
    valid_at: BindParameter[datetime] = bindparam("valid_at")
    known_at: BindParameter[datetime] = bindparam("known_at")
    conditions = [
        _FACTS.user_id == bindparam("user_id"),
        _FACTS.valid_from <= valid_at,
        or_(_FACTS.valid_to.is_(None), _FACTS.valid_to > valid_at),
        _FACTS.recorded_at <= known_at,
        or_(_FACTS.superseded_at.is_(None), _FACTS.superseded_at > known_at),
        *_subject_predicate_filter(subject, predicate),
    ]
    return (
        select(*FACT_COLUMNS)
        .where(*conditions)
        .order_by(_FACTS.recorded_at.desc(), _FACTS.id)
        .limit(bindparam("limit"))
    )


class FactReads:
    """The fact reads that are one statement each, on a :data:`Reader`.

    Given what :meth:`Database.statement` yields: a Core connection outside any
    explicit transaction, or the session of the transaction they must join.
    """

    def __init__(self, *, reader: Reader) -> None:
        self._reader = reader

    async def history(
        self,
        user_id: str,
        *,
        subject: str | None = None,
        predicate: str | None = None,
        fact_id: str | None = None,
    ) -> list[Fact]:
        stmt = _history_statement(subject is not None, predicate is not None, fact_id is not None)
        params = {"user_id": user_id, **_subject_predicate_params(subject, predicate)}
        if fact_id is not None:
            params["fact_id"] = fact_id
        return [fact_from_columns(r) for r in await fetch(self._reader, stmt, params)]

    async def believed(
        self,
        user_id: str,
        *,
        subject: str | None,
        predicate: str | None,
        valid_at: datetime,
        known_at: datetime,
        limit: int,
    ) -> list[Fact]:
        """Facts true at ``valid_at`` as recorded by ``known_at``, newest first."""
        stmt = _believed_statement(subject is not None, predicate is not None)
        params: dict[str, Any] = {
            "user_id": user_id,
            "valid_at": valid_at,
            "known_at": known_at,
            "limit": limit,
            **_subject_predicate_params(subject, predicate),
        }
        return [fact_from_columns(r) for r in await fetch(self._reader, stmt, params)]
