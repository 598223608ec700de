"""LoCoMo-format files: a list of samples, each a ``conversation`` of sessions and ``qa``.

A sample's ``conversation`` holds ``session_<n>`` (turns with ``speaker``, ``dia_id``,
``text``, optionally ``blip_caption``) and ``session_<n>_date_time``; its ``qa`` items
have ``question``, ``evidence`` (``dia_id`` values) and ``category``. Each sample is one
conversation named by its ``sample_id``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from memstore.evaluation.checks import Source, checked_evidence
from memstore.evaluation.dataset import Dataset, Question, Turn

__all__ = ["norm_id", "read_locomo", "session_date", "tenant_of", "turn_text"]

EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


def norm_id(raw: str) -> str | None:
    """``D1:3``, ``D:1:3`` or ``D01:03`` -> ``D1:3``; None when it is no turn id."""
    match = EVIDENCE.search(raw)
    return f"D{int(match.group(1))}:{int(match.group(2))}" if match else None


def session_date(raw: str) -> datetime:
    """``1:56 pm on 8 May, 2023`` as a UTC datetime."""
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(turn: dict[str, Any]) -> str:
    """What a turn is stored as: ``speaker: text``, and the photo's caption if shared."""
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def tenant_of(sample: dict[str, Any], index: int) -> str:
    """A sample's conversation name: its ``sample_id``, else ``conv-<index>``."""
    return str(sample.get("sample_id") or f"conv-{index}")


def _turns(source: Source, sample: Any, conversation: str, where: str) -> list[Turn]:
    sessions = source.field(sample, "conversation", dict, where)
    turns: list[Turn] = []
    n = 1
    while f"session_{n}" in sessions:
        place = f"{where}, session_{n}"
        raw_date = source.field(sessions, f"session_{n}_date_time", str, place, optional=True)
        try:
            when = session_date(raw_date) if raw_date else None
        except ValueError:
            source.fail(place, f"date {raw_date!r} is not like '1:56 pm on 8 May, 2023'")
        items = source.field(sessions, f"session_{n}", list, place)
        for i, turn in enumerate(items):
            at = f"{place}, turn {i}"
            speaker = source.field(turn, "speaker", str, at)
            raw_id = source.field(turn, "dia_id", str, at)
            text = source.field(turn, "text", str, at)
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            turns.append(
                Turn(norm_id(raw_id) or raw_id, conversation, f"session_{n}", text, speaker, when)
            )
        n += 1
    if not turns:
        source.fail(where, "the conversation has no session_1")
    return turns


def read_locomo(source: Source, data: Any, *, drop_unknown: bool = False) -> Dataset:
    """The samples of a parsed LoCoMo file; questions without evidence are left out."""
    turns: list[Turn] = []
    asked: list[tuple[str, Question]] = []
    for index, sample in source.records(data, "LoCoMo", "sample"):
        conversation = tenant_of(sample, index)
        where = f"sample {index} ({conversation})"
        turns += _turns(source, sample, conversation, where)
        for j, qa in enumerate(source.field(sample, "qa", list, where)):
            at = f"{where}, qa {j}"
            question = source.field(qa, "question", str, at)
            raw = source.field(qa, "evidence", list, at, optional=True) or []
            if not all(isinstance(e, str) for e in raw):
                source.fail(at, "'evidence' must be a list of dia_id strings")
            category = source.text(qa, "category", at, optional=True) or ""
            evidence = tuple(dict.fromkeys(norm_id(e) or e for e in raw))
            if evidence:
                asked.append((at, Question(conversation, question, evidence, category)))
    questions, dropped = checked_evidence(source, turns, asked, drop_unknown=drop_unknown)
    return Dataset("locomo", turns, questions, dropped)
