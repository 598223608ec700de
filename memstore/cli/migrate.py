from __future__ import annotations

import argparse
import asyncio
from typing import Any

from memstore.db.engine import create_engine, resolve_url
from memstore.schema.migrate import current_revision, downgrade, head_revision, upgrade


def register(subparsers: Any) -> None:
    migrate = subparsers.add_parser(
        "migrate",
        help="upgrade the database schema (same as `alembic upgrade head`)",
        description="Create or upgrade the memstore schema (a SQLite file is created if "
        "missing), or with --downgrade go back to --revision. Prints the revision the "
        "database is at afterwards.",
    )
    migrate.add_argument("--url", help="database URL (default: $MEMSTORE_URL or ./memstore.db)")
    migrate.add_argument("--revision", default="head", help="target revision (default: head)")
    migrate.add_argument(
        "--downgrade", action="store_true", help="downgrade to --revision instead of upgrading"
    )
    migrate.set_defaults(handler=run)


async def _migrate(args: argparse.Namespace) -> str | None:
    url = resolve_url(args.url)
    if args.downgrade:
        await downgrade(url, args.revision)
    else:
        await upgrade(url, args.revision)
    engine = create_engine(url)
    try:
        return await current_revision(engine)
    finally:
        await engine.dispose()


def run(args: argparse.Namespace) -> int:
    revision = asyncio.run(_migrate(args))
    print(f"schema at revision {revision} (code head {head_revision()})")
    return 0
