"""Read an evaluation file in any supported format (or the one named)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memstore.evaluation.checks import Source
from memstore.evaluation.dataset import Dataset
from memstore.evaluation.jsonl import read_jsonl
from memstore.evaluation.locomo import read_locomo
from memstore.evaluation.longmemeval import read_longchat, read_longmemeval

__all__ = ["FORMATS", "load_dataset"]

FORMATS = ("auto", "locomo", "longmemeval", "longchat", "jsonl")


def _detect(data: Any) -> str | None:
    if isinstance(data, dict) and "messages" in data and "questions" in data:
        return "longchat"
    if isinstance(data, list) and data and isinstance(data[0], dict):
        if "conversation" in data[0]:
            return "locomo"
        if "haystack_sessions" in data[0]:
            return "longmemeval"
    return None


def load_dataset(
    path: str | Path, format: str = "auto", *, drop_unknown_evidence: bool = False
) -> Dataset:
    """The turns and questions of the file at ``path``.

    ``format``: one of :data:`FORMATS`; ``auto`` takes JSONL for a ``.jsonl`` name,
    else tells the JSON formats apart by their fields. A missing or unreadable file, bad
    JSON, a wrong shape or an evidence id naming no turn raise
    :class:`~memstore.evaluation.errors.InvalidEvaluationData` (``drop_unknown_evidence``
    drops such ids instead, counted in ``Dataset.dropped``).
    """
    source = Source(str(path))
    if format not in FORMATS:
        source.fail(None, f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        source.fail(None, "no such file")
    except (OSError, UnicodeDecodeError) as error:
        source.fail(None, f"cannot be read ({type(error).__name__}: {error})")
    drop = drop_unknown_evidence
    if format == "jsonl" or (format == "auto" and str(path).endswith(".jsonl")):
        return read_jsonl(source, text.splitlines(), drop_unknown=drop)
    try:
        data = json.loads(text)
    except ValueError as error:
        source.fail(None, f"not JSON ({error}); a JSONL file needs the .jsonl name or --format")
    kind = _detect(data) if format == "auto" else format
    if kind == "locomo":
        return read_locomo(source, data, drop_unknown=drop)
    if kind == "longmemeval":
        return read_longmemeval(source, data, drop_unknown=drop)
    if kind == "longchat":
        return read_longchat(source, data, drop_unknown=drop)
    source.fail(
        None,
        "not a known shape: LoCoMo (a list of samples with 'conversation' and 'qa'), "
        "LongMemEval (a list of questions with 'haystack_sessions') or JSONL (.jsonl)",
    )
