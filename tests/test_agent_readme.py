"""The agent loop of docs/agent-loop.md runs as written, against a scripted chat stand-in."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from doc_blocks import code_blocks

from memstore import Episode, Fact, MemoryStore


def readme_agent_turn() -> Any:
    code = code_blocks("docs/agent-loop.md", heading="# Agent loop")[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/agent-loop.md", "exec"), namespace)
    return namespace["agent_turn"]


class ScriptedModel:
    """Answers like a chat-completions endpoint would, from a script of replies."""

    def __init__(self, script: list[Any]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    async def create(self, **request: Any) -> Any:
        self.requests.append(json.loads(json.dumps(request)))  # must be plain JSON
        step = self.script.pop(0)
        if isinstance(step, str):
            message = SimpleNamespace(content=step, tool_calls=None)
        else:
            message = SimpleNamespace(
                content=None,
                tool_calls=[
                    SimpleNamespace(
                        id=f"call_{n}",
                        type="function",
                        function=SimpleNamespace(name=name, arguments=json.dumps(args)),
                    )
                    for n, (name, args) in enumerate(step)
                ],
            )
        return SimpleNamespace(choices=[SimpleNamespace(message=message)])


async def test_readme_agent_loop(store: MemoryStore) -> None:
    agent_turn = readme_agent_turn()
    await store.update_block("persona", "Alice, a botanist.", user_id="alice")
    old = await store.remember(
        Episode(user_id="alice", session_id="s0", input="My fern is called Fred", output="Hi Fred!")
    )
    await store.add_fact(Fact(user_id="alice", subject="alice", predicate="owns", object="a fern"))
    model = ScriptedModel(
        [
            [("search_memory", {"query": "fern name"}), ("load_memory", {"id": "episode:nope"})],
            [
                ("load_memory", {"id": f"episode:{old}"}),
                ("load_memory", {"id": "m3"}),  # the context's handle of that episode
                ("remember_fact", {"subject": "fern", "predicate": "named", "object": "Fred"}),
            ],
            f"Your fern is Fred [episode:{old}].",
        ]
    )
    answer = await agent_turn(
        store, model, user_id="alice", session_id="s1", user_text="What is my fern called?"
    )
    assert answer.startswith("Your fern is Fred")

    first = model.requests[0]
    assert first["tools"] == store.tool_definitions("openai")
    memory = first["messages"][0]["content"]
    assert "\nm1 persona: Alice, a botanist.\n" in memory
    assert "\nm3 My fern is called Fred" in memory
    assert first["messages"][-1] == {"role": "user", "content": "What is my fern called?"}
    tool_results = [m for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(tool_results) == 5
    assert "error" in json.loads(tool_results[1]["content"])  # unknown id → NotFound text
    assert json.loads(tool_results[2]["content"])["input"] == "My fern is called Fred"
    assert json.loads(tool_results[3]["content"])["id"] == f"episode:{old}"

    turn = await store.session_messages("s1", user_id="alice")
    assert [m.content for m in turn] == ["What is my fern called?", answer]
    facts = await store.recall_facts("fred", user_id="alice")
    assert (facts[0].subject, facts[0].object) == ("fern", "Fred")
    counts = await store.access_counts("episode", [old], user_id="alice")
    assert counts[old] >= 3  # searched and loaded twice
