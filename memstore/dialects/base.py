"""What the rest of memstore may ask of a SQL backend: one :class:`Dialect` per backend.

Code outside a backend's folder never tells backends apart and never imports one;
it asks the dialect of its engine, session or URL
(:func:`memstore.dialects.dialect_for`) for a capability, a construct, or one of the
hooks below, which the backend's folder (``memstore/backends/<name>/``) implements
with its own connection set-up, change signalling and search statements.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlalchemy.engine import URL
from sqlalchemy.sql.functions import Function
from sqlalchemy.types import TypeEngine

if TYPE_CHECKING:
    from sqlalchemy import Table
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

    from memstore.db.signal import ChangeSignal
    from memstore.search.tables import SearchHalf

__all__ = ["AppendedSlot", "Dialect", "EngineOptions", "Lock", "SlotAppend"]


class EngineOptions:
    """What :func:`memstore.db.engine.create_engine` was asked for, for the backend to apply.

    Each backend takes the options that mean something to it and ignores the rest.
    """

    def __init__(
        self,
        *,
        busy_timeout_ms: int,
        connect_timeout: float | None,
        command_timeout: float | None,
        engine_kwargs: dict[str, Any],
    ) -> None:
        self.busy_timeout_ms = busy_timeout_ms
        self.connect_timeout = connect_timeout
        self.command_timeout = command_timeout
        self.engine_kwargs = engine_kwargs


@dataclass(frozen=True)
class Lock:
    """A lock :meth:`Dialect.lock` holds until the transaction ends, against other writers.

    ``key`` is 64-bit, or 32-bit in ``space`` (the two never collide); a tuple of
    keys is taken in its order, in one statement. ``shared`` holders do not
    exclude each other.
    """

    key: int | tuple[int, ...]
    space: int | None = None
    shared: bool = False


@dataclass(frozen=True)
class SlotAppend:
    """A thread append for :meth:`Dialect.append_slot`: the slot's row but its index.

    ``epoch`` is the epoch of the tenant's change log if this append creates it.
    """

    user_id: str
    thread_id: str
    from_id: str
    to_id: str
    payload_type: str
    payload: Any
    own_name: str | None
    is_self_call: bool
    usage_instructions: str
    todo_nudge: str
    now: datetime
    max_slots: int
    epoch: str


@dataclass(frozen=True)
class AppendedSlot:
    """What :meth:`Dialect.append_slot` did: the slot's index (None: the thread was
    full, nothing written) and the epoch of the tenant's change log."""

    index: int | None
    epoch: str | None


