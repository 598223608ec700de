"""``--user-id``: the one spelling of the tenant option in every command."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_user_argument"]


def add_user_argument(container: Any, *, help: str, default: str | None = None) -> None:
    """Add ``--user-id ID`` (dest ``user_id``) to a parser or mutually exclusive group.

    ``--user``, which consolidate, export and import once took, still works but is
    not shown: scripts written for it keep running.
    """
    container.add_argument("--user-id", metavar="ID", default=default, help=help)
    container.add_argument("--user", dest="user_id", default=default, help=argparse.SUPPRESS)
