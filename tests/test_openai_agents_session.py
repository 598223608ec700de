"""memstore threads as an OpenAI Agents SDK Session, on SQLite and Postgres.

Driven through the SDK's own Runner with a scripted Model (no network, no key),
through the Session protocol, and from several OS processes at once.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from conftest import table_counts

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, SessionSettings
from agents.items import ModelResponse
from agents.memory import Session
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from memstore import InvalidInput, LimitExceeded, MemoryStore
from memstore.integrations.openai_agents import MemstoreSession

ROOT = Path(__file__).resolve().parents[1]


class ScriptedModel(Model):
    """Answers from a script and records the input the Runner sent each turn."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = list(answers)
        self.inputs: list[Any] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.inputs.append(input)
        text = self.answers.pop(0)
        message = ResponseOutputMessage(
            id=f"msg_{len(self.inputs)}",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the tests do not stream")


@pytest.fixture
async def mstore(db_url: str) -> AsyncIterator[MemoryStore]:
    async with MemoryStore.open(db_url) as opened:
        yield opened


def _texts(items: list[Any]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        content = item["content"]
        text = content if isinstance(content, str) else content[0]["text"]
        out.append((item["role"], text))
    return out


async def test_runner_keeps_the_conversation_in_memstore(mstore: MemoryStore) -> None:
    model = ScriptedModel(["Hello Ada.", "Your name is Ada."])
    agent = Agent(name="assistant", instructions="Be brief.", model=model)
    config = RunConfig(tracing_disabled=True)
    session = MemstoreSession("conv-1", mstore, user_id="alice")
    assert isinstance(session, Session)

    first = await Runner.run(agent, "My name is Ada.", session=session, run_config=config)
    assert first.final_output == "Hello Ada."
    # A new session object (as in another process) sees the same history.
    again = MemstoreSession("conv-1", mstore, user_id="alice")
    second = await Runner.run(agent, "What is my name?", session=again, run_config=config)
    assert second.final_output == "Your name is Ada."
    # The model's second turn was given the first turn from memstore.
    assert _texts(model.inputs[1]) == [
        ("user", "My name is Ada."),
        ("assistant", "Hello Ada."),
        ("user", "What is my name?"),
    ]
    assert _texts(await again.get_items()) == [
        ("user", "My name is Ada."),
        ("assistant", "Hello Ada."),
        ("user", "What is my name?"),
        ("assistant", "Your name is Ada."),
    ]
    # Another tenant with the same session id has its own, empty conversation.
    assert await MemstoreSession("conv-1", mstore, user_id="bob").get_items() == []


def _msg(n: int) -> dict[str, Any]:
    return {"role": "user", "content": f"m{n}"}


async def test_session_protocol(db_url: str, mstore: MemoryStore) -> None:
    s = MemstoreSession("s", mstore, user_id="alice")
    assert await s.get_items() == [] and await s.pop_item() is None
    await s.add_items([_msg(1), _msg(2)])
    await s.add_items([])
    await s.add_items([_msg(3)])
    assert await s.get_items() == [_msg(1), _msg(2), _msg(3)]
    assert await s.get_items(limit=2) == [_msg(2), _msg(3)]
    assert await s.get_items(limit=10) == [_msg(1), _msg(2), _msg(3)]
    assert await s.get_items(limit=0) == []
    assert await s.pop_item() == _msg(3)
    assert await s.pop_item() == _msg(2)
    await s.add_items([_msg(4)])
    assert await s.get_items() == [_msg(1), _msg(4)]
    assert await s.pop_item() == _msg(4)
    assert await s.pop_item() == _msg(1)
    assert await s.pop_item() is None
    assert await s.get_items() == []
    await s.add_items([_msg(5), _msg(6)])
    assert await s.get_items() == [_msg(5), _msg(6)]
    await s.clear_session()
    assert await s.get_items() == []
    # Clearing deletes the log (not hidden behind a marker): no slot of it is left.
    counts = await table_counts(db_url, "alice")
    assert counts["slots"] == 0 and counts["threads"] == 0
    await s.add_items([_msg(7)])
    assert await s.get_items() == [_msg(7)]


async def test_pop_on_empty_writes_nothing(db_url: str, mstore: MemoryStore) -> None:
    s = MemstoreSession("empty", mstore, user_id="alice")
    assert await s.pop_item() is None
    counts = await table_counts(db_url, "alice")
    assert counts["slots"] == 0 and counts["threads"] == 0


async def test_session_settings_limit(mstore: MemoryStore) -> None:
    s = MemstoreSession("lim", mstore, user_id="alice", session_settings=SessionSettings(limit=2))
    await s.add_items([_msg(1), _msg(2), _msg(3)])
    assert await s.get_items() == [_msg(2), _msg(3)]
    assert await s.get_items(limit=3) == [_msg(1), _msg(2), _msg(3)]


async def test_session_settings_are_coerced_like_the_sdks_own(mstore: MemoryStore) -> None:
    """As the SDK's SQLiteSession: a dict becomes SessionSettings, the default is
    SessionSettings(), and an unknown key is refused at construction (TypeError)."""
    s = MemstoreSession("dict", mstore, user_id="alice", session_settings={"limit": 1})
    assert isinstance(s.session_settings, SessionSettings) and s.session_settings.limit == 1
    await s.add_items([_msg(1), _msg(2)])
    assert await s.get_items() == [_msg(2)]
    default = MemstoreSession("default", mstore, user_id="alice")
    assert isinstance(default.session_settings, SessionSettings)
    assert default.session_settings.limit is None
    for bad in ({"limitt": 1}, {"limit": "many"}, 5):
        with pytest.raises(TypeError) as refused:
            MemstoreSession("x", mstore, user_id="alice", session_settings=bad)  # type: ignore[arg-type]
        assert isinstance(refused.value, InvalidInput)
    with pytest.raises(TypeError, match="limitt"):
        MemstoreSession("x", mstore, user_id="alice", session_settings={"limitt": 1})


async def test_a_non_json_item_is_also_the_sdks_type_error(
    db_url: str, mstore: MemoryStore
) -> None:
    s = MemstoreSession("nonjson", mstore, user_id="alice")
    for bad in ([{"role": "user", "content": object()}], [1], "not a list"):
        with pytest.raises(TypeError) as refused:
            await s.add_items(bad)  # type: ignore[arg-type]
        assert isinstance(refused.value, InvalidInput)
    assert (await table_counts(db_url, "alice"))["slots"] == 0


async def test_a_session_called_from_another_event_loop(mstore: MemoryStore) -> None:
    """Runner.run_sync runs its own loop in a thread; the store's connections belong
    to the loop it was opened on (asyncpg crashed the process when used from another)."""
    s = MemstoreSession("other-loop", mstore, user_id="alice")

    async def use() -> list[Any]:
        await s.add_items([_msg(1), _msg(2)])
        assert await s.pop_item() == _msg(2)
        return await s.get_items()

    assert await asyncio.to_thread(asyncio.run, use()) == [_msg(1)]
    assert await s.get_items() == [_msg(1)]


async def test_concurrent_pops_return_distinct_items(mstore: MemoryStore) -> None:
    s = MemstoreSession("pops", mstore, user_id="alice")
    await s.add_items([_msg(n) for n in range(10)])
    popped = await asyncio.gather(
        *(MemstoreSession("pops", mstore, user_id="alice").pop_item() for _ in range(6))
    )
    assert sorted(p["content"] for p in popped if p) == [f"m{n}" for n in range(4, 10)]
    assert await s.get_items() == [_msg(n) for n in range(4)]


@pytest.mark.parametrize(
    "bad",
    [
        "not a list",
        [1, 2],
        [{"role": "user", "content": float("nan")}],
        [{"x": object()}],
    ],
)
async def test_bad_items_are_refused_and_write_nothing(
    db_url: str, mstore: MemoryStore, bad: Any
) -> None:
    s = MemstoreSession("bad", mstore, user_id="alice")
    with pytest.raises(InvalidInput):
        await s.add_items(bad)
    assert (await table_counts(db_url, "alice"))["slots"] == 0
    with pytest.raises(InvalidInput):
        MemstoreSession("", mstore)
    with pytest.raises(InvalidInput):
        MemstoreSession("x", mstore, user_id="__sneaky")
    with pytest.raises(InvalidInput):
        await s.get_items(limit="3")  # type: ignore[arg-type]


async def test_log_limit_is_a_clear_error(db_url: str) -> None:
    async with MemoryStore.open(db_url, max_slots_per_thread=2) as small:
        s = MemstoreSession("full", small, user_id="alice")
        await s.add_items([_msg(1)])
        await s.add_items([_msg(2)])
        with pytest.raises(LimitExceeded):
            await s.add_items([_msg(3)])
        with pytest.raises(LimitExceeded, match="clear_session"):
            await s.pop_item()
        assert await s.get_items() == [_msg(1), _msg(2)]


# ---- several OS processes sharing one session --------------------------------------

PROCESSES = 4
BATCHES = 25

WORKER = r"""
import asyncio, sys, time
from pathlib import Path
from memstore import MemoryStore
from memstore.integrations.openai_agents import MemstoreSession

url, worker, batches, signals = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])

async def main():
    async with MemoryStore.open(url) as store:
        session = MemstoreSession("shared", store, user_id="alice")
        await session.get_items(limit=1)  # connect before the start
        (signals / f"ready-{worker}").touch()
        while not (signals / "go").exists():
            await asyncio.sleep(0.005)
        for n in range(batches):
            await session.add_items([
                {"role": "user", "content": f"w{worker}-{n}-q"},
                {"role": "assistant", "content": f"w{worker}-{n}-a"},
            ])

asyncio.run(main())
"""


@pytest.mark.slow
def test_processes_share_one_session_in_order(db_url: str) -> None:
    import tempfile

    signals = Path(tempfile.mkdtemp(prefix="memstore-agents-"))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, db_url, str(k), str(BATCHES), str(signals)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for k in range(PROCESSES)
    ]
    try:
        deadline = time.monotonic() + 120
        while len(list(signals.glob("ready-*"))) < PROCESSES:
            if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        (signals / "go").touch()
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for f in signals.iterdir():
            f.unlink()
        signals.rmdir()

    async def read() -> list[Any]:
        async with MemoryStore.open(db_url) as store:
            return await MemstoreSession("shared", store, user_id="alice").get_items()

    items = [i["content"] for i in asyncio.run(read())]
    assert len(items) == PROCESSES * BATCHES * 2
    assert sorted(items) == sorted(
        f"w{k}-{n}-{x}" for k in range(PROCESSES) for n in range(BATCHES) for x in "qa"
    )
    # Each call's question and answer stay adjacent; each worker's calls stay in order.
    for q, a in zip(items[::2], items[1::2], strict=True):
        assert q.endswith("-q") and a == q[:-1] + "a"
    for k in range(PROCESSES):
        mine = [int(i.split("-")[1]) for i in items[::2] if i.startswith(f"w{k}-")]
        assert mine == list(range(BATCHES))
