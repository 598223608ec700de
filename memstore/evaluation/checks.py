"""Shape checks shared by the format readers: each failure is one
:class:`InvalidEvaluationData` naming the file and the place in it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NoReturn

from memstore.evaluation.dataset import Question, Turn
from memstore.evaluation.errors import InvalidEvaluationData

__all__ = ["Source", "checked_evidence"]

_KINDS: dict[type, str] = {
    str: "a string",
    list: "a list",
    dict: "an object",
    int: "an integer",
}


class Source:
    """A file being read: ``fail`` raises for a place in it, ``field`` fetches a typed field."""

    def __init__(self, name: str) -> None:
        self.name = name

    def fail(self, where: str | None, cause: str) -> NoReturn:
        raise InvalidEvaluationData(self.name, where, cause)

    def field(self, obj: Any, key: str, kind: type, where: str, *, optional: bool = False) -> Any:
        if not isinstance(obj, dict):
            self.fail(where, f"expected an object, got {type(obj).__name__}")
        if key not in obj or obj[key] is None:
            if optional:
                return None
            self.fail(where, f"{key!r} is missing")
        value = obj[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            self.fail(where, f"{key!r} must be {_KINDS.get(kind, kind.__name__)}")
        return value

    def records(self, data: Any, kind: str, noun: str) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(index, object)`` of a file that is a non-empty JSON list of ``noun`` objects."""
        if not isinstance(data, list) or not data:
            self.fail(None, f"a {kind} file is a non-empty JSON list of {noun}s")
        for index, record in enumerate(data):
            if not isinstance(record, dict):
                self.fail(f"{noun} {index}", f"a {noun} must be an object")
            yield index, record

    def text(self, obj: Any, key: str, where: str, *, optional: bool = False) -> str | None:
        """A string field; a number is taken as its text (ids and categories often are)."""
        if isinstance(obj, dict) and isinstance(obj.get(key), int | float):
            if not isinstance(obj[key], bool):
                return str(obj[key])
        value: str | None = self.field(obj, key, str, where, optional=optional)
        return value


def checked_evidence(
    source: Source,
    turns: Iterable[Turn],
    questions: Iterable[tuple[str, Question]],
    *,
    drop_unknown: bool,
) -> tuple[list[Question], int]:
    """``questions`` (each with its place in the file) whose evidence names turns of
    their conversation; an id naming none fails, or is dropped (counted) with
    ``drop_unknown``. Questions left without evidence are dropped."""
    known = {(t.conversation, t.id) for t in turns}
    kept: list[Question] = []
    dropped = 0
    for where, q in questions:
        evidence = []
        for turn_id in q.evidence:
            if (q.conversation, turn_id) in known:
                evidence.append(turn_id)
            elif drop_unknown:
                dropped += 1
            else:
                source.fail(
                    where,
                    f"evidence {turn_id!r} names no turn of conversation {q.conversation!r} "
                    "(--drop-unknown-evidence drops such ids)",
                )
        if evidence:
            kept.append(Question(q.conversation, q.question, tuple(evidence), q.category))
    return kept, dropped
