"""LongMemEval-format files, and the pooled long-chat set of scripts/build_longchat.py.

LongMemEval (oracle or haystack split): a list of questions, each with its own chat
history: ``question_id``, ``question_type``, ``question``, ``haystack_session_ids``,
``haystack_dates`` and ``haystack_sessions`` (lists of ``{"role", "content",
"has_answer"}``). Each question is one conversation (its history); its evidence is the
turns marked ``has_answer``, as ``<session id>/<index>``. Abstention questions (no
evidence) are left out.

Long chat: ``{"messages": [{"id", "session", "date", "role", "content"}], "questions":
[{"id", "type", "question", "evidence"}]}``, one conversation.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memstore.evaluation.checks import Source, checked_evidence
from memstore.evaluation.dataset import Dataset, Question, Turn

__all__ = ["chat_date", "read_longchat", "read_longmemeval"]


def chat_date(raw: str) -> datetime:
    """``2023/05/20 (Sat) 02:21`` as a UTC datetime."""
    return datetime.strptime(raw.split(" (")[0] + raw[-6:], "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def _date(source: Source, raw: Any, where: str) -> datetime | None:
    if raw is None:
        return None
    try:
        return chat_date(str(raw))
    except ValueError:
        source.fail(where, f"date {raw!r} is not like '2023/05/20 (Sat) 02:21'")


def read_longmemeval(source: Source, data: Any, *, drop_unknown: bool = False) -> Dataset:
    turns: list[Turn] = []
    asked: list[tuple[str, Question]] = []
    for index, item in source.records(data, "LongMemEval", "question"):
        conversation = source.text(item, "question_id", f"question {index}") or ""
        where = f"question {index} ({conversation})"
        question = source.field(item, "question", str, where)
        category = source.text(item, "question_type", where, optional=True) or ""
        ids = source.field(item, "haystack_session_ids", list, where)
        sessions = source.field(item, "haystack_sessions", list, where)
        dates = source.field(item, "haystack_dates", list, where, optional=True) or []
        if len(ids) != len(sessions) or (dates and len(dates) != len(sessions)):
            source.fail(where, "haystack_session_ids, _dates and _sessions differ in length")
        evidence: list[str] = []
        for s, (sid, session) in enumerate(zip(ids, sessions, strict=True)):
            at = f"{where}, session {s}"
            if not isinstance(session, list):
                source.fail(at, "a haystack session must be a list of turns")
            when = _date(source, dates[s], at) if dates else None
            for t, turn in enumerate(session):
                place = f"{at}, turn {t}"
                role = source.field(turn, "role", str, place)
                content = source.field(turn, "content", str, place)
                turn_id = f"{sid}/{t}"
                turns.append(Turn(turn_id, conversation, str(sid), content, role, when))
                if turn.get("has_answer"):
                    evidence.append(turn_id)
        if evidence:
            asked.append((where, Question(conversation, question, tuple(evidence), category)))
    questions, dropped = checked_evidence(source, turns, asked, drop_unknown=drop_unknown)
    return Dataset("longmemeval", turns, questions, dropped)


def read_longchat(source: Source, data: Any, *, drop_unknown: bool = False) -> Dataset:
    conversation = "longchat"
    turns: list[Turn] = []
    for i, message in enumerate(source.field(data, "messages", list, "the file")):
        where = f"message {i}"
        turn_id = source.text(message, "id", where) or ""
        session = source.text(message, "session", where) or ""
        when = _date(source, message.get("date"), where)
        role = source.field(message, "role", str, where)
        content = source.field(message, "content", str, where)
        turns.append(Turn(turn_id, conversation, session, content, role, when))
    asked: list[tuple[str, Question]] = []
    for i, item in enumerate(source.field(data, "questions", list, "the file")):
        where = f"question {i}"
        question = source.field(item, "question", str, where)
        evidence = source.field(item, "evidence", list, where)
        category = source.text(item, "type", where, optional=True) or ""
        ids = tuple(str(e) for e in evidence)
        if ids:
            asked.append((where, Question(conversation, question, ids, category)))
    questions, dropped = checked_evidence(source, turns, asked, drop_unknown=drop_unknown)
    return Dataset("longchat", turns, questions, dropped)
