"""The one exception tree of memstore.

Callers catch :class:`MemstoreError` (or a subclass); driver exceptions never
escape the repository boundary untranslated.
"""

from __future__ import annotations

import asyncio

__all__ = [
    "ConfigurationError",
    "Conflict",
    "DatabaseError",
    "DimensionMismatch",
    "EmbedderError",
    "EmbedderFormsDropped",
    "EmbedderMismatch",
    "EmbedderUnavailable",
    "InvalidImportRow",
    "InvalidInput",
    "LimitExceeded",
    "MemstoreError",
    "NotFound",
    "PermissionDenied",
    "SchemaOutOfDate",
    "TenantRequired",
    "Unavailable",
    "Unsupported",
    "WrongThread",
]


class MemstoreError(Exception):
    """Base class of every error memstore raises on purpose."""


class _RuleError(MemstoreError):
    """An error that may name the database rule behind it (``constraint`` on ``table``)."""

    def __init__(
        self, *args: object, constraint: str | None = None, table: str | None = None
    ) -> None:
        super().__init__(*args)
        self.constraint = constraint
        self.table = table


class InvalidInput(_RuleError, ValueError):
    """The caller passed something memstore refuses to store; nothing was written.

    When the database itself refused the value (a CHECK or NOT NULL constraint),
    ``constraint`` and ``table`` name the rule; otherwise they are None.
    """


class InvalidImportRow(InvalidInput):
    """A row of an import fails the write API's validation; nothing was imported.

    ``table``, ``row`` (its position among that table's rows, from 0) and
    ``column`` (None for the row as a whole) say where; ``cause`` says why.
    """

    def __init__(self, table: str, row: int, column: str | None, cause: str) -> None:
        where = f"{table}[{row}]" + (f".{column}" if column else "")
        super().__init__(f"import: {where}: {cause}; nothing was imported, fix the dump")
        self.table = table
        self.row = row
        self.column = column
        self.cause = cause


class TenantRequired(InvalidInput):
    """A tenant-scoped call named no tenant; nothing was read or written.

    ``operation`` names the call when known. Name the tenant: pass ``user_id=...``,
    or work through ``store.tenant(...)``; the shared anonymous tenant is
    ``user_id=memstore.ANONYMOUS``.
    """

    def __init__(self, operation: str | None = None) -> None:
        where = f"{operation}: " if operation else ""
        super().__init__(
            f"{where}no tenant named: pass user_id=..., or use store.tenant(...); "
            "for the shared anonymous tenant pass user_id=memstore.ANONYMOUS"
        )
        self.operation = operation


class NotFound(MemstoreError, LookupError):
    """The addressed row does not exist for this tenant."""


class Conflict(_RuleError):
    """A concurrent writer changed the row first, or a uniqueness rule was violated.

    For a violated constraint, ``constraint`` and ``table`` name it (e.g.
    ``uq_episodes_session_turn`` on ``episodes``); for a serialisation failure or
    a deadlock they are None.
    """


class LimitExceeded(InvalidInput):
    """A configured size or count limit would be exceeded; nothing was written."""


class DimensionMismatch(InvalidInput):
    """An embedding's dimension differs from the one recorded for the store."""


class EmbedderMismatch(MemstoreError):
    """The store's embedder is not the one that made the database's embeddings.

    Vectors of two embedders (even of the same width) are not comparable, so
    mixing them would rank nonsense first. ``recorded`` and ``current`` are the
    two embedder identities.
    """

    def __init__(self, recorded: str, current: str, forms: str = "") -> None:
        self.recorded = recorded
        self.current = current
        # The options that give an embedder the recorded query and document forms.
        self.forms = forms
        keep = f" {forms}" if forms else ""
        super().__init__(
            f"this database's embeddings were made by embedder {recorded!r}, but the store "
            f"was opened with {current!r}, whose vectors are not comparable with them. "
            f"Open it with the recorded embedder{f' (its forms: {forms})' if forms else ''}, "
            f"or switch the database over with `memstore reembed --embedder ...{keep}` "
            f"(re-embeds every row and records the new embedder"
            f"{'; --drop-forms records one without forms' if forms else ''}); "
            f"`MemoryStore.open(..., allow_embedder_change=True)` opens it anyway"
        )


class EmbedderFormsDropped(MemstoreError):
    """Re-embedding would record an embedder without the query and document forms of the
    database's embedder: applications opening it with those forms would be refused.

    ``recorded`` and ``current`` are the two embedder identities; ``forms`` the
    command-line options that keep the recorded forms. Nothing was changed.
    """

    def __init__(self, recorded: str, current: str, forms: str) -> None:
        self.recorded = recorded
        self.current = current
        self.forms = forms
        super().__init__(
            f"this database's embedder {recorded!r} embeds queries and stored texts in "
            f"their forms, but {current!r} has none: re-embedding with it would drop them "
            f"and lock out every store opened with the forms. Pass {forms} to keep them, "
            f"or --drop-forms (reembed(..., drop_forms=True)) to drop them; nothing was changed"
        )


class EmbedderError(MemstoreError):
    """The embedder failed (an embeddings endpoint refused the request, rejected the key,
    or answered in another shape); nothing was written."""


class EmbedderUnavailable(EmbedderError):
    """The embeddings endpoint could not be reached or kept failing (connection, timeout,
    429, 5xx) after its client's retries; nothing was written and the call may be retried."""


class SchemaOutOfDate(MemstoreError):
    """The database schema is older than this version of memstore expects."""


class DatabaseError(MemstoreError):
    """The database refused a statement for a reason no other class names (an operator's
    trigger or rule, say); the message carries the database's own words and ``sqlstate``
    its code (None on SQLite). Whether a retry helps depends on that reason."""

    def __init__(self, message: str, *, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class Unavailable(MemstoreError):
    """The database could not be reached; the call may be retried."""


class Unsupported(MemstoreError):
    """The operation cannot run the way the store is used, by its nature; nothing was done.

    E.g. a live feed (``changes()``, ``threads.wait`` / ``follow``) on a store
    bound to the application's transaction (``store.bind``), which would see its
    own uncommitted rows as changes and hold the transaction open while it
    sleeps. ``operation`` names the refused operation; the message says what to
    call instead.
    """

    def __init__(self, message: str, *, operation: str) -> None:
        super().__init__(message)
        self.operation = operation


class PermissionDenied(MemstoreError):
    """The database refused the operation: privileges or a row-level security policy
    (e.g. a store without ``rls=True`` writing to tables that have it enabled)."""


class ConfigurationError(MemstoreError):
    """The store is configured wrongly (bad URL, unsupported backend, missing database
    or role, missing directory): retrying will not help, fixing the setting will.

    ``setting`` names what to fix (e.g. ``"url"``); ``url`` is the offending URL with
    any password hidden, when there is one.
    """

    def __init__(self, message: str, *, setting: str = "url", url: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting
        self.url = url


class WrongThread(MemstoreError, asyncio.InvalidStateError):
    """A store was used where it cannot run: a synchronous adapter called on the
    store's own event loop, or while that loop is not running.

    A store's connections belong to the event loop it was opened on. Also an
    ``asyncio.InvalidStateError``, which LangGraph's own async stores raise for
    the same misuse.
    """
