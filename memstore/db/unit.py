"""The unit of work: the one place where memstore opens and ends transactions.

A :class:`Database` owns the engine, the session factories, error translation
(once, at this boundary), read-only versus write transactions (SQLite: plain
``BEGIN`` versus ``BEGIN IMMEDIATE``), reads that are one statement and need
no explicit transaction at all (:meth:`Database.statement`), the tenant setting that the row-level
security policies read, and the clock. Services receive one by composition and
hand the sessions it yields to repositories, which never commit.

:meth:`Database.joined` gives a view whose transactions are the caller's own:
an application that keeps its rows in the same database passes its
``AsyncSession`` and memstore's writes commit or roll back with them. That one
session allows no concurrent operations, so memstore's transactions on it take
turns (:func:`_session_turn`) however many tasks run them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar
from datetime import datetime
from types import MappingProxyType

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker

from memstore.core.validation import check_aware
from memstore.db.connections import (
    ONE_STATEMENT,
    OWN_CONNECTION,
    READ_ONLY,
    TENANT_SETTING,
)
from memstore.db.driver import DriverReader, driver_checkout
from memstore.db.engine import pool_capacity
from memstore.db.errors import translated
from memstore.db.signal import HINTS_KEY, ChangeSignal
from memstore.dialects import dialect_for
from memstore.errors import InvalidInput, Unsupported
from memstore.telemetry import acquire_permit, release_permit
from memstore.types import utcnow

__all__ = ["Clock", "Database", "Reader"]

Clock = Callable[[], datetime]

# What :meth:`Database.statement` yields: a pooled connection for the driver
# (memstore.db.driver), or the session of the transaction the statement has to
# join. All run Core statements alike; memstore.db.prepared.fetch sends the
# per-call reads to the driver.
Reader = DriverReader | AsyncSession | AsyncConnection

# Set while this task holds one of the Database's connection permits: a nested
# transaction of the same task must not wait for a permit it is itself holding.
_HOLDS_PERMIT: ContextVar[bool] = ContextVar("memstore_holds_permit", default=False)
# Set while this task holds the SQLite write permit (same reason).
_HOLDS_WRITE: ContextVar[bool] = ContextVar("memstore_holds_write", default=False)
# Session.info entry: the gate of a caller's session (see _SessionGate).
_GATE_KEY = "memstore_session_gate"


class Database:
    """Engine, transactions, error translation, tenant setting and clock.

    ``rls=True`` (Postgres only) names the tenant in every transaction that is
    opened for one, for the policies of ``memstore rls enable``.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        clock: Clock = utcnow,
        rls: bool = False,
        joined: AsyncSession | None = None,
        signal: ChangeSignal | None = None,
    ) -> None:
        backend = dialect_for(engine)
        if rls and not backend.row_level_security:
            raise InvalidInput("row-level security (rls=True) needs PostgreSQL")
        self.engine = engine
        self.backend = backend
        self.rls = rls
        self.clock = clock
        self.joined_session = joined
        # Wake-up hints of committed changes; one per store, shared with its views.
        self.signal = signal if signal is not None else ChangeSignal(engine)
        own = engine.execution_options(**{OWN_CONNECTION: True})
        self._writes = async_sessionmaker(own, expire_on_commit=False)
        self._reads = async_sessionmaker(
            own.execution_options(**{READ_ONLY: True}), expire_on_commit=False
        )
        self._statements = own.execution_options(
            **{READ_ONLY: True, ONE_STATEMENT: True}, **backend.statement_options
        )
        self._single_writes = own.execution_options(
            **{ONE_STATEMENT: True}, **backend.statement_options
        )
        # One permit per connection the pool can hand out. A burst of more
        # concurrent calls than that (thousands of tasks at once) queues here,
        # first come first served, with no deadline: each holder's statements
        # are bounded by the backend's own timeouts, so the queue drains. In the
        # pool's checkout they would wait at most pool_timeout and then fail as
        # if the database were unavailable.
        capacity = pool_capacity(engine) if joined is None else None
        self._permits = asyncio.Semaphore(capacity) if capacity else None
        # SQLite has one write lock per file, and its busy handler is no queue:
        # waiters poll it with backoff, so under a burst a writer can lose every
        # poll until busy_timeout expires, and one whose commit waits for a busy
        # event loop holds the lock that long while the others time out
        # ("database is locked"). This process's writers queue here, in order
        # and with no deadline, and only the head of the queue takes the file
        # lock; other processes still meet it through busy_timeout.
        self._writer = asyncio.Lock() if backend.serial_writes and joined is None else None

    @property
    def dialect(self) -> str:
        """The name of the database's dialect (``self.backend.name``)."""
        return self.backend.name

    def now(self) -> datetime:
        return check_aware("clock()", self.clock())

    def joined(self, session: AsyncSession) -> Database:
        """A view of this database whose transactions are ``session``'s.

        Nothing is begun or committed by memstore through the view: the caller
        commits or rolls back its own transaction, memstore's rows included. The
        session may come from the application's own engine on the same URL.
        """
        if not isinstance(session, AsyncSession):
            raise InvalidInput(
                f"session must be a sqlalchemy AsyncSession, got {type(session).__name__}"
            )
        bind = session.bind
        dialect = getattr(bind, "dialect", None)
        if dialect is not None and dialect.name != self.dialect:
            raise InvalidInput(
                f"the session is bound to a {dialect.name} database but this store "
                f"uses {self.dialect}; pass a session on the store's database"
            )
        return Database(
            self.engine, clock=self.clock, rls=self.rls, joined=session, signal=self.signal
        )

    def refuse_joined(self, what: str, why: str) -> None:
        """Raise :class:`Unsupported` if this view runs in a caller's transaction.

        For operations that need transactions of memstore's own: ``what`` is
        named in the message, ``why`` says what the caller's transaction prevents.
        """
        if self.joined_session is not None:
            raise Unsupported(
                f"{what} cannot run on a store bound to your session (store.bind): {why}; "
                "call it on the store itself",
                operation=what,
            )

    @asynccontextmanager
    async def write(self, tenant: str | None = None) -> AsyncIterator[AsyncSession]:
        """A write transaction, committed when the block ends without error."""
        async with self._transaction("write", self._writes, tenant, write=True) as session:
            yield session

    @asynccontextmanager
    async def read(
        self, tenant: str | None = None, *, snapshot: bool = False
    ) -> AsyncIterator[AsyncSession]:
        """A read transaction; ``snapshot`` makes every statement see the same data."""
        async with self._transaction("read", self._reads, tenant, snapshot=snapshot) as session:
            yield session

    @asynccontextmanager
    async def statement(self, tenant: str | None = None) -> AsyncIterator[Reader]:
        """Where a read that is exactly one statement runs.

        One statement is atomic and sees one snapshot by itself, so it needs no
        explicit transaction: a pooled connection in autocommit (no BEGIN /
        COMMIT round trips on Postgres, no BEGIN on SQLite), no ORM session and
        no Core ``Connection`` unless a statement other than the driver's asks.
        When the statement must share a transaction, with the row-level
        security tenant setting (``rls=True``) or with the caller's own
        (:meth:`joined`), it runs in :meth:`read`'s session instead.
        """
        if self.rls or self.joined_session is not None:
            async with self.read(tenant) as session:
                yield session
            return
        async with self._permit():
            with translated("read"):
                async with driver_checkout(self._statements) as connection:
                    yield connection

    @asynccontextmanager
    async def single_write(
        self, tenant: str | None = None
    ) -> AsyncIterator[AsyncSession | AsyncConnection]:
        """Where a write that is one call to the database runs (Dialect.append_slot).

        A connection with no transaction begun by SQLAlchemy: on Postgres the
        statement is its own transaction (autocommit, no BEGIN / COMMIT round
        trips); on SQLite the call begins and commits its own. When the write
        must share a transaction, with the row-level security tenant setting
        (``rls=True``) or with the caller's own (:meth:`joined`), it runs in
        :meth:`write`'s session instead. The caller wakes this process's waiters
        (:meth:`committed`) once the block has ended without error.
        """
        if self.rls or self.joined_session is not None:
            async with self.write(tenant) as session:
                yield session
            return
        async with self._permit(), self._write_permit():
            with translated("write"):
                async with self._single_writes.connect() as connection:
                    yield connection

    def committed(self, hints: set[str]) -> None:
        """Wake this process's waiters of a committed write's ``hints`` where the
        backend's own signal does not reach them (it does not ``notify``)."""
        if hints and not self.backend.notifies and self.joined_session is None:
            self.signal.notify_local(hints)

    def _permit(self) -> AbstractAsyncContextManager[None]:
        return _held(self._permits, _HOLDS_PERMIT, self.dialect)

    def _write_permit(self) -> AbstractAsyncContextManager[None]:
        # Taken after a connection permit, never before: a writer waiting here
        # must not keep the permit the lock holder needs. A nested write of the
        # holder goes straight on (and meets the file lock, as before).
        return _held(self._writer, _HOLDS_WRITE, self.dialect)

    @asynccontextmanager
    async def _transaction(
        self,
        what: str,
        factory: async_sessionmaker[AsyncSession],
        tenant: str | None,
        *,
        snapshot: bool = False,
        write: bool = False,
    ) -> AsyncIterator[AsyncSession]:
        with translated(what):
            if self.joined_session is not None:
                session = self.joined_session
                async with _session_turn(session):
                    await self.backend.join(session, write=write)
                    if tenant is not None:
                        await self.set_tenant(session, tenant)
                    yield session
                    await session.flush()
                return
            async with (
                self._permit(),
                self._write_permit() if write else _nothing(),
                factory.begin() as session,
            ):
                isolation = self.backend.snapshot_isolation
                if snapshot and isolation is not None:
                    await session.connection(execution_options={"isolation_level": isolation})
                if tenant is not None:
                    await self.set_tenant(session, tenant)
                yield session
            # Committed. Postgres delivers its NOTIFY to this process too; SQLite's
            # poller would see the commit within an interval, this is at once.
            hints = session.info.pop(HINTS_KEY, None)
            if hints and not self.backend.notifies:
                self.signal.notify_local(hints)

    async def set_tenant(self, session: AsyncSession, tenant: str) -> None:
        """Name the transaction's tenant for the row-level security policies.

        Transaction-local, so a pooled connection never carries it into the next
        transaction; may be called again to switch tenant.
        """
        if not self.rls:
            return
        await self.backend.set_tenant(session, TENANT_SETTING, tenant)


