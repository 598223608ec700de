"""What every backend's full-text index holds, defined once.

Migrations create the indexes over these documents (``migrations/versions/0003_recall.py``);
recall queries must repeat the very same expressions. Each backend's own index
definitions are in its folder (``memstore/backends/<name>/indexes.py``). The
migration keeps its own frozen copy (a revision must not change meaning when this
code changes); ``tests/test_search_expressions.py`` checks that a migrated database
holds exactly what is defined here, and that the recall statements use these
definitions.
"""

from __future__ import annotations

__all__ = ["VECTOR_TABLES", "answer_length", "document"]

# What each table's full-text index holds, over the row's columns; ``{r}`` is a
# prefix for them ("" in an index, "new." in a trigger, "facts." in a query).
_DOCUMENTS = {
    "episodes": "coalesce({r}search_text, '')",
    "facts": "{r}subject || ' ' || replace({r}predicate, '_', ' ') || ' ' || {r}object",
}

# How much of each table's document is an agent's answer (an episode's output), as
# SQL: BM25 counts that share of a row's length as verbosity (memstore/search/statement.py).
_ANSWER_LENGTHS = {
    "episodes": "length({r}output)",
    "facts": "0",
}

# The tables with an ``embedding`` column (a vector of the recorded width).
VECTOR_TABLES = ("episodes", "facts")


def document(table: str, prefix: str = "") -> str:
    """The full-text document of ``table``'s rows as SQL, columns prefixed by ``prefix``."""
    return _DOCUMENTS[table].format(r=prefix)


def answer_length(table: str, prefix: str = "") -> str:
    """The length of the agent's answer in ``table``'s rows as SQL (0 where none)."""
    return _ANSWER_LENGTHS[table].format(r=prefix)