class Dialect(ABC):
    """One SQL backend: its names, its capabilities, and the constructs that differ.

    Each capability is named for what the calling code needs to know, so that a
    third backend answers each question once, here, and nowhere else.
    """

    # SQLAlchemy's name of the dialect (``engine.dialect.name``): the registry key.
    name: str
    # How messages name the backend.
    label: str
    # URL driver names written without a driver (``postgres://``) and the async
    # driver memstore connects with instead.
    bare_drivers: tuple[str, ...]
    async_driver: str
    # The database is a file opened in this process (created by connecting to it):
    # it needs no deploy step, so it migrates itself when opened, and a tool that
    # works on an existing store checks that the file is there first.
    embedded: bool
    # Migrations run on an engine of their own (no per-statement timeout, index
    # builds may take long); otherwise on the caller's (an in-memory database
    # lives only there).
    migrates_on_own_engine: bool
    # One writer at a time per database (its write transactions are serial,
    # BEGIN IMMEDIATE): this process queues its writers before the file lock, and
    # no row or advisory lock is needed to serialise writers (:meth:`lock` takes none).
    serial_writes: bool
    # Execution options of a read that is exactly one statement (no BEGIN/COMMIT).
    statement_options: Mapping[str, Any]
    # The isolation level a snapshot read asks for; None: every read transaction
    # is a snapshot already.
    snapshot_isolation: str | None
    # Row-level security policies, named tenant per transaction (``rls=True``).
    row_level_security: bool
    # A committing transaction can wake listeners in other processes (NOTIFY,
    # :meth:`announce`); otherwise other processes see commits by polling the
    # database's version.
    notifies: bool
    # Vectors are a column type of the database (pgvector), with a codec each
    # connection registers once the type exists; otherwise they are float32 bytes.
    native_vectors: bool
    # Bound Python lists are SQL arrays (``unnest``); otherwise lists travel as JSON.
    arrays: bool
    # Timestamps are stored without a time zone (normalised to naive UTC).
    naive_timestamps: bool
    # Bulk inserts may use COPY on the session's own connection.
    copies_rows: bool
    # The database may be spread over a cluster (Citus): distribution plans,
    # shard storage and catalogs apply.
    distributable: bool
    # Recall ranks vectors in this process (no vector index): each tenant's
    # vectors are cached here, checked against a per-tenant search version.
    vectors_in_process: bool

    @abstractmethod
    def insert(self, table: Any) -> Any:
        """The dialect's ``INSERT`` of ``table``, with ``ON CONFLICT`` and ``excluded``."""

    @abstractmethod
    def greatest(self, *values: Any) -> Function[Any]:
        """The larger of ``values`` per row (not an aggregate)."""

    @abstractmethod
    def json_type(self, *, none_as_null: bool) -> TypeEngine[Any]:
        """The column type of a JSON document."""

    def rls_statements(self, table: str, *, setting: str, enable: bool, force: bool) -> list[str]:
        """The statements that put the tenant policy on ``table`` (quoted): rows whose
        user_id is ``setting``'s, also for the owner when ``force``; or take it off."""
        raise NotImplementedError(f"{self.label} has no row-level security")

    async def rls_state(self, conn: AsyncConnection, table: str) -> tuple[bool, bool, bool]:
        """Whether ``table`` (quoted) has row-level security on, forced, and the policy."""
        raise NotImplementedError(f"{self.label} has no row-level security")

    async def after_migration(self, engine: AsyncEngine) -> None:
        """Finish a committed migration outside its transaction."""
        return  # by default: nothing left

    def distribution_plan(self) -> Any:
        """The statements that distribute memstore's schema (``distributable``)."""
        raise NotImplementedError(f"{self.label} does not distribute")

    async def distribution_status(self, url: str | None) -> Any:
        """How the database at ``url`` is distributed (``distributable``)."""
        raise NotImplementedError(f"{self.label} does not distribute")

    async def distribute(self, url: str | None) -> list[str]:
        """Distribute what is not yet distributed at ``url`` (``distributable``)."""
        raise NotImplementedError(f"{self.label} does not distribute")

    def misconfiguration(self, error: Any) -> str | None:
        """What to fix, when the driver's ``error`` (a DBAPIError) means no retry can
        succeed until someone changes the URL or the server; None otherwise."""
        return None

    def driver_decoder(self, type_: Any, sql_dialect: Any) -> Callable[[Any], Any] | None:
        """What turns the driver's own value of a ``type_`` column into what SQLAlchemy
        would return (None: the value as it comes), for reads sent to the driver directly
        (memstore.db.prepared); by default SQLAlchemy's own result processor."""
        processor: Callable[[Any], Any] | None = type_._cached_result_processor(  # noqa: SLF001
            sql_dialect, None
        )
        return processor

    async def driver_fetch(self, driver: Any, sql: str, values: Sequence[Any]) -> Sequence[Any]:
        """The rows of ``sql`` with its positional ``values`` on the driver's connection."""
        raise NotImplementedError(f"{self.label} sends no statement to its driver directly")

    def transaction_unsent(self, adapter: Any) -> bool:
        """Whether SQLAlchemy has begun a transaction on the DBAPI ``adapter`` that it has
        not sent yet (its own execute would send the BEGIN; the driver's would not)."""
        return False

    def schema_missing(self, error: Any) -> bool:
        """Whether the driver's ``error`` (a DBAPIError) names a table, column, function
        or type the database lacks: a schema older than this memstore."""
        return False

    def vector_type(self, *, many: bool) -> TypeEngine[Any] | None:
        """The column type of a float32 vector (``many``: of a list of them); None:
        float32 bytes (``native_vectors`` says which)."""
        return None

    def bind_vectors(self, rows: Any) -> Any:
        """A 2-D float32 array as the driver binds a list of native vectors (``native_vectors``)."""
        raise NotImplementedError(f"{self.label} has no native vector type")

    @abstractmethod
    def database_file(self, url: URL) -> Path | None:
        """The file ``url`` names, if the database is one (None: a server, memory, a URI)."""

    def check_url(self, url: URL) -> None:
        """Refuse (:class:`~memstore.errors.ConfigurationError`) what no connection could
        honour in ``url``, before any connection is tried."""
        return  # by default: every URL the backend's driver takes

    def check_location(self, url: URL) -> None:
        """Refuse a ``url`` whose database cannot be where it says (e.g. a missing directory)."""
        return  # by default: a server's database, which connecting does not create

    @abstractmethod
    def create_engine(self, url: URL, options: EngineOptions) -> AsyncEngine:
        """An engine for the resolved ``url``, its connections set up as memstore needs."""

    @abstractmethod
    async def watch_changes(self, signal: ChangeSignal) -> None:
        """Wake ``signal``'s waiters when other connections commit, until it closes."""

    async def join(self, session: AsyncSession, *, write: bool) -> None:
        """Ready a caller's own session (a bound store) before memstore runs statements in it."""
        return  # by default: any session of the backend's driver will do

    async def set_tenant(self, session: AsyncSession, setting: str, tenant: str) -> None:
        """Name the transaction's tenant for the row-level security policies (``setting``)."""
        raise NotImplementedError(f"{self.label} has no row-level security")

    async def lock(self, session: AsyncSession, lock: Lock, *, wait: bool = True) -> bool:
        """Hold ``lock`` until ``session``'s transaction ends; ``wait=False`` (a single
        key) takes it only if it is free, and says whether it did."""
        if not self.serial_writes:
            raise NotImplementedError(f"{self.label} writers run at once but take no locks")
        return True  # serial writers: each one already excludes every other

    async def announce(self, session: AsyncSession, channel: str, payload: str) -> None:
        """Send ``payload`` on ``channel`` to other processes' listeners if the transaction
        commits (``notifies``)."""
        if self.notifies:
            raise NotImplementedError(f"{self.label} notifies but has no announce")
        return  # no listeners: other processes see commits by polling

    async def append_slot(
        self, reader: AsyncSession | AsyncConnection, append: SlotAppend
    ) -> AppendedSlot | None:
        """Append a thread slot, its counters and its change row in one call to the database.

        ``reader`` is an autocommit connection (the append is its own transaction)
        or a session whose transaction it joins. The wake-up hint is sent on
        commit where the backend ``notifies``. None: this database cannot, and
        the caller runs the repositories' statements in a transaction instead.
        """
        return None

    async def advance_sequences(self, session: AsyncSession, table: Table) -> None:
        """Move the id sequences of ``table``, shared by all tenants, past its imported ids."""
        return  # by default: the next id follows the largest stored one, no sequence

    async def purge_deleted_text(self, session: AsyncSession, tables: Iterable[str]) -> None:
        """Remove deleted rows' text from ``tables``' full-text index files."""
        return  # by default: the index keeps no deleted text reachable from the files

    async def truncate_log(self, engine: AsyncEngine) -> bool:
        """Drop erased rows' old page images from the write-ahead log; False if it could not."""
        return True  # by default: nothing this process can do (VACUUM's business)

    async def change_vector_width(
        self, conn: AsyncConnection, dim: int, tables: Sequence[str]
    ) -> list[str]:
        """Make ``tables``' vectors ``dim`` wide, all of them emptied (reembed refills
        them in the same transaction); what :meth:`vector_width_committed` must finish."""
        for table in tables:
            await conn.execute(text(f"UPDATE {table} SET embedding = NULL"))
        return []

    async def build_vector_index(self, conn: AsyncConnection) -> None:
        """Index the refilled vectors after a width change (None: the backend scans)."""
        return  # by default: no vector index

    async def vector_width_committed(self, engine: AsyncEngine, pending: list[str]) -> None:
        """Finish a committed width change outside its transaction (``pending`` as returned)."""
        return  # by default: nothing left

    @abstractmethod
    def search(self) -> SearchHalf:
        """The backend's half of the recall statements."""

    def with_driver(self, url: URL) -> URL:
        """``url`` with memstore's async driver when it names none."""
        if url.drivername in self.bare_drivers:
            return url.set(drivername=self.async_driver)
        return url

    def __repr__(self) -> str:
        return f"<dialect {self.name}>"
