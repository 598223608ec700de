"""upgrade the database schema (same as `alembic upgrade head`)

Create or upgrade the memstore schema (a SQLite file is created if missing), or with
--downgrade go back to --revision. Prints the revision the database is at afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from memstore.cli.command import add_command, add_flag
from memstore.schema.database import migrate
from memstore.schema.migrate import head_revision


def register(subparsers: Any) -> None:
    parser = add_command(subparsers, "migrate", run, __doc__)
    parser.add_argument("--revision", default="head", help="target revision (default: head)")
    add_flag(parser, "--downgrade", "downgrade to --revision instead of upgrading")


def run(args: argparse.Namespace) -> int:
    revision = asyncio.run(migrate(args.url, args.revision, down=args.downgrade))
    print(f"schema at revision {revision} (code head {head_revision()})")
    return 0