class _SessionGate:
    """Turns on a caller's session: one of memstore's transactions on it at a time.

    An ``AsyncSession`` refuses concurrent operations, and memstore runs
    independent reads concurrently (the context builder gathers four); an
    application may gather calls of a bound store too. On a bound store they
    all share the caller's one session, so each transaction waits for its turn
    (:func:`_session_turn`). The task whose transaction has the turn, and the
    tasks it starts meanwhile, take turns at an inner gate instead: a nested
    call, or a call made while ``export_stream`` holds its transaction open,
    must not wait for the turn its own caller holds.
    """

    def __init__(self) -> None:
        self.lock = asyncio.Lock()


# The inner gate of each caller's session whose turn this task (or the task
# that started it) holds: root gate -> inner gate.
_INSIDE: ContextVar[Mapping[_SessionGate, _SessionGate]] = ContextVar(
    "memstore_session_turns", default=MappingProxyType({})
)


@asynccontextmanager
async def _session_turn(session: AsyncSession) -> AsyncIterator[None]:
    """Wait for this task's turn on ``session``, and hold it for the block."""
    root = session.info.get(_GATE_KEY)
    if not isinstance(root, _SessionGate):
        root = session.info[_GATE_KEY] = _SessionGate()
    outer = _INSIDE.get()
    async with outer.get(root, root).lock:
        _INSIDE.set({**outer, root: _SessionGate()})
        try:
            yield
        finally:
            # Not reset(token): an async generator's transaction may be left
            # in another context than the one it was entered in.
            _INSIDE.set(outer)


@asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield


@asynccontextmanager
async def _held(
    gate: asyncio.Semaphore | asyncio.Lock | None, holds: ContextVar[bool], backend: str
) -> AsyncIterator[None]:
    """Hold ``gate`` unless there is none or this task already holds it (``holds``)."""
    if gate is None or holds.get():
        yield
        return
    counted = await acquire_permit(gate, backend)  # a wait is a span
    try:
        holds.set(True)
        try:
            yield
        finally:
            # Not reset(token): a transaction entered by one task may be left
            # by another (SyncMemoryStore runs each step as its own task).
            holds.set(False)
    finally:
        release_permit(gate, backend, counted)
