"""Facts measured against LoCoMo's gold observations by the evidence-turn rule, and the
evidence recall of ``recall_facts`` (scripts/eval_facts.py), on both backends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from test_consolidation_llm import ChatServer

from memstore import MemoryStore
from memstore.evaluation import InvalidEvaluationData
from memstore.evaluation.checks import Source
from memstore.evaluation.facts import gold_observations, measure_facts
from memstore.evaluation.locomo import read_locomo
from memstore.services.consolidation.rules import RuleExtractor
from tests.eval_samples import locomo_sample

ROOT = Path(__file__).resolve().parents[1]


def _sample() -> list[dict[str, Any]]:
    data = locomo_sample()
    sessions = data[0]["conversation"]
    sessions["session_1"][0]["text"] = "I live in Paris."  # the rules read: lives_in
    sessions["session_2"][0]["text"] = "I love jazz."  # likes; no observation names D2:1
    data[0]["observation"] = {
        "session_1_observation": {
            "Ana": [["Ana lives in Paris.", "D1:1"], ["Ana has an orange cat.", ["D1:3", "D1:1"]]]
        },
        "session_2_observation": {"Bo": [["Bo asks about a teacher.", "D:2:2"]]},
    }
    return data


async def test_coverage_precision_and_fact_recall_by_evidence_turns(store: MemoryStore) -> None:
    data = _sample()
    source = Source("sample.json")
    observations = gold_observations(source, data)
    assert [o.evidence for o in observations] == [("D1:1",), ("D1:3", "D1:1"), ("D2:2",)]
    report = await measure_facts(store, read_locomo(source, data), observations, RuleExtractor())
    facts = await store.fact_history(user_id="memstore-eval-0")
    assert sorted((f.predicate, f.object) for f in facts) == [
        ("likes", "jazz"),
        ("lives_in", "Paris"),
    ]
    # Two of three observations have D1:1 (the Paris fact's turn) as evidence; the jazz
    # fact's turn D2:1 is no observation's evidence.
    assert (report.observations, report.covered, report.facts, report.precise) == (3, 2, 2, 1)
    assert report.coverage == pytest.approx(2 / 3) and report.precision == 0.5
    # Questions: evidence D1:1 and D2:1, one fact each; both facts are within the top 5.
    assert report.recall["recall@5"].mean == 1.0
    assert report.recall["recall@1"].n == 2


def test_an_observation_not_text_and_evidence_is_one_error() -> None:
    data = _sample()
    data[0]["observation"]["session_1_observation"]["Ana"].append(["only text"])
    with pytest.raises(InvalidEvaluationData, match="observation session_1_observation/Ana/2"):
        gold_observations(Source("sample.json"), data)


@pytest.mark.sqlite
def test_the_script_runs_the_llm_extractor_on_an_endpoint(tmp_path: Path) -> None:
    pytest.importorskip("openai", reason="the LLM extractor needs memstore[llm]")
    # The chat-completions server of the LLM extractor's tests: for a turn naming Paris
    # it answers two facts (lives_in Paris, Emma sister_of user), both sourced at D1:1.
    chat = ChatServer()
    thread = threading.Thread(target=chat.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        data = tmp_path / "sample.json"
        data.write_text(json.dumps(_sample()))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSTORE_", "OPENAI_"))}
        env["PYTHONPATH"] = str(ROOT)
        done = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "eval_facts.py"), str(data),
             "--extractor", "llm", "--llm-url", chat.url, "--llm-model", "test-model"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        chat.httpd.shutdown()
        chat.httpd.server_close()
    assert done.returncode == 0, done.stderr
    assert "extractor: llm" in done.stdout
    assert "coverage 0.667 (2/3)   precision 1.000 (2/2)" in done.stdout
    assert chat.requests and chat.requests[0]["model"] == "test-model"
