"""Turn-loop benchmark: seeding tenants, and reading memstore's recall statements from its log."""

from __future__ import annotations

import random
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import event

from memstore.db.observers import Executed, observe

from .words import TOPICS, sentence

__all__ = [
    "FACTS",
    "PROBE_QUERY",
    "SEED_BLOCKS",
    "Template",
    "capture_templates",
    "engine_of",
    "message",
    "open_measured",
    "seed_tenant",
    "statement_log",
]

SEED_BLOCKS = ("persona", "goals", "style", "notes")
FACTS = 20
_SESSION_TURNS = 50  # seeded history comes in sessions of this many turns
PROBE_QUERY = "coffee plans in paris"  # the query whose recall statements are captured


def message(rng: random.Random) -> tuple[str, str]:
    """(what the user says, what the agent answers) of one turn."""
    return sentence(rng, rng.randint(8, 30)), sentence(rng, rng.randint(20, 80))


async def seed_tenant(store: Any, tenant: str, episodes: int, seed: int) -> None:
    """``episodes`` past turns in sessions of 50, ``FACTS`` current facts, 4 working blocks."""
    from memstore import Episode, Fact

    rng = random.Random(seed)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    batch = []
    for n in range(episodes):
        said, answered = message(rng)
        batch.append(
            Episode(
                user_id=tenant,
                session_id=f"{tenant}-s{n // _SESSION_TURNS}",
                input=said,
                output=answered,
                occurred_at=start + timedelta(minutes=10 * n),
            )
        )
    for n in range(0, len(batch), 1000):
        await store.remember_many(batch[n : n + 1000])
    for n in range(FACTS):
        await store.add_fact(
            Fact(
                user_id=tenant,
                subject=tenant,
                predicate=f"pref_{n}",
                object=f"{rng.choice(TOPICS)} {rng.choice(TOPICS)} {n}",
                single_valued=True,
                valid_from=start,
            )
        )
    for name in SEED_BLOCKS:
        await store.update_block(name, sentence(rng, 60), user_id=tenant)


@dataclass(frozen=True)
class Template:
    """A statement memstore sent: its text and its parameters by name, in order."""

    sql: str
    names: tuple[str, ...]
    values: tuple[Any, ...]

    def params(self, **given: Any) -> tuple[Any, ...]:
        """The parameters with ``given`` ones replaced (the others as memstore sent them)."""
        missing = set(given) - set(self.names)
        if missing:
            raise KeyError(f"the statement has no parameter {sorted(missing)}")
        return tuple(given.get(n, v) for n, v in zip(self.names, self.values, strict=True))


_ENGINES: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


@asynccontextmanager
async def open_measured(url: str) -> AsyncIterator[Any]:
    """A store on the migrated database ``url`` built on an engine this script holds (as
    tests/store_parts.py does), so its statements and connections can be watched."""
    from memstore import MemoryStore
    from memstore.db.engine import create_engine
    from memstore.db.unit import Database
    from memstore.services.access import AccessTracker
    from memstore.store import SharedParts

    engine = create_engine(url)
    db = Database(engine)
    tracker = AccessTracker(db)
    store = MemoryStore(engine=engine, shared=SharedParts(db=db, access_tracker=tracker))
    _ENGINES[store] = engine
    try:
        yield store
    finally:
        try:
            await tracker.close()
        finally:
            await db.signal.close()
            await engine.dispose()


def engine_of(store: Any) -> Any:
    """The engine under a store from :func:`open_measured`: its statement log is what the
    raw loop reproduces."""
    return _ENGINES[store]


@contextmanager
def statement_log(engine: Any) -> Iterator[list[tuple[str, Any, Any]]]:
    """Every statement ``engine`` sends meanwhile: (text, parameters, compiled statement)."""
    log: list[tuple[str, Any, Any]] = []

    def before(_conn: Any, _cursor: Any, sql: str, params: Any, context: Any, _many: bool) -> None:
        log.append((sql, params, getattr(context, "compiled", None)))

    pool = engine.sync_engine.pool

    def sent_to_driver(executed: Executed) -> None:
        # memstore's per-call reads, which go to the driver past the cursor events
        if executed.engine.pool is pool:
            log.append((executed.sql, executed.parameters, executed.compiled))

    event.listen(engine.sync_engine, "before_cursor_execute", before)
    unobserve = observe(before=sent_to_driver)
    try:
        yield log
    finally:
        unobserve()
        event.remove(engine.sync_engine, "before_cursor_execute", before)


def _template(sql: str, params: Any, compiled: Any) -> Template:
    names = tuple(getattr(compiled, "positiontup", None) or ())
    values = tuple(params)
    if len(names) != len(values):
        raise RuntimeError("the recall statement's parameters have no names; cannot replay it")
    return Template(sql, names, values)


async def capture_templates(store: Any, tenant: str, session: str) -> dict[str, Template]:
    """The fact and episode hybrid recall statements of one ``context()`` call on ``tenant``."""
    with statement_log(engine_of(store)) as log:
        await store.context(user_id=tenant, session_id=session, query=PROBE_QUERY)
    found: dict[str, Template] = {}
    for sql, params, compiled in log:
        if not sql.lstrip().startswith("WITH dense"):
            continue
        kind = "facts" if " facts AS e" in sql or "facts_fts" in sql else "episodes"
        if kind in found:
            raise RuntimeError(f"context() ran the {kind} recall twice; the replay would differ")
        found[kind] = _template(sql, params, compiled)
    if set(found) != {"facts", "episodes"}:
        raise RuntimeError(f"expected both hybrid recall statements, saw {sorted(found)}")
    return found
