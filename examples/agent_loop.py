"""An agent turn: store.context packs memory into a token budget, the model calls memory
tools, the turn is remembered. The chat client is SCRIPTED (no network, no API key);
pass openai.AsyncOpenAI() and a real model name instead to use a real model.
"""

import asyncio
import json
import re
from types import SimpleNamespace as NS

from memstore import Episode, MemoryStore


class ScriptedClient:
    """Quacks like client.chat.completions.create: searches memory once, then answers."""

    def __init__(self) -> None:
        self.chat = NS(completions=NS(create=self.create))

    async def create(self, *, messages: list, **_: object) -> NS:
        tool_output = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
        if not tool_output:
            args = json.dumps({"query": "cat named", "kind": "episodes"})
            calls = [NS(id="call_0", function=NS(name="search_memory", arguments=args))]
            return NS(choices=[NS(message=NS(content=None, tool_calls=calls))])
        best = tool_output[0]["results"][0]
        cat = re.search(r"named (\w+)", best["text"])
        answer = f"Your cat is {cat.group(1) if cat else '?'} [{best['id']}]."
        return NS(choices=[NS(message=NS(content=answer, tool_calls=None))])


async def agent_turn(store: MemoryStore, client, user_id: str, text: str, model: str) -> str:
    ctx = await store.context(user_id=user_id, session_id="s2", query=text, max_tokens=1000)
    messages = ctx.to_messages("You are an assistant with long-term memory. Cite [handles].")
    messages.append({"role": "user", "content": text})
    for _ in range(5):  # let the model call memory tools until it answers
        response = await client.chat.completions.create(
            model=model, messages=messages, tools=store.tool_definitions()
        )
        reply = response.choices[0].message
        if not reply.tool_calls:
            break
        messages.append({"role": "assistant", "content": reply.content, "tool_calls": [
            {"id": c.id, "type": "function", "function": {
                "name": c.function.name, "arguments": c.function.arguments}}
            for c in reply.tool_calls]})  # fmt: skip
        for c in reply.tool_calls:
            result = await store.call_tool(  # context=ctx: load_memory takes its handles
                c.function.name, c.function.arguments, user_id=user_id, context=ctx
            )
            messages.append({"role": "tool", "tool_call_id": c.id, "content": json.dumps(result)})
    answer = reply.content or ""
    await store.remember(Episode(user_id=user_id, session_id="s2", input=text, output=answer))
    return answer


async def main() -> None:
    async with MemoryStore.open(auto_migrate=True) as store:
        await store.forget(user_id="alice")  # start clean, so the example can be re-run
        first = Episode(user_id="alice", session_id="s1", input="I adopted a cat named Miso.")
        await store.remember(first)
        print(await agent_turn(store, ScriptedClient(), "alice", "My cat's name?", "scripted"))
        print("turns remembered in s2:", len(await store.session_messages("s2", user_id="alice")))


if __name__ == "__main__":
    asyncio.run(main())
