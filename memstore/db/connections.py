"""Execution options and settings every backend's connections honour (memstore/backends/)."""

from __future__ import annotations

__all__ = ["FOREIGN_USE", "ONE_STATEMENT", "OWN_CONNECTION", "READ_ONLY", "TENANT_SETTING"]

# The setting the row-level security policies compare user_id with
# (memstore.schema.rls); reset whenever a pooled connection is checked out.
TENANT_SETTING = "memstore.user_id"
# Execution option: a transaction that will not write may start with a plain
# BEGIN on SQLite, so readers do not queue behind the write lock.
READ_ONLY = "memstore_read_only"
# Execution option: the connection runs a read that is one statement, atomic on
# its own, so SQLite starts no explicit transaction for it (no BEGIN, no hops).
ONE_STATEMENT = "memstore_one_statement"
# Execution option of the unit of work's own connections (memstore.db.unit):
# their statements never leave a session-level tenant setting behind, so the
# next checkout of the same server connection need not RESET it.
OWN_CONNECTION = "memstore_own_connection"
# Connection-record flag (``PoolProxiedConnection.info``): True while a checkout
# is not known to be the unit of work's own; the Postgres checkout hook then
# RESETs the tenant setting at the next checkout. Set False for own checkouts.
FOREIGN_USE = "memstore_foreign_use"
