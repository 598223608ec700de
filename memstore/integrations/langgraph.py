"""A LangGraph ``BaseStore`` backed by memstore (extra ``memstore[langgraph]``).

Tenancy: by default the first namespace label is the memstore ``user_id`` and
the rest is the namespace inside that tenant, so ``("alice", "memories")`` is
alice's ``memories``. Every operation touches exactly one tenant; an operation
that does not name one (an empty search prefix, a namespace listing without a
concrete first label) is refused. ``MemstoreStore(store, user_id="alice")``
instead pins every namespace to one tenant (then namespaces are LangGraph's
own and every operation works, as in LangGraph's stores).

Semantic search (``index={"dims": ..., "fields": [...]}``) embeds with the
store's own embedder and scores every live item under the prefix exactly
(cosine, max over an item's indexed fields), so a small namespace inside a
large tenant still gets its ``limit`` results: no approximate index whose
post-filter can starve it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    tokenize_path,
)

from memstore.core.langgraph_input import (
    MAX_KEY_BYTES,
    SEPARATOR,
    check_key,
    check_labels,
    check_namespace_length,
    check_ttl,
)
from memstore.core.tenancy import TenantId
from memstore.core.validation import check_json, check_text
from memstore.errors import DimensionMismatch, InvalidInput, WrongThread
from memstore.integrations.langgraph_filters import check_filter, matches_filter, matches_path
from memstore.store import MemoryStore

__all__ = ["MAX_KEY_BYTES", "MemstoreStore", "WrongThread"]

_MAX_LIMIT = 10_000


def _check_count(name: str, value: object, minimum: int) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not (minimum <= value <= _MAX_LIMIT)
    ):
        raise InvalidInput(f"{name} must be an integer between {minimum} and {_MAX_LIMIT}")
    return value


class MemstoreStore(BaseStore):
    """LangGraph's long-term memory store on memstore (SQLite or Postgres)."""

    supports_ttl = True

    def __init__(
        self,
        store: MemoryStore,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        user_id: str | None = None,
    ) -> None:
        """``user_id`` pins every namespace to that tenant; else the first label is it."""
        self._store = store
        self._items = store.langgraph_items()
        self._pinned = None if user_id is None else self._tenant(user_id)
        self.index_config = self._check_index(index)
        self.ttl_config = self._check_ttl_config(ttl)

    def _check_index(self, index: IndexConfig | None) -> IndexConfig | None:
        if index is None:
            return None
        if not isinstance(index, Mapping):
            raise InvalidInput("index must be a dict like {'dims': 384, 'fields': ['text']}")
        embedder: object = self._store.embedder
        given: object = index.get("embed")
        # The store's own embedder is accepted, so another store's index_config
        # can be passed on as LangGraph code does with its stores' configs.
        if given is not None and given is not embedder:
            raise InvalidInput(
                "index['embed'] is not supported: the store embeds with its own embedder "
                "(MemoryStore.open(..., embedder=...)); drop 'embed'"
            )
        dims = index.get("dims", self._store.embedder.dim)
        if dims != self._store.embedder.dim:
            raise DimensionMismatch(
                f"index dims={dims!r} but the store's embedder produces "
                f"{self._store.embedder.dim}-dimensional vectors; use dims="
                f"{self._store.embedder.dim} or open the store with another embedder"
            )
        fields = index.get("fields") or ["$"]
        if not isinstance(fields, list) or not all(isinstance(f, str) and f for f in fields):
            raise InvalidInput("index['fields'] must be a list of JSON paths like ['text']")
        # What LangGraph's stores carry: the caller's dims and fields, "embed"
        # (what embeds the fields and queries: here the store's embedder) and
        # the fields' parsed paths.
        config: dict[str, Any] = {
            "dims": int(dims),
            "embed": embedder,
            "fields": list(fields),
            "__tokenized_fields": [(field, tokenize_path(field)) for field in fields],
        }
        return config  # type: ignore[return-value]

    @staticmethod
    def _check_ttl_config(ttl: TTLConfig | None) -> TTLConfig | None:
        if ttl is None:
            return None
        if not isinstance(ttl, Mapping):
            raise InvalidInput("ttl must be a dict like {'default_ttl': 60}")
        unknown = set(ttl) - {
            "default_ttl",
            "refresh_on_read",
            "sweep_interval_minutes",
            "omit_expired",
        }
        if unknown:
            raise InvalidInput(f"unknown ttl option(s) {sorted(unknown)}")
        if ttl.get("omit_expired", True) is not True:
            raise InvalidInput(
                "ttl['omit_expired'] must be True: memstore never returns expired items"
            )
        if ttl.get("sweep_interval_minutes") is not None:
            raise InvalidInput(
                "ttl['sweep_interval_minutes'] is not supported: there is no background "
                "sweeper; call MemstoreStore.sweep_ttl(user_id=...) from your scheduler"
            )
        check_ttl(ttl.get("default_ttl"))
        if not isinstance(ttl.get("refresh_on_read", True), bool):
            raise InvalidInput("ttl['refresh_on_read'] must be a bool")
        return dict(ttl)  # type: ignore[return-value]

    @classmethod
    @asynccontextmanager
    async def from_url(
        cls,
        url: str | None = None,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        user_id: str | None = None,
        **open_options: Any,
    ) -> AsyncIterator[MemstoreStore]:
        """Open a :class:`MemoryStore` on ``url`` (options as ``MemoryStore.open``) and wrap it."""
        async with MemoryStore.open(url, **open_options) as store:
            yield cls(store, index=index, ttl=ttl, user_id=user_id)

    # ---- tenancy -----------------------------------------------------------------

    def _tenant(self, label: str) -> TenantId:
        """The stored tenant a namespace label (or the pinned user_id) names, via the
        store's handle: a label names a tenant exactly as ``store.tenant(label)`` does."""
        return TenantId(self._store.tenant(label).user_id)

    def _split(self, namespace: tuple[str, ...]) -> tuple[TenantId, tuple[str, ...]]:
        """(stored user_id, namespace inside the tenant)."""
        if self._pinned is not None:
            return self._pinned, check_namespace_length(namespace)
        if not namespace:
            raise InvalidInput(
                "the first namespace label is the tenant (memstore user_id); an empty "
                "namespace names no tenant. Pass e.g. ('alice', ...) or pin one with "
                "MemstoreStore(store, user_id=...)"
            )
        return self._tenant(namespace[0]), check_namespace_length(namespace[1:])

    def _full(self, user: str, rest: str) -> tuple[str, ...]:
        labels = tuple(rest.split(SEPARATOR)) if rest else ()
        return labels if self._pinned is not None else (user, *labels)

    # ---- batch -----------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``abatch`` on the store's event loop from another thread (sync graphs).

        Works from the first call: the loop is the one the :class:`MemoryStore` was
        opened on (its connections belong to it), which must be running, e.g. an
        async app serving sync nodes from worker threads, or ``SyncMemoryStore``.
        """
        loop = self._store.loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None and running is loop:
            raise WrongThread(
                "MemstoreStore.batch() was called on the store's own event loop and would "
                "deadlock; use the async methods (aget/aput/asearch/abatch) there"
            )
        if loop is None or loop.is_closed() or not loop.is_running():
            raise WrongThread(
                "MemstoreStore's synchronous methods run on the event loop the MemoryStore "
                "was opened on, and that loop is not running; call them while it runs "
                "(from another thread), open the store with SyncMemoryStore and wrap "
                "its async_store, or use the async methods"
            )
        return asyncio.run_coroutine_threadsafe(self.abatch(ops), loop).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        # Validate everything before anything is written: bad input writes nothing.
        for op in ops:
            self._check_op(op)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op))
            elif isinstance(op, PutOp):
                await self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            else:
                results.append(await self._list_namespaces(op))
        return results

    def _check_op(self, op: object) -> None:
        if isinstance(op, GetOp):
            self._split(check_labels("namespace", op.namespace))
            check_key(op.key)
        elif isinstance(op, PutOp):
            namespace = check_labels("namespace", op.namespace)
            if not namespace:
                raise InvalidInput("namespace cannot be empty")
            if namespace[0] == "langgraph":
                raise InvalidInput("the root label 'langgraph' is reserved by LangGraph")
            self._split(namespace)
            check_key(op.key)
            if op.value is not None:
                if not isinstance(op.value, Mapping):
                    raise InvalidInput(f"value must be a dict, got {type(op.value).__name__}")
                check_json("value", dict(op.value))
            if not (
                op.index is None
                or op.index is False
                or (isinstance(op.index, list) and all(isinstance(f, str) and f for f in op.index))
            ):
                raise InvalidInput("index must be None, False or a list of JSON paths")
            check_ttl(op.ttl)
        elif isinstance(op, SearchOp):
            self._split(check_labels("namespace_prefix", op.namespace_prefix))
            check_filter(op.filter)
            _check_count("limit", op.limit, 0)
            _check_count("offset", op.offset, 0)
            if op.query is not None:
                check_text("query", op.query, allow_empty=True)
        elif isinstance(op, ListNamespacesOp):
            _check_count("limit", op.limit, 0)
            _check_count("offset", op.offset, 0)
            if op.max_depth is not None:
                _check_count("max_depth", op.max_depth, 1)
            for condition in op.match_conditions or ():
                if condition.match_type not in ("prefix", "suffix"):
                    raise InvalidInput(f"unknown match_type {condition.match_type!r}")
                check_labels("match path", condition.path, wildcard=True)
            self._listing_tenant(op)
        else:
            raise InvalidInput(f"unknown store operation {type(op).__name__}")

    # ---- operations ----------------------------------------------------------------

    async def _get(self, op: GetOp) -> Item | None:
        user, rest = self._split(op.namespace)
        row = await self._items.get(
            user, SEPARATOR.join(rest), op.key, refresh_ttl=bool(op.refresh_ttl)
        )
        if row is None:
            return None
        return Item(
            value=row.value,
            key=row.key,
            namespace=self._full(user, row.namespace),
            created_at=row.created_at,
            updated_at=row.updated_at,
        )

    async def _put(self, op: PutOp) -> None:
        user, rest = self._split(op.namespace)
        namespace = SEPARATOR.join(rest)
        if op.value is None:
            await self._items.delete(user, namespace, op.key)
            return
        fields: list[str] | None = None
        if self.index_config is not None and op.index is not False:
            default = self.index_config.get("fields") or ["$"]
            fields = op.index if isinstance(op.index, list) else default
        await self._items.put(
            user,
            namespace,
            op.key,
            dict(op.value),
            index_fields=fields,
            ttl_minutes=check_ttl(op.ttl),
        )

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        user, rest = self._split(op.namespace_prefix)
        filter_ = check_filter(op.filter)
        # An empty query ranks nothing (score None), as in LangGraph's own stores.
        ranked = bool(op.query) and self.index_config is not None
        found = await self._items.search(
            user,
            SEPARATOR.join(rest),
            query=op.query if ranked else None,
            keep=(lambda value: matches_filter(value, filter_)) if filter_ else None,
            offset=op.offset,
            limit=op.limit,
            refresh_ttl=bool(op.refresh_ttl),
        )
        return [
            SearchItem(
                namespace=self._full(user, r.namespace),
                key=r.key,
                value=r.value,
                created_at=r.created_at,
                updated_at=r.updated_at,
                score=score,
            )
            for r, score in found
        ]

    def _listing_tenant(self, op: ListNamespacesOp) -> TenantId:
        if self._pinned is not None:
            return self._pinned
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix" and condition.path and condition.path[0] != "*":
                return self._tenant(condition.path[0])
        raise InvalidInput(
            "list_namespaces must name one tenant: pass prefix=('<user_id>', ...) "
            "(the first namespace label is the memstore user_id), or pin one with "
            "MemstoreStore(store, user_id=...)"
        )

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        user = self._listing_tenant(op)
        stored = await self._items.namespaces(user)
        found: set[tuple[str, ...]] = set()
        for rest in stored:
            namespace = self._full(user, rest)
            if not namespace:
                continue  # items at the tenant's root have no namespace below it
            if all(
                matches_path(namespace, c.path, c.match_type) for c in op.match_conditions or ()
            ):
                found.add(namespace[: op.max_depth] if op.max_depth else namespace)
        return sorted(found)[op.offset : op.offset + op.limit]

    async def sweep_ttl(self, user_id: str | None = None) -> int:
        """Delete one tenant's expired items now (the pinned tenant, else ``user_id``).

        Reads never return expired items whether or not this runs; it only frees
        space. One tenant per call, so every statement stays tenant-filtered.
        """
        if self._pinned is not None:
            if user_id is not None and self._tenant(user_id) != self._pinned:
                raise InvalidInput("this store is pinned to another tenant; omit user_id")
            user = self._pinned
        elif user_id is None:
            raise InvalidInput("sweep_ttl(user_id=...) must name the tenant to sweep")
        else:
            user = self._tenant(user_id)
        return await self._items.sweep(user)
