"""The plain JSONL format: one JSON object a line, turns and questions.

    {"type": "turn", "id": "t1", "conversation": "c1", "session": "s1",
     "speaker": "Ana", "text": "I moved to Lisbon in May.", "time": "2024-05-02T10:00:00Z"}
    {"type": "question", "question": "Where does Ana live?", "evidence": ["t1"],
     "category": "single-hop", "conversation": "c1"}

A turn needs ``id`` (unique within its conversation) and ``text``; ``conversation``
defaults to ``"default"``, ``session`` to the conversation, ``speaker`` and ``time``
(ISO 8601, UTC when it has no offset) to none. A question needs ``question`` and
``evidence`` (ids of turns); ``conversation`` defaults to the one its evidence turns
are in, ``category`` to none. Blank lines are skipped.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime

from memstore.evaluation.checks import Source, checked_evidence
from memstore.evaluation.dataset import Dataset, Question, Turn

__all__ = ["read_jsonl"]

DEFAULT_CONVERSATION = "default"


def _time(source: Source, raw: object, where: str) -> datetime | None:
    if raw is None:
        return None
    try:
        parsed = datetime.fromisoformat(str(raw))
    except ValueError:
        source.fail(where, f"time {raw!r} is not ISO 8601 (e.g. 2024-05-02T10:00:00Z)")
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def read_jsonl(source: Source, lines: Iterable[str], *, drop_unknown: bool = False) -> Dataset:
    turns: list[Turn] = []
    pending: list[tuple[str, dict[str, object]]] = []
    seen: set[tuple[str, str]] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            record = json.loads(line)
        except ValueError as error:
            source.fail(where, f"not JSON ({error})")
        kind = source.field(record, "type", str, where)
        if kind == "turn":
            turn_id = source.text(record, "id", where) or ""
            conversation = source.text(record, "conversation", where, optional=True)
            conversation = conversation or DEFAULT_CONVERSATION
            if (conversation, turn_id) in seen:
                source.fail(where, f"turn id {turn_id!r} repeats in {conversation!r}")
            seen.add((conversation, turn_id))
            session = source.text(record, "session", where, optional=True) or conversation
            speaker = source.field(record, "speaker", str, where, optional=True)
            text = source.field(record, "text", str, where)
            when = _time(source, record.get("time"), where)
            turns.append(Turn(turn_id, conversation, session, text, speaker, when))
        elif kind == "question":
            pending.append((where, record))
        else:
            source.fail(where, f"'type' must be 'turn' or 'question', got {kind!r}")
    if not turns:
        source.fail(None, 'no turns (lines with "type": "turn")')
    owners: dict[str, set[str]] = defaultdict(set)
    for t in turns:
        owners[t.id].add(t.conversation)
    asked: list[tuple[str, Question]] = []
    for where, record in pending:
        question = source.field(record, "question", str, where)
        evidence = source.field(record, "evidence", list, where)
        ids = tuple(str(e) for e in evidence)
        category = source.text(record, "category", where, optional=True) or ""
        conversation = source.text(record, "conversation", where, optional=True)
        if conversation is None:
            found = set().union(*(owners.get(i, set()) for i in ids)) if ids else set()
            if len(found) > 1:
                source.fail(where, "its evidence ids are in several conversations; name one")
            conversation = next(iter(found), DEFAULT_CONVERSATION)
        asked.append((where, Question(conversation, question, ids, category)))
    questions, dropped = checked_evidence(source, turns, asked, drop_unknown=drop_unknown)
    return Dataset("jsonl", turns, questions, dropped)
