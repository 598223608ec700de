"""The integration examples of docs/integrations.md run as written, on SQLite and Postgres."""

from __future__ import annotations

from typing import Any

import pytest
from doc_blocks import code_blocks

PAGE = "docs/integrations.md"


def readme_example(heading: str) -> dict[str, Any]:
    """Execute the first python block under ``heading`` as a module (not as __main__)."""
    blocks = code_blocks(PAGE, heading=heading)
    assert blocks, f"no python block under {heading!r}"
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(blocks[0], PAGE, "exec"), namespace)
    return namespace


async def test_readme_langgraph_example(
    db_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("langgraph")
    monkeypatch.setenv("MEMSTORE_URL", db_url)
    example = readme_example("## LangGraph store")
    await example["main"]()
    assert capsys.readouterr().out.splitlines() == ["['green tea again', 'I love green tea']"]


async def test_readme_openai_agents_example(
    db_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("agents")
    from agents import Agent, set_tracing_disabled
    from test_openai_agents_session import ScriptedModel

    monkeypatch.setenv("MEMSTORE_URL", db_url)
    example = readme_example("## OpenAI Agents SDK session")
    model = ScriptedModel(["Hello Ada.", "You are Ada."])
    set_tracing_disabled(True)  # no trace export: no network, no key
    try:
        await example["main"](Agent(name="assistant", instructions="Be brief.", model=model))
    finally:
        set_tracing_disabled(False)
    assert capsys.readouterr().out.splitlines() == ["Hello Ada.", "You are Ada.", "4", "assistant"]
    # The second turn reached the model with the first one from memstore.
    assert [item["role"] for item in model.inputs[1]] == ["user", "assistant", "user"]
