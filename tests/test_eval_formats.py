"""``memstore eval`` reads LoCoMo, LongMemEval and JSONL files into turns and questions;
a bad file is one InvalidEvaluationData naming the file and the place in it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstore.errors import InvalidInput
from memstore.evaluation import InvalidEvaluationData, load_dataset
from tests.eval_samples import jsonl_lines, locomo_sample, longmemeval_items, write


def test_locomo_turns_and_questions_with_evidence(tmp_path: Path) -> None:
    data = load_dataset(write(tmp_path / "l.json", locomo_sample()))
    assert data.format == "locomo" and data.conversations == ["conv-x"]
    assert [t.id for t in data.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert data.turns[2].text.endswith("[shares a photo: a photo of an orange cat]")
    assert data.turns[0].time == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert data.turns[3].session == "session_2" and data.turns[3].speaker == "Bo"
    # "D:2:1" is normalised; the question without evidence is left out.
    assert [(q.evidence, q.category) for q in data.questions] == [
        (("D1:1",), "4"),
        (("D2:1",), "1"),
    ]


def test_longmemeval_each_question_its_history_evidence_has_answer(tmp_path: Path) -> None:
    items = longmemeval_items()
    items[0]["haystack_sessions"][0][0]["has_answer"] = True
    data = load_dataset(write(tmp_path / "m.json", items))
    assert data.format == "longmemeval" and data.conversations == ["q1", "q2_abs"]
    (question,) = data.questions  # the abstention has no evidence
    assert question.conversation == "q1" and question.evidence == ("s_a/0",)
    assert question.category == "single-session-user"
    assert data.turns[0].time == datetime(2023, 5, 20, 2, 21, tzinfo=UTC)


def test_jsonl_ids_per_conversation_and_the_conversation_from_evidence(tmp_path: Path) -> None:
    data = load_dataset(write(tmp_path / "p.jsonl", jsonl_lines()))
    assert data.format == "jsonl" and data.conversations == ["c1", "c2"]
    assert [(q.conversation, q.evidence, q.category) for q in data.questions] == [
        ("c1", ("t1",), "single-hop"),
        ("c2", ("t1",), ""),
        ("c1", ("t2",), ""),
    ]
    assert data.turns[2].session == "c2" and data.turns[2].time is None


def test_long_chat_one_conversation_of_messages(tmp_path: Path) -> None:
    chat = {
        "messages": [
            {"id": "a/0", "session": "a", "date": "2023/05/20 (Sat) 02:21",
             "role": "user", "content": "I flew to Oslo."},
            {"id": "a/1", "session": "a", "role": "assistant", "content": "Nice."},
        ],
        "questions": [{"id": "q", "type": "trip", "question": "Where?", "evidence": ["a/0"]}],
    }  # fmt: skip
    data = load_dataset(write(tmp_path / "c.json", chat))
    assert data.format == "longchat" and data.conversations == ["longchat"]
    assert [(t.id, t.speaker) for t in data.turns] == [("a/0", "user"), ("a/1", "assistant")]
    assert [(q.evidence, q.category) for q in data.questions] == [(("a/0",), "trip")]


def _locomo_with(change: Any) -> list[dict[str, Any]]:
    sample = locomo_sample()
    change(sample[0])
    return sample


BAD: dict[str, tuple[str, Any, str]] = {
    "missing": ("none.json", None, "none.json: no such file"),
    "not-json": ("x.json", "{not json", "x.json: not JSON"),
    "unknown-shape": ("x.json", {"a": 1}, "x.json: not a known shape"),
    "empty-list": ("x.json", [], "not a known shape"),
    "locomo-no-qa": (
        "x.json",
        _locomo_with(lambda s: s.pop("qa")),
        "x.json: sample 0 (conv-x): 'qa' is missing",
    ),
    "locomo-turn-text": (
        "x.json",
        _locomo_with(lambda s: s["conversation"]["session_2"][1].update(text=3)),
        "x.json: sample 0 (conv-x), session_2, turn 1: 'text' must be a string",
    ),
    "locomo-bad-date": (
        "x.json",
        _locomo_with(lambda s: s["conversation"].update(session_1_date_time="yesterday")),
        "session_1: date 'yesterday' is not like",
    ),
    "locomo-unknown-evidence": (
        "x.json",
        _locomo_with(lambda s: s["qa"][0].update(evidence=["D9:9"])),
        "x.json: sample 0 (conv-x), qa 0: evidence 'D9:9' names no turn of conversation 'conv-x'",
    ),
    "longmemeval-lengths": (
        "x.json",
        [{**longmemeval_items()[0], "haystack_session_ids": ["s_a"]}],
        "question 0 (q1): haystack_session_ids, _dates and _sessions differ in length",
    ),
    "locomo-record-not-object": (
        "x.json",
        [*locomo_sample(), "conv-y"],
        "x.json: sample 1: a sample must be an object",
    ),
    "longmemeval-record-not-object": (
        "x.json",
        [longmemeval_items()[0], 7],
        "x.json: question 1: a question must be an object",
    ),
    "jsonl-not-json": ("x.jsonl", "not json\n", "x.jsonl: line 1: not JSON"),
    "jsonl-type": ("x.jsonl", [{"type": "note"}], "line 1: 'type' must be 'turn' or 'question'"),
    "jsonl-no-turns": (
        "x.jsonl",
        [{"type": "question", "question": "q", "evidence": []}],
        "no turns",
    ),
    "jsonl-repeat": ("x.jsonl", jsonl_lines()[:1] * 2, "line 2: turn id 't1' repeats in 'c1'"),
    "jsonl-unknown-evidence": (
        "x.jsonl",
        [*jsonl_lines()[:3], {"type": "question", "question": "q", "evidence": ["t9"]}],
        "line 4: evidence 't9' names no turn of conversation 'default'",
    ),
    "jsonl-time": (
        "x.jsonl",
        [{**jsonl_lines()[0], "time": "May"}],
        "line 1: time 'May' is not ISO 8601",
    ),
}


def write_bad(tmp_path: Path, name: str, content: Any) -> Path:
    path = tmp_path / name
    if content is None:
        return path
    if isinstance(content, str):
        path.write_text(content)
        return path
    return write(path, content)


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_file_is_one_error_naming_file_and_place(case: str, tmp_path: Path) -> None:
    name, content, expected = BAD[case]
    path = write_bad(tmp_path, name, content)
    with pytest.raises(InvalidEvaluationData) as caught:
        load_dataset(path)
    assert isinstance(caught.value, InvalidInput)
    message = str(caught.value)
    assert "\n" not in message and expected in message, message
    assert caught.value.source == str(path)


def test_unknown_evidence_dropped_and_counted_when_asked(tmp_path: Path) -> None:
    sample = _locomo_with(lambda s: s["qa"][1].update(evidence=["D2:1", "D7:7", "D"]))
    data = load_dataset(write(tmp_path / "l.json", sample), drop_unknown_evidence=True)
    assert data.dropped == 2
    assert [q.evidence for q in data.questions] == [("D1:1",), ("D2:1",)]


def test_the_format_named_overrides_detection(tmp_path: Path) -> None:
    path = tmp_path / "turns.txt"
    path.write_text("".join(json.dumps(line) + "\n" for line in jsonl_lines()))
    assert load_dataset(path, "jsonl").format == "jsonl"
    with pytest.raises(InvalidEvaluationData, match="not JSON"):
        load_dataset(path)
