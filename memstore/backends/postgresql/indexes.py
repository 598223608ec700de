"""Postgres's search indexes and text-search expressions, defined once.

Migrations create these indexes (``migrations/versions/0003_recall.py``, and 0009
for the stored episode tsvector) and set the vector columns' storage (0010); recall
queries must repeat the very same expressions or Postgres will not use the index
(``tests/test_search_expressions.py`` checks both).
"""

from __future__ import annotations

from collections.abc import Sequence

from memstore.core.lexical import is_prefix
from memstore.models.search import document

__all__ = [
    "FULL_TEXT_CONFIG",
    "FULL_TEXT_INDEXES",
    "STORED_TSVECTORS",
    "VECTOR_INDEX",
    "VECTOR_STORAGE",
    "computed_tsvector",
    "tsquery",
    "tsvector",
]

# Text search configuration: no stemming, no stop words (the same for every language).
FULL_TEXT_CONFIG = "simple"

# table -> its stored generated tsvector column. Reading a stored
# vector is what makes keyword scoring cheap: recomputing ``to_tsvector`` for
# each matching row cost more than the rest of the recall statement (measured
# in docs/bench-notes.md). The name ends in ``_fts`` because the models do
# not declare it (memstore.schema.migrate.MIGRATION_ONLY).
STORED_TSVECTORS = {"episodes": "search_fts"}

# table -> name of its GIN full-text index.
FULL_TEXT_INDEXES = {"episodes": "ix_episodes_search_fts", "facts": "ix_facts_search_fts"}

# (index name, table, access method and operator class) of the ANN index.
VECTOR_INDEX = ("ix_episodes_embedding_hnsw", "episodes", "hnsw (embedding vector_cosine_ops)")

# How the vector columns are stored. pgvector's default, EXTERNAL, moves the vector
# out of line as soon as a row passes ~2 kB, which a 384-d vector (1.5 kB) and a turn
# of text do: every exact-scan distance then costs a TOAST index lookup (a
# 10,000-row tenant's scan went from 130 to 30 ms with MAIN, docs/bench-notes.md).
# MAIN keeps it in the row and pushes the text columns out first. ALTER COLUMN ...
# TYPE (memstore reembed) resets a column to its type's default, so it is
# re-applied there.
VECTOR_STORAGE = "MAIN"


def computed_tsvector(table: str, prefix: str = "") -> str:
    """The ``to_tsvector`` expression of ``table``'s document."""
    return f"to_tsvector('{FULL_TEXT_CONFIG}', {document(table, prefix)})"


def tsvector(table: str, prefix: str = "") -> str:
    """What ``table``'s GIN index holds (its stored column, else the expression)."""
    stored = STORED_TSVECTORS.get(table)
    return f"{prefix}{stored}" if stored else computed_tsvector(table, prefix)


def tsquery(terms: Sequence[str]) -> str:
    """The ``to_tsquery`` text of ``terms``: any of them, a long one as a prefix."""
    return " | ".join(f"{t}:*" if is_prefix(t) else t for t in terms)
