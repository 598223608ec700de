"""Bi-temporal facts: assert, retract, history and recall as of any time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memstore.core.documents import fact_text
from memstore.core.fact_input import MAX_FACT_FIELD_CHARS, valid_fact
from memstore.core.forwarding import takes_options
from memstore.core.predicates import normalize_predicate
from memstore.core.tenancy import TenantId, storage_user_id
from memstore.core.validation import check_aware, check_identifier, check_limit, check_text
from memstore.embeddings.base import Embedder, embed_checked
from memstore.errors import NotFound
from memstore.recall.hybrid import HybridRecall, RecallArgs
from memstore.repositories.changes import ChangeEntry, ChangeLogRepository
from memstore.repositories.fact_reads import FactReads
from memstore.repositories.facts import FactRepository
from memstore.rerankers.base import Reranker
from memstore.search.settings import EmbedderGuard
from memstore.services.access import AccessTracker
from memstore.services.base import Service
from memstore.services.bitemporal import FactWriter
from memstore.types import AssertOutcome, ChangeKind, Fact, FactMatch

__all__ = [
    "MAX_FACTS_LISTED",
    "FactFilter",
    "FactHistoryArgs",
    "FactRecallArgs",
    "FactService",
    "FactsArgs",
]

# store.facts(limit=...) upper bound: a page, not a dump (export is for that).
MAX_FACTS_LISTED = 10_000


@dataclass(frozen=True, kw_only=True)
class FactFilter:
    """Whose facts, and of which subject and predicate (each optional)."""

    user_id: str | None = None
    subject: str | None = None
    predicate: str | None = None

    def checked(self) -> tuple[TenantId, str | None, str | None]:
        """The stored tenant id, and the subject and predicate as they are stored."""
        user = storage_user_id(self.user_id)
        subject, predicate = self.subject, self.predicate
        if subject is not None:
            subject = check_text("subject", subject, max_chars=MAX_FACT_FIELD_CHARS).strip()
        if predicate is not None:
            predicate = normalize_predicate(check_text("predicate", predicate))
        return user, subject, predicate


@dataclass(frozen=True, kw_only=True)
class FactHistoryArgs(FactFilter):
    """The arguments of ``fact_history``: the filter, or one logical fact."""

    fact_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class FactsArgs(FactFilter):
    """The arguments of ``facts``: the filter, the two times and a page size."""

    valid_at: datetime | None = None
    known_at: datetime | None = None
    limit: int = 100


@dataclass(frozen=True, kw_only=True)
class FactRecallArgs(RecallArgs):
    """The arguments of ``recall_facts`` and ``recall_facts_scored``: one signature for both."""

    valid_at: datetime | None = None
    known_at: datetime | None = None
    min_score: float | None = None
    rerank: Reranker | bool | None = None


class FactService(Service):
    """Bi-temporal facts: assert, retract, history and recall as of any time."""

    embedder: Embedder
    embedder_guard: EmbedderGuard
    hybrid: HybridRecall
    access_tracker: AccessTracker

    async def assert_fact(self, fact: Fact) -> AssertOutcome:
        """Like :meth:`add_fact`, but also says whether it added, reinforced or superseded."""
        user, cleaned, single, valid_from = valid_fact(fact, now=self.db.now())
        (vector,) = await embed_checked(self.embedder, [fact_text(cleaned)])
        async with self.db.write(user) as session:
            await self.embedder_guard.claim(session)
            writer = FactWriter(session=session, embedder=self.embedder)
            outcome = await writer.assert_fact(
                user,
                cleaned,
                single_valued=single,
                valid_from=valid_from,
                now=self.db.now(),
                embedding=vector,
            )
            await writer.record_changes(user, [outcome], self.db.now())
        return outcome

    async def add_fact(self, fact: Fact) -> str:
        """Record a fact; returns its logical id (stable across its versions)."""
        return (await self.assert_fact(fact)).fact_id

    async def retract_fact(self, fact_id: str, *, user_id: str | None = None) -> None:
        """Stop believing a fact from now on (closes transaction time; history stays)."""
        user = storage_user_id(user_id)
        check_identifier("fact_id", fact_id)
        async with self.db.write(user) as session:
            closed = await FactRepository(session=session).retract(user, fact_id, self.db.now())
            if closed:
                retracted = [ChangeEntry(ChangeKind.FACT_RETRACTED, fact_id)]
                await ChangeLogRepository(session=session).record(
                    user, retracted, now=self.db.now()
                )
        if not closed:
            raise NotFound(f"no current fact {fact_id!r} for this user")

    @takes_options(FactHistoryArgs)
    async def fact_history(self, args: FactHistoryArgs) -> list[Fact]:
        """Every stored version, ordered by valid_from then recorded_at."""
        user, subject, predicate = args.checked()
        fact_id = args.fact_id
        if fact_id is not None:
            check_identifier("fact_id", fact_id)
        async with self.db.statement(user) as reader:
            return await FactReads(reader=reader).history(
                user, subject=subject, predicate=predicate, fact_id=fact_id
            )

    @takes_options(FactsArgs)
    async def facts(self, args: FactsArgs) -> list[Fact]:
        """Facts true at ``valid_at`` as believed at ``known_at`` (both default to now).

        No search: every such fact of the tenant, or of ``subject`` / ``predicate``
        when given, most recently recorded first, at most ``limit``.
        """
        user, subject, predicate = args.checked()
        limit = check_limit("limit", args.limit, maximum=MAX_FACTS_LISTED)
        now = self.db.now()
        valid_at, known_at = _as_of(args.valid_at, args.known_at, now)
        async with self.db.statement(user) as reader:
            found = await FactReads(reader=reader).believed(
                user,
                subject=subject,
                predicate=predicate,
                valid_at=valid_at,
                known_at=known_at,
                limit=limit,
            )
        self.access_tracker.record(user, "fact", [f.fact_id or "" for f in found], now)
        return found

    @takes_options(FactRecallArgs)
    async def recall_facts(self, args: FactRecallArgs) -> list[Fact]:
        """Facts true at ``valid_at`` as believed at ``known_at`` (both default to now).

        ``min_score`` (0..1, default none) drops facts less relevant than that, as in
        :meth:`recall`; ``rerank`` re-orders the top candidates by a reranker's score,
        as in :meth:`recall_scored`.
        """
        return [m.fact for m in await self._ranked(args, with_relevance=False)]

    @takes_options(FactRecallArgs)
    async def recall_facts_scored(self, args: FactRecallArgs) -> list[FactMatch]:
        """:meth:`recall_facts` with each fact's relevance and the ranking's parts.

        ``score`` is the fact's relevance to the query, 0..1, on the same scale as
        :meth:`recall_scored`'s (so facts and episodes can be merged by it);
        ``parts["ranking"]`` is what the order follows. Parts: ``dense`` (cosine),
        ``keyword`` (BM25), their z-scores ``dense_z``/``keyword_z`` and sum
        ``fused``, ``ranking`` and ``relevance`` (= ``score``); ``rerank`` when a
        reranker re-ordered the facts (``rerank``, as in :meth:`recall_scored`).
        """
        return await self._ranked(args, with_relevance=True)

    async def _ranked(self, args: FactRecallArgs, *, with_relevance: bool) -> list[FactMatch]:
        user = storage_user_id(args.user_id)
        ranking = self.hybrid.ranking(
            args, args.min_score, args.rerank, with_relevance=with_relevance
        )
        now = self.db.now()
        valid_at, known_at = _as_of(args.valid_at, args.known_at, now)
        matches = await self.hybrid.facts(
            user, args.query, ranking, valid_at=valid_at, known_at=known_at
        )
        self.access_tracker.record(user, "fact", [m.fact.fact_id or "" for m in matches], now)
        return matches


def _as_of(
    valid_at: datetime | None, known_at: datetime | None, now: datetime
) -> tuple[datetime, datetime]:
    """The two times a bi-temporal read is as of; each defaults to ``now``."""
    valid = check_aware("valid_at", valid_at) if valid_at is not None else now
    known = check_aware("known_at", known_at) if known_at is not None else now
    return valid, known
