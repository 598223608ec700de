"""What every scenario receives: parsed sizes, the databases and feature flags."""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass, field
from typing import Any

from .memapi import migrate
from .servers import Databases, sqlalchemy_url

__all__ = ["Context", "Target"]


@dataclass
class Target:
    """A fresh, migrated database: SQLAlchemy URL for memstore, raw address for baselines."""

    backend: str
    url: str
    raw: str  # sqlite URL or libpq DSN


@dataclass
class Context:
    args: argparse.Namespace
    dbs: Databases
    features: dict[str, bool]
    backends: list[str] = field(default_factory=lambda: ["sqlite", "postgres"])
    log: Any = print

    def fresh(self, backend: str, name: str, *, migrated: bool = True) -> Target:
        if backend == "sqlite":
            url = self.dbs.sqlite_url(name)
            target = Target(backend, url, url)
        else:
            dsn = self.dbs.pg_dsn(name)
            target = Target(backend, sqlalchemy_url(dsn), dsn)
        if migrated:
            asyncio.run(migrate(target.url))
        return target
