"""Lossless export and import of one tenant."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping
from typing import Any

from memstore.core.tenancy import ANONYMOUS, TenantId, public_user_id, storage_user_id
from memstore.embeddings.base import Embedder
from memstore.embeddings.identity import embedder_identity
from memstore.errors import Conflict, InvalidImportRow, InvalidInput
from memstore.recall.row_embeddings import fill_embeddings
from memstore.repositories.changes import ChangeLogRepository
from memstore.repositories.episodes import EpisodeRepository
from memstore.repositories.tenants import TenantRepository, tenant_table, tenant_tables
from memstore.schema.migrate import current_revision
from memstore.search.settings import EmbedderGuard, recorded_embedder
from memstore.services.base import Service
from memstore.services.limits import EXPORT_FORMAT, FROM_DUMP, IMPORT_BATCH, FromDump

__all__ = ["TransferService"]


class TransferService(Service):
    """Lossless export and import of one tenant."""

    embedder: Embedder
    embedder_guard: EmbedderGuard

    async def export_header(self, *, user_id: str | None = None) -> dict[str, Any]:
        """What describes a dump of one tenant (the first line of a JSON Lines export)."""
        user = storage_user_id(user_id)
        # In a transaction of the unit of work: on a bound store, the caller's.
        async with self.db.read() as session:
            connection = await session.connection()
            revision = await current_revision(connection)
            # Whose vector space the dumped embeddings are in (see import_rows).
            embedder = await recorded_embedder(connection)
        return {
            "format": EXPORT_FORMAT,
            "user_id": public_user_id(user),
            "exported_at": self.db.now().isoformat(),
            "backend": self.db.dialect,
            "schema_revision": revision,
            "embedder": embedder,
            "tables": [t.name for t in reversed(tenant_tables())],
        }

    async def export_stream(
        self, *, user_id: str | None = None
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Every row of one tenant as ``(table, row)``, parents before children.

        Streamed from one consistent snapshot; rows are JSON-ready (datetimes
        as ISO 8601 with offset, bytes as base64) and omit ``user_id``.
        """
        user = storage_user_id(user_id)
        async with self.db.read(user, snapshot=True) as session:
            repo = TenantRepository(session=session)
            for table in reversed(tenant_tables()):
                async for row in repo.rows(user, table):
                    yield table.name, row

    async def export(self, *, user_id: str | None = None) -> dict[str, Any]:
        """Everything stored for one tenant, table by table, JSON-serialisable."""
        dump = await self.export_header(user_id=user_id)
        tables: dict[str, list[dict[str, Any]]] = {name: [] for name in dump["tables"]}
        async for name, row in self.export_stream(user_id=user_id):
            tables[name].append(row)
        dump["tables"] = tables
        return dump

    async def import_(
        self, dump: Mapping[str, Any], *, user_id: str | FromDump | None = FROM_DUMP
    ) -> dict[str, int]:
        """Load a dump made by :meth:`export` into an empty tenant; returns rows per table.

        The tenant is the dump's unless ``user_id`` names another. All or
        nothing: one transaction. :class:`Conflict` if the tenant already has
        data; :class:`InvalidInput` for a malformed dump. Works across backends.
        """
        if not isinstance(dump, Mapping) or not isinstance(dump.get("tables"), Mapping):
            raise InvalidInput("not a memstore export: expected a mapping with 'tables'")
        tables: Mapping[str, Any] = dump["tables"]
        for name, rows in tables.items():
            if not isinstance(rows, list):
                raise InvalidInput(f"tables[{name!r}] must be a list of rows")
        return await self.import_rows(
            dump, ((name, row) for name, rows in tables.items() for row in rows), user_id=user_id
        )

    async def import_rows(
        self,
        header: Mapping[str, Any],
        rows: Iterable[tuple[str, Mapping[str, Any]]]
        | AsyncIterable[tuple[str, Mapping[str, Any]]],
        *,
        user_id: str | FromDump | None = FROM_DUMP,
    ) -> dict[str, int]:
        """Streaming form of :meth:`import_`: ``rows`` as :meth:`export_stream` yields them.

        Rows are inserted in batches inside one transaction, so memory stays
        bounded and a failure part-way leaves the tenant empty. Parent rows must
        come before their children (export order).
        """
        if not isinstance(header, Mapping) or header.get("format") != EXPORT_FORMAT:
            raise InvalidInput(f"not a memstore export (format must be {EXPORT_FORMAT!r})")
        if isinstance(user_id, FromDump):
            dumped = header.get("user_id")
            if dumped is not None and not isinstance(dumped, str):
                raise InvalidInput("the dump's user_id must be a string or null")
            # A dump of the anonymous tenant made before it had a name records None.
            user = ANONYMOUS if dumped is None else storage_user_id(dumped)
        else:
            user = storage_user_id(user_id)
        # Embeddings made by another embedder are not comparable with ours:
        # recompute them; rows without one (older dumps) get one either way.
        source = header.get("embedder")
        recompute = isinstance(source, str) and source != embedder_identity(self.embedder)
        counts: dict[str, int] = {}
        dim = int(self.embedder.dim)
        # What was being inserted when the database refused a key (see below).
        inserting: list[str] = []
        try:
            await self._import_in_one_transaction(
                user, rows, counts, inserting, recompute=recompute, dim=dim
            )
        except Conflict as exc:
            if exc.constraint is None or not inserting:
                raise
            # The tenant was empty and is locked: the dump contradicts itself.
            raise InvalidInput(
                f"import: {inserting[0]} break a uniqueness rule ({exc}); nothing was "
                "imported, fix the dump",
                constraint=exc.constraint,
                table=exc.table,
            ) from exc
        return counts

    async def _import_in_one_transaction(
        self,
        user: TenantId,
        rows: Iterable[tuple[str, Mapping[str, Any]]]
        | AsyncIterable[tuple[str, Mapping[str, Any]]],
        counts: dict[str, int],
        inserting: list[str],
        *,
        recompute: bool,
        dim: int,
    ) -> None:
        async with self.db.write(user) as session:
            await self.embedder_guard.claim(session)
            repo = TenantRepository(session=session)
            await repo.lock_for_import(user)
            if await repo.has_rows(user):
                raise Conflict(
                    f"tenant {public_user_id(user)!r} already has data; import needs an empty "
                    "tenant (forget it first, or import under another user_id)"
                )
            current: str | None = None  # the batch's table, checked by tenant_table
            batch: list[Mapping[str, Any]] = []

            async def flush() -> None:
                if current is None or not batch:
                    return
                done = counts.get(current, 0)
                rows_in = await fill_embeddings(
                    self.embedder, current, batch, recompute=recompute, start=done
                )
                inserting[:] = [f"{current} rows {done}..{done + len(batch) - 1}"]
                counts[current] = done + await repo.insert_rows(
                    user, tenant_table(current), rows_in, start=done, dim=dim
                )
                inserting.clear()

            slots = _SlotCounters()
            async for name, row in _aiter(rows):
                if current is None or name != current or len(batch) >= IMPORT_BATCH:
                    await flush()
                    current, batch = tenant_table(name).name, []
                slots.see(name, counts.get(name, 0) + len(batch), row)
                batch.append(row)
            await flush()
            for name in counts:
                await repo.advance_sequences(tenant_table(name))
            # Dumps without (or with stale) turn counters: move them past every turn.
            await EpisodeRepository(session=session).resync_turn_counters(user)
            # A restored log is a new log to its readers (docs/threads.md).
            await ChangeLogRepository(session=session).new_epoch(user)


class _SlotCounters:
    """A thread's ``next_slot_index`` must lie past its slots, or the next append
    would collide with an imported slot. Threads precede their slots in a dump."""

    def __init__(self) -> None:
        self._threads: dict[Any, tuple[int, Any]] = {}

    def see(self, table: str, index: int, row: Any) -> None:
        if not isinstance(row, Mapping):
            return  # refused with its position by the row checks
        if table == "threads":
            self._threads[row.get("thread_id")] = (index, row.get("next_slot_index"))
        elif table == "slots" and row.get("thread_id") in self._threads:
            thread_index, next_slot = self._threads[row.get("thread_id")]
            slot = row.get("slot_index")
            if (
                isinstance(slot, int)
                and isinstance(next_slot, int)
                and not isinstance(next_slot, bool)
                and slot >= next_slot
            ):
                raise InvalidImportRow(
                    "threads",
                    thread_index,
                    "next_slot_index",
                    f"is {next_slot} but slots[{index}] has slot_index {slot}; it must be "
                    "greater than every slot_index of the thread",
                )


async def _aiter(items: Iterable[Any] | AsyncIterable[Any]) -> AsyncIterator[Any]:
    if isinstance(items, AsyncIterable):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item
