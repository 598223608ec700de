"""Tenant ids: how the API's ``user_id`` maps to the stored, never-NULL column."""

from __future__ import annotations

from typing import NewType

from memstore.core.validation import check_identifier
from memstore.errors import InvalidInput

__all__ = ["ANONYMOUS", "RESERVED_PREFIX", "TenantId", "public_user_id", "storage_user_id"]

# A user_id as stored: validated by storage_user_id (or read back from a tenant
# column). The repositories take only this, so an unchecked str cannot reach SQL.
TenantId = NewType("TenantId", str)

# Storage keeps user_id NOT NULL so it can lead every key; this value stands for
# the anonymous bucket. The whole ``__`` prefix is reserved so no real tenant can
# ever collide with it (or with a future reserved name).
RESERVED_PREFIX = "__"
ANONYMOUS = TenantId("__anonymous__")


def storage_user_id(user_id: str | None) -> TenantId:
    """The stored tenant id of an API ``user_id`` (None: the anonymous tenant), or InvalidInput."""
    if user_id is None:
        return ANONYMOUS
    check_identifier("user_id", user_id)
    if user_id.startswith(RESERVED_PREFIX):
        raise InvalidInput(f"user_id may not start with {RESERVED_PREFIX!r} (reserved)")
    return TenantId(user_id)


def public_user_id(stored: str) -> str | None:
    return None if stored == ANONYMOUS else stored
