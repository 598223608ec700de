"""Small hand-made files in each format ``memstore eval`` reads (tests/test_eval_*.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["jsonl_lines", "locomo_sample", "longmemeval_items", "write"]


def locomo_sample() -> list[dict[str, Any]]:
    """One conversation of two sessions, three questions (one without evidence)."""
    return [
        {
            "sample_id": "conv-x",
            "conversation": {
                "speaker_a": "Ana",
                "speaker_b": "Bo",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
                    {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely, what colour is it?"},
                    {
                        "speaker": "Ana",
                        "dia_id": "D1:3",
                        "text": "Orange with white paws.",
                        "blip_caption": "a photo of an orange cat",
                    },
                ],
                "session_2_date_time": "10:00 am on 9 June, 2023",
                "session_2": [
                    {"speaker": "Bo", "dia_id": "D2:1", "text": "I started learning the cello."},
                    {"speaker": "Ana", "dia_id": "D2:2", "text": "Which teacher do you have?"},
                ],
            },
            "qa": [
                {"question": "What is Ana's cat called?", "evidence": ["D1:1"], "category": 4},
                {
                    "question": "Which instrument does Bo learn?",
                    "evidence": ["D:2:1"],
                    "category": 1,
                },
                {"question": "What did Ana forget?", "category": 5, "adversarial_answer": "x"},
            ],
        }
    ]


def longmemeval_items() -> list[dict[str, Any]]:
    """Two questions with their own histories; one an abstention (no evidence)."""
    return [
        {
            "question_id": "q1",
            "question_type": "single-session-user",
            "question": "Which city did I fly to for the conference?",
            "haystack_session_ids": ["s_a", "s_b"],
            "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/22 (Mon) 09:00"],
            "haystack_sessions": [
                [
                    {"role": "user", "content": "I flew to Oslo for the conference."},
                    {"role": "assistant", "content": "Enjoy Oslo!", "has_answer": False},
                ],
                [{"role": "user", "content": "Recommend a soup recipe.", "has_answer": False}],
            ],
        },
        {
            "question_id": "q2_abs",
            "question_type": "single-session-user",
            "question": "What is my dog's name?",
            "haystack_session_ids": ["s_c"],
            "haystack_dates": ["2023/06/01 (Thu) 10:00"],
            "haystack_sessions": [[{"role": "user", "content": "I like tea."}]],
        },
    ]


def jsonl_lines() -> list[dict[str, Any]]:
    return [
        {
            "type": "turn",
            "id": "t1",
            "conversation": "c1",
            "session": "mon",
            "speaker": "Ana",
            "text": "I moved to Lisbon in May.",
            "time": "2024-05-02T10:00:00Z",
        },
        {
            "type": "turn",
            "id": "t2",
            "conversation": "c1",
            "session": "mon",
            "speaker": "Bo",
            "text": "Do you like the food there?",
        },
        {"type": "turn", "id": "t1", "conversation": "c2", "text": "Ravi plays chess."},
        {
            "type": "question",
            "question": "Where did Ana move?",
            "evidence": ["t1"],
            "category": "single-hop",
            "conversation": "c1",
        },
        {
            "type": "question",
            "question": "Which game does Ravi play?",
            "evidence": ["t1"],
            "conversation": "c2",
        },
        {"type": "question", "question": "Who asked about food?", "evidence": ["t2"]},
    ]


def write(path: Path, content: Any) -> Path:
    """``content`` as JSON, or as JSONL when ``path`` ends in ``.jsonl``."""
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(line) + "\n" for line in content))
    else:
        path.write_text(json.dumps(content))
    return path
