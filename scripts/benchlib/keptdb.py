"""A recall database kept by ``bench.py --scenario recall --keep --workdir DIR``: its pgserver
started again for a measurement and stopped after, and the queries its workload asks."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .data import Workload
from .scen_recall import tenant_sizes

__all__ = ["kept_recall_database", "recall_queries"]


@contextmanager
def kept_recall_database(workdir: Path) -> Iterator[str]:
    """The asyncpg DSN of the kept Postgres recall database, its server running meanwhile."""
    from sqlalchemy.engine import make_url

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
    server = pgserver.get_server(workdir / "pgdata", cleanup_mode="stop")
    try:
        names = server.psql("SELECT datname FROM pg_database WHERE datname LIKE 'recall%';")
        database = next(ln.strip() for ln in names.splitlines() if ln.strip().startswith("recall"))
        yield make_url(server.get_uri()).set(database=database).render_as_string(False)
    finally:
        server.cleanup()


def recall_queries(rows: int, tenant: int, n: int, salt: int) -> list[tuple[str, Any]]:
    """``n`` of the workload's queries for ``tenant`` of a ``rows``-episode recall store."""
    big, mid, small = tenant_sizes(rows)
    tenants = 2 + max(1, (rows - big - mid) // small)
    work = Workload(rows, tenants, seed=21, leading=(big / rows, mid / rows))
    return work.queries(tenant, n, salt=salt)
