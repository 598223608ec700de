"""Tenant ids: how the API's ``user_id`` maps to the stored, never-NULL column."""

from __future__ import annotations

from memstore.core.validation import check_identifier
from memstore.errors import InvalidInput

__all__ = ["ANONYMOUS", "RESERVED_PREFIX", "public_user_id", "storage_user_id"]

# Storage keeps user_id NOT NULL so it can lead every key; this value stands for
# the anonymous bucket. The whole ``__`` prefix is reserved so no real tenant can
# ever collide with it (or with a future reserved name).
RESERVED_PREFIX = "__"
ANONYMOUS = "__anonymous__"


def storage_user_id(user_id: str | None) -> str:
    if user_id is None:
        return ANONYMOUS
    check_identifier("user_id", user_id)
    if user_id.startswith(RESERVED_PREFIX):
        raise InvalidInput(f"user_id may not start with {RESERVED_PREFIX!r} (reserved)")
    return user_id


def public_user_id(stored: str) -> str | None:
    return None if stored == ANONYMOUS else stored
