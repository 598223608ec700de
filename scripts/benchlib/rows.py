"""Turn workload chunks into memstore ``Episode`` objects and into raw table rows.

Raw rows are built from the live SQLAlchemy table, so a column added by a later
migration (an embedding, a consolidation marker) is filled or left to its
default the same way for both paths.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from typing import Any

import numpy as np

from .data import Chunk, Workload, episode_id, tenant_name

__all__ = [
    "Turns",
    "episode_text",
    "episodes_of",
    "has_episode_embedding",
    "raw_columns",
    "raw_records",
    "row_values",
]


def has_episode_embedding() -> bool:
    from memstore.models import EpisodeRow

    return "embedding" in EpisodeRow.__table__.c


def _episode_field_embedding() -> bool:
    from memstore import Episode

    return "embedding" in {f.name for f in dataclasses.fields(Episode)}


def episode_text(input_: str, output: str) -> str:
    """The text memstore embeds for an episode (so the lookup embedder can find it)."""
    return "\n".join(p for p in (input_, output) if p)


def search_text(episode: Any) -> str | None:
    """memstore's keyword document for an episode; None only before recall existed."""
    try:
        from memstore.core.documents import episode_search_text
    except ImportError:
        try:
            # Older memstore checkouts (bench.py measures them too) had it here.
            from memstore.store import episode_search_text  # type: ignore[attr-defined, no-redef]
        except ImportError:
            from memstore.models import EpisodeRow

            if "search_text" in EpisodeRow.__table__.c:
                raise RuntimeError("cannot find memstore's episode_search_text") from None
            return None
    return str(episode_search_text(episode))


class Turns:
    """Per-(tenant, session) turn numbers in insertion order, as memstore assigns them."""

    def __init__(self) -> None:
        self.last: dict[tuple[str, str], int] = {}

    def next(self, user: str, session: str) -> int:
        n = self.last.get((user, session), -1) + 1
        self.last[(user, session)] = n
        return n


def episodes_of(
    work: Workload,
    chunk: Chunk,
    lo: int = 0,
    hi: int | None = None,
    *,
    embedder: Any = None,
    tenant: str | None = None,
) -> list[Any]:
    """Episodes of ``chunk[lo:hi]``; their vectors are registered with ``embedder``
    (memstore embeds episode texts itself) or passed on the episode if it has a field."""
    from memstore import Episode

    field = _episode_field_embedding()
    hi = len(chunk) if hi is None else hi
    out = []
    for i in range(lo, hi):
        extra: dict[str, Any] = {}
        if field:
            extra["embedding"] = chunk.vectors[i]
        elif embedder is not None:
            embedder.register(episode_text(chunk.inputs[i], chunk.outputs[i]), chunk.vectors[i])
        out.append(
            Episode(
                id=episode_id(work.seed, chunk.start + i),
                user_id=tenant or tenant_name(int(chunk.tenants[i])),
                session_id=f"s{(chunk.start + i) // 50}",
                input=chunk.inputs[i],
                output=chunk.outputs[i],
                occurred_at=chunk.occurred[i],
                **extra,
            )
        )
    return out


def row_values(
    work: Workload, chunk: Chunk, i: int, now: datetime, turns: Turns, tenant: str | None = None
) -> dict[str, Any]:
    """Logical column values of one episode row (before any dialect conversion)."""
    from memstore import Episode

    user = tenant or tenant_name(int(chunk.tenants[i]))
    session = f"s{(chunk.start + i) // 50}"
    episode = Episode(
        session_id=session,
        input=chunk.inputs[i],
        output=chunk.outputs[i],
        occurred_at=chunk.occurred[i],
    )
    return {
        "user_id": user,
        "id": episode_id(work.seed, chunk.start + i),
        "session_id": session,
        "search_text": search_text(episode),
        "turn": turns.next(user, session),
        "input": chunk.inputs[i],
        "output": chunk.outputs[i],
        "tool_calls": [],
        "metadata": {},
        "occurred_at": chunk.occurred[i],
        "created_at": now,
        "embedding": chunk.vectors[i],
    }


def raw_columns(table: Any, known: set[str]) -> list[Any]:
    """Columns a raw insert must fill: known ones; others must have a default."""
    cols = []
    for col in table.columns:
        if col.computed is not None:
            continue
        if col.name in known:
            cols.append(col)
        elif not col.nullable and col.server_default is None:
            raise RuntimeError(f"raw insert cannot fill {table.name}.{col.name}")
    return cols


def _convert(col: Any, value: Any, dialect: Any) -> Any:
    if dialect.name == "sqlite":
        proc = col.type.bind_processor(dialect)
        if isinstance(value, np.ndarray) and proc is None:
            return value.astype(np.float32).tobytes()
        return proc(value) if proc is not None else value
    # asyncpg COPY: JSON as text, vectors as numpy (pgvector codec), the rest as is.
    impl = getattr(col.type, "impl", col.type)
    if impl.__class__.__name__ in ("JSON", "JSONB") or "JSON" in type(col.type).__name__:
        return json.dumps(value)
    if hasattr(col.type, "process_bind_param") and not isinstance(value, np.ndarray):
        return col.type.process_bind_param(value, dialect)
    return value


def raw_records(
    table: Any, dialect: Any, values: list[dict[str, Any]]
) -> tuple[list[str], list[tuple[Any, ...]]]:
    cols = raw_columns(table, set(values[0]) if values else set())
    names = [c.name for c in cols]
    records = [tuple(_convert(c, v[c.name], dialect) for c in cols) for v in values]
    return names, records
