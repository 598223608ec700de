"""The SQL of the search indexes, defined once.

Migrations create these indexes (``migrations/versions/0003_recall.py``, and
0009 for the stored episode tsvector) and set the vector columns' storage (0010); recall
queries must repeat the very same expressions or Postgres will not use the
index. The migration keeps its own frozen copy (a revision must not change
meaning when this code changes); ``tests/test_search_expressions.py`` checks
that a migrated database holds exactly what is defined here, and that the
recall statements use these definitions.
"""

from __future__ import annotations

__all__ = [
    "FTS5_TABLE_ARGS",
    "FULL_TEXT_CONFIG",
    "FULL_TEXT_INDEXES",
    "STORED_TSVECTORS",
    "VECTOR_INDEX",
    "VECTOR_STORAGE",
    "VECTOR_TABLES",
    "computed_tsvector",
    "document",
    "tsvector",
]

# Text search configuration: no stemming, no stop words (the same for every language).
FULL_TEXT_CONFIG = "simple"

# What each table's full-text index holds, over the row's columns; ``{r}`` is a
# prefix for them ("" in an index, "new." in a trigger, "facts." in a query).
_DOCUMENTS = {
    "episodes": "coalesce({r}search_text, '')",
    "facts": "{r}subject || ' ' || replace({r}predicate, '_', ' ') || ' ' || {r}object",
}

# Postgres: table -> its stored generated tsvector column. Reading a stored
# vector is what makes keyword scoring cheap: recomputing ``to_tsvector`` for
# each matching row cost more than the rest of the recall statement (measured
# in docs/bench-notes.md). The name ends in ``_fts`` because the models do
# not declare it (memstore.schema.migrate.MIGRATION_ONLY).
STORED_TSVECTORS = {"episodes": "search_fts"}

# Postgres: table -> name of its GIN full-text index.
FULL_TEXT_INDEXES = {"episodes": "ix_episodes_search_fts", "facts": "ix_facts_search_fts"}

# Postgres: (index name, table, access method and operator class) of the ANN index.
VECTOR_INDEX = ("ix_episodes_embedding_hnsw", "episodes", "hnsw (embedding vector_cosine_ops)")

# Postgres: the tables with an ``embedding vector(n)`` column, and how it is stored.
# pgvector's default, EXTERNAL, moves the vector out of line as soon as a row
# passes ~2 kB, which a 384-d vector (1.5 kB) and a turn of text do: every
# exact-scan distance then costs a TOAST index lookup (a 10,000-row tenant's
# scan went from 130 to 30 ms with MAIN, docs/bench-notes.md). MAIN keeps it in
# the row and pushes the text columns out first. ALTER COLUMN ... TYPE (memstore
# reembed) resets a column to its type's default, so it is re-applied there.
VECTOR_TABLES = ("episodes", "facts")
VECTOR_STORAGE = "MAIN"

# SQLite: the FTS5 virtual tables' declaration (``CREATE VIRTUAL TABLE x USING fts5(...)``).
FTS5_TABLE_ARGS = "text, tokenize = 'unicode61'"


def document(table: str, prefix: str = "") -> str:
    """The full-text document of ``table``'s rows as SQL, columns prefixed by ``prefix``."""
    return _DOCUMENTS[table].format(r=prefix)


def computed_tsvector(table: str, prefix: str = "") -> str:
    """Postgres: the ``to_tsvector`` expression of ``table``'s document."""
    return f"to_tsvector('{FULL_TEXT_CONFIG}', {document(table, prefix)})"


def tsvector(table: str, prefix: str = "") -> str:
    """Postgres: what ``table``'s GIN index holds (its stored column, else the expression)."""
    stored = STORED_TSVECTORS.get(table)
    return f"{prefix}{stored}" if stored else computed_tsvector(table, prefix)
