"""One tokeniser: every path that splits text into words uses memstore.core.text."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memstore.core.lexical import query_terms, stem
from memstore.core.text import STOPWORDS, content_words, keyword_tokens, words

PACKAGE = Path(__file__).resolve().parent.parent / "memstore"
# The word pattern itself, as it would be written in a module's source.
PATTERN = "[^\\W_]"


def test_the_word_pattern_is_written_once() -> None:
    found = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if PATTERN in path.read_text(encoding="utf-8")
    }
    assert found == {"core/text.py"}


@given(st.text())
def test_keyword_paths_agree_on_words(text: str) -> None:
    kept = content_words(text)
    assert kept == [w for w in words(text) if len(w) > 1 and w not in STOPWORDS]
    assert keyword_tokens(text, limit=1000) == list(dict.fromkeys(kept))
    assert set(query_terms(text)) <= {stem(w) for w in kept}
