"""Spreading the database over a cluster (``memstore citus``), by the backend that can.

The plan, the cluster's status and applying the plan are the distributing backend's
(:attr:`~memstore.dialects.Dialect.distributable`); each says itself what it makes of
a URL of another backend.
"""

from __future__ import annotations

from typing import Any

from memstore.dialects import Dialect, dialects
from memstore.errors import Unsupported

__all__ = ["apply_citus", "citus_plan", "citus_status"]


def _distributing() -> Dialect:
    for dialect in dialects():
        if dialect.distributable:
            return dialect
    raise Unsupported(
        "no backend memstore runs on distributes a database over a cluster",
        operation="citus",
    )


def citus_plan() -> Any:
    """The statements that distribute memstore's schema (``render()`` prints them)."""
    return _distributing().distribution_plan()


async def citus_status(url: str | None = None) -> Any:
    """How the database at ``url`` is distributed (``render()`` prints it)."""
    return await _distributing().distribution_status(url)


async def apply_citus(url: str | None = None) -> list[str]:
    """Distribute what is not yet distributed at ``url``; the statements that ran."""
    return await _distributing().distribute(url)
