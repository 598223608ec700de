from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, func, insert, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import BindParameter, ColumnElement

from memstore.core.documents import fact_text
from memstore.core.tenancy import public_user_id
from memstore.db.unit import Reader
from memstore.embeddings.base import Embedder, embed_checked
from memstore.models import FactRow
from memstore.models.facts import subject_key
from memstore.types import AssertOutcome, Fact, FactChange, new_id

__all__ = [
    "FactReads",
    "FactRepository",
    "fact_from_row",
    "same_object",
]


def fact_from_row(row: FactRow) -> Fact:
    return Fact(
        id=row.id,
        fact_id=row.fact_id,
        user_id=public_user_id(row.user_id),
        subject=row.subject,
        predicate=row.predicate,
        object=row.object,
        single_valued=row.single_valued,
        confidence=row.confidence,
        sources=tuple(row.sources or ()),
        valid_from=row.valid_from,
        valid_to=row.valid_to,
        recorded_at=row.recorded_at,
        superseded_at=row.superseded_at,
    )


_FACTS = FactRow.__table__.c
# The columns a Fact is made of, as table columns: a statement of table columns
# runs and returns rows through Core, without the ORM's per-row loading.
_FACT_COLUMNS = tuple(
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


_FACT_FIELDS = tuple(c.name for c in _FACT_COLUMNS)
_new_fact = object.__new__
_set_fields = object.__setattr__


def _fact_from_core(row: Any) -> Fact:
    """A Fact from a row of ``_FACT_COLUMNS``, without the dataclass ``__init__``.

    Fact has no ``__post_init__`` and its frozen ``__init__`` sets each of its 13
    fields through ``object.__setattr__``: more than half the Python cost per
    row of a long history. Filling ``__dict__`` at once gives an equal object
    (tests/test_facts_reads.py compares the two).
    """
    fields = dict(zip(_FACT_FIELDS, row, strict=True))
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
        select(*_FACT_COLUMNS)
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
        select(*_FACT_COLUMNS)
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
        return [_fact_from_core(r) for r in (await self._reader.execute(stmt, params)).all()]

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
        return [_fact_from_core(r) for r in (await self._reader.execute(stmt, params)).all()]


def same_object(a: str, b: str) -> bool:
    return " ".join(a.casefold().split()) == " ".join(b.casefold().split())


def reinforce(old: float, new: float) -> float:
    """Independent confirmations raise confidence (noisy-OR), never above 1."""
    return min(1.0, 1.0 - (1.0 - old) * (1.0 - new))


class FactRepository:
    """Bi-temporal fact versions of one tenant at a time.

    Rows are inserted and, at most once, closed in transaction time
    (``superseded_at``); nothing else is ever updated. With an ``embedder``,
    every row it inserts carries an embedding: a copy of a row written before
    facts were embedded (or an insert given none) is embedded here, so no write
    path can leave a fact invisible to dense recall.
    """

    def __init__(self, *, session: AsyncSession, embedder: Embedder | None = None) -> None:
        self._session = session
        self._embedder = embedder

    async def _lock_key(self, user_id: str, subject: str, predicate: str) -> None:
        # Serialise writers of one (tenant, subject, predicate) on Postgres; an
        # empty FOR UPDATE would lock nothing when the first value is written.
        # SQLite write transactions are already serial (BEGIN IMMEDIATE).
        if self._session.get_bind().dialect.name != "postgresql":
            return
        digest = hashlib.blake2b(
            f"{user_id}\x1f{subject}\x1f{predicate}".encode(), digest_size=8
        ).digest()
        key = int.from_bytes(digest, "big", signed=True)
        await self._session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})

    async def _current(self, user_id: str, subject: str, predicate: str) -> list[FactRow]:
        stmt = select(FactRow).where(
            FactRow.user_id == user_id,
            FactRow.subject_key == subject_key(subject),
            FactRow.subject == subject,
            FactRow.predicate == predicate,
            FactRow.superseded_at.is_(None),
        )
        return list((await self._session.scalars(stmt)).all())

    async def _close(self, row: FactRow, now: datetime) -> None:
        await self._session.execute(
            update(FactRow)
            .where(FactRow.user_id == row.user_id, FactRow.id == row.id)
            .values(superseded_at=now)
        )

    async def _insert(self, user_id: str, **values: object) -> str:
        if values.get("embedding") is None and self._embedder is not None:
            text_ = fact_text(
                Fact(
                    subject=str(values["subject"]),
                    predicate=str(values["predicate"]),
                    object=str(values["object"]),
                )
            )
            (values["embedding"],) = await embed_checked(self._embedder, [text_])
        row_id = new_id()
        values.setdefault("fact_id", row_id)
        await self._session.execute(insert(FactRow).values(user_id=user_id, id=row_id, **values))
        return row_id

    async def assert_fact(
        self,
        user_id: str,
        fact: Fact,
        *,
        single_valued: bool,
        valid_from: datetime,
        now: datetime,
        embedding: Any = None,
    ) -> AssertOutcome:
        """Record ``fact`` (already validated and normalised) as the tenant now believes it."""
        await self._lock_key(user_id, fact.subject, fact.predicate)
        current = await self._current(user_id, fact.subject, fact.predicate)
        statement = {
            "subject": fact.subject,
            "predicate": fact.predicate,
            "single_valued": single_valued,
        }

        identical = next(
            (
                r
                for r in current
                if same_object(r.object, fact.object) and r.valid_to == fact.valid_to
            ),
            None,
        )
        if identical is not None:
            sources = list(dict.fromkeys([*identical.sources, *fact.sources]))
            confidence = reinforce(identical.confidence, fact.confidence)
            earliest = min(identical.valid_from, valid_from)
            if (
                sources == list(identical.sources)
                and confidence == identical.confidence
                and earliest == identical.valid_from
            ):
                return AssertOutcome(FactChange.UNCHANGED, identical.fact_id)
            await self._close(identical, now)
            await self._insert(
                user_id,
                **statement,
                fact_id=identical.fact_id,
                object=identical.object,
                confidence=confidence,
                sources=sources,
                valid_from=earliest,
                valid_to=identical.valid_to,
                recorded_at=now,
                embedding=identical.embedding,
            )
            return AssertOutcome(FactChange.REINFORCED, identical.fact_id)

        change = FactChange.ADDED
        valid_to = fact.valid_to
        if single_valued:
            change, valid_to = await self._make_room(
                user_id, statement, current, valid_from, valid_to, now
            )
        fact_id = await self._insert(
            user_id,
            **statement,
            object=fact.object,
            confidence=fact.confidence,
            sources=list(dict.fromkeys(fact.sources)),
            valid_from=valid_from,
            valid_to=valid_to,
            recorded_at=now,
            embedding=embedding,
        )
        return AssertOutcome(change, fact_id)

    async def _make_room(
        self,
        user_id: str,
        statement: dict[str, object],
        current: list[FactRow],
        start: datetime,
        end: datetime | None,
        now: datetime,
    ) -> tuple[FactChange, datetime | None]:
        """Keep a single-valued statement's current intervals disjoint around [start, end).

        Values that began earlier are cut at ``start`` (a correction: the old row
        is superseded and a shortened copy recorded); a value that begins later
        bounds the new one's end. Returns the change and the new value's end.
        """
        change = FactChange.ADDED
        later = [r.valid_from for r in current if r.valid_from > start]
        if later:
            end = min([*later, end]) if end is not None else min(later)
        for row in current:
            overlaps = row.valid_from <= start and (row.valid_to is None or row.valid_to > start)
            if not overlaps:
                continue
            await self._close(row, now)
            change = FactChange.SUPERSEDED
            kept = {
                **statement,
                "object": row.object,
                "confidence": row.confidence,
                "sources": list(row.sources),
                "recorded_at": now,
                "embedding": row.embedding,
            }
            if row.valid_from < start:
                await self._insert(
                    user_id, **kept, fact_id=row.fact_id, valid_from=row.valid_from, valid_to=start
                )
            if end is not None and (row.valid_to is None or row.valid_to > end):
                # The old value resumes after a bounded new one; a new logical fact
                # because its first part is already current under the old id.
                await self._insert(user_id, **kept, valid_from=end, valid_to=row.valid_to)
        return change, end

    async def retract(self, user_id: str, fact_id: str, now: datetime) -> int:
        stmt = (
            update(FactRow)
            .where(
                FactRow.user_id == user_id,
                or_(FactRow.fact_id == fact_id, FactRow.id == fact_id),
                FactRow.superseded_at.is_(None),
            )
            .values(superseded_at=now)
        )
        result = await self._session.execute(stmt)
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    def as_of(self, valid_at: datetime, known_at: datetime) -> list[ColumnElement[bool]]:
        """Conditions selecting the versions true at ``valid_at`` as believed at ``known_at``."""
        return self._as_of(valid_at, known_at)

    async def rows_by_id(self, user_id: str, ids: Sequence[str]) -> list[FactRow]:
        if not ids:
            return []
        stmt = select(FactRow).where(FactRow.user_id == user_id, FactRow.id.in_(list(ids)))
        return list((await self._session.scalars(stmt)).all())

    def _as_of(self, valid_at: datetime, known_at: datetime) -> list[ColumnElement[bool]]:
        return [
            FactRow.valid_from <= valid_at,
            or_(FactRow.valid_to.is_(None), FactRow.valid_to > valid_at),
            FactRow.recorded_at <= known_at,
            or_(FactRow.superseded_at.is_(None), FactRow.superseded_at > known_at),
        ]

    async def text_candidates(
        self,
        user_id: str,
        tokens: Sequence[str],
        *,
        valid_at: datetime,
        known_at: datetime,
        limit: int,
    ) -> list[Fact]:
        stmt = select(FactRow).where(FactRow.user_id == user_id, *self._as_of(valid_at, known_at))
        if tokens:
            haystack = func.lower(FactRow.subject + " " + FactRow.predicate + " " + FactRow.object)
            stmt = stmt.where(or_(*(haystack.contains(t, autoescape=True) for t in tokens)))
        stmt = stmt.order_by(FactRow.recorded_at.desc(), FactRow.id).limit(limit)
        rows = (await self._session.scalars(stmt)).all()
        return [fact_from_row(r) for r in rows]

    async def get_version(self, user_id: str, version_id: str) -> Fact | None:
        row = await self._session.get(FactRow, (user_id, version_id))
        return fact_from_row(row) if row is not None else None

    async def count_current(self, user_id: str) -> int:
        stmt = (
            select(func.count())
            .select_from(FactRow)
            .where(FactRow.user_id == user_id, FactRow.superseded_at.is_(None))
        )
        return int((await self._session.scalar(stmt)) or 0)

    async def latest_current(self, user_id: str, limit: int) -> list[Fact]:
        stmt = (
            select(FactRow)
            .where(
                FactRow.user_id == user_id,
                FactRow.superseded_at.is_(None),
                FactRow.valid_to.is_(None),
            )
            .order_by(FactRow.recorded_at.desc(), FactRow.id)
            .limit(limit)
        )
        return [fact_from_row(r) for r in (await self._session.scalars(stmt)).all()]

    async def stream(self, user_id: str) -> AsyncIterator[Fact]:
        stmt = (
            select(FactRow)
            .where(FactRow.user_id == user_id)
            .order_by(FactRow.recorded_at, FactRow.id)
        )
        async for row in await self._session.stream_scalars(stmt):
            yield fact_from_row(row)
