"""A Postgres engine: asyncpg arguments from the URL, a bounded pool, connections set up."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from memstore.backends.postgresql.connections import (
    configure_postgres,
    connect_postgres,
    remember_connect_args,
)
from memstore.backends.postgresql.url import postgres_connect_args
from memstore.db import jsontext
from memstore.db.engine import PG_CONNECT_TIMEOUT_S
from memstore.db.pool import KeepingPool
from memstore.dialects import EngineOptions

__all__ = ["create_postgres_engine"]


def create_postgres_engine(url: URL, options: EngineOptions) -> AsyncEngine:
    kwargs = dict(options.engine_kwargs)
    if "pool" not in kwargs and "poolclass" not in kwargs:
        # Up to 15 at once; 5 kept, the other 10 while the store is busy (memstore.db.pool).
        # A pool of the caller's own takes its own arguments.
        kwargs["poolclass"] = KeepingPool
        kwargs.setdefault("pool_size", 5)
        kwargs.setdefault("max_overflow", 10)
    # No pool_pre_ping: the checkout hook's RESET is already a round trip
    # that fails on a dead connection, and the pool then replaces it.
    kwargs.setdefault("pool_recycle", 1800)
    kwargs.setdefault("json_serializer", jsontext.dumps)
    parsed, from_url = postgres_connect_args(url)
    given = dict(kwargs.pop("connect_args", None) or {})
    # asyncpg prepares every statement; after five runs Postgres may switch
    # to a generic plan that ignores the tenant's size, which made recall on
    # a 400-row tenant 2x slower (docs/bench-notes.md). Planning per call
    # costs well under a millisecond.
    server_settings = {
        "plan_cache_mode": "force_custom_plan",
        **from_url.get("server_settings", {}),
        **(given.get("server_settings") or {}),
    }
    connect_args: dict[str, Any] = {
        "timeout": PG_CONNECT_TIMEOUT_S,
        "command_timeout": options.command_timeout,
        "async_creator_fn": connect_postgres,
        **from_url,
        **given,
        "server_settings": server_settings,
    }
    if options.connect_timeout is not None and "timeout" not in given:
        connect_args["timeout"] = options.connect_timeout
    engine = create_async_engine(parsed, connect_args=connect_args, **kwargs)
    configure_postgres(engine)
    remember_connect_args(engine, connect_args)
    return engine
