"""SQLite's full-text index declaration, defined once (migration 0003 keeps a frozen copy)."""

from __future__ import annotations

__all__ = ["FTS5_TABLE_ARGS"]

# The FTS5 virtual tables' declaration (``CREATE VIRTUAL TABLE x USING fts5(...)``).
FTS5_TABLE_ARGS = "text, tokenize = 'unicode61'"
