"""Tenant ids: how the API's ``user_id`` maps to the stored, never-NULL column."""

from __future__ import annotations

from typing import NewType

from memstore.core.validation import check_identifier
from memstore.errors import InvalidInput, TenantRequired

__all__ = [
    "ANONYMOUS",
    "RESERVED_PREFIX",
    "TenantId",
    "public_user_id",
    "speaker_name",
    "storage_user_id",
]

# A user_id as stored: validated by storage_user_id (or read back from a tenant
# column). The repositories take only this, so an unchecked str cannot reach SQL.
TenantId = NewType("TenantId", str)

# Storage keeps user_id NOT NULL so it can lead every key; this value is the
# shared anonymous tenant, which a caller asks for by name (``memstore.ANONYMOUS``).
# The whole ``__`` prefix is reserved so no real tenant can ever collide with it
# (or with a future reserved name).
RESERVED_PREFIX = "__"
ANONYMOUS = TenantId("__anonymous__")


def storage_user_id(user_id: str | None, *, operation: str | None = None) -> TenantId:
    """The stored tenant id of an API ``user_id``.

    None names no tenant: :class:`TenantRequired` (a forgotten ``user_id=`` must not
    fall into a tenant the caller did not name). :data:`ANONYMOUS` is the anonymous
    tenant; any other ``__`` name is reserved.
    """
    if user_id is None:
        raise TenantRequired(operation)
    if user_id == ANONYMOUS:
        return ANONYMOUS
    check_identifier("user_id", user_id)
    if user_id.startswith(RESERVED_PREFIX):
        raise InvalidInput(
            f"user_id may not start with {RESERVED_PREFIX!r} (reserved; the anonymous "
            "tenant is memstore.ANONYMOUS)"
        )
    return TenantId(user_id)


def public_user_id(stored: str) -> str:
    """The API's ``user_id`` of a stored one: the same string (:data:`ANONYMOUS` included)."""
    return stored


def speaker_name(user_id: str | None, anonymous: str) -> str:
    """How a tenant is named in the facts it states: its ``user_id``, or ``anonymous`` for
    the anonymous tenant (None too: an episode made before it had a name)."""
    return anonymous if user_id is None or user_id == ANONYMOUS else user_id
