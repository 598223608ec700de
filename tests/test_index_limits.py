"""Data at the documented limits, in 4-byte characters, is accepted (or refused) the same
way by SQLite and Postgres: no index entry may exceed Postgres' b-tree maximum."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from memstore import Fact, LimitExceeded, MemoryStore
from memstore.core.validation import MAX_IDENTIFIER_CHARS, MAX_INDEX_KEY_BYTES
from memstore.store import MAX_FACT_FIELD_CHARS

_RANDOM = random.Random(11)


def wide(n: int) -> str:
    """``n`` CJK Extension B letters (4 bytes each in UTF-8), varied so that Postgres
    cannot squeeze an index entry by compressing it."""
    return "".join(chr(_RANDOM.randrange(0x20000, 0x2A6D0)) for _ in range(n))


def cjk(n: int) -> str:
    """``n`` common CJK letters, 3 bytes each."""
    return "".join(chr(_RANDOM.randrange(0x4E00, 0x9FA0)) for _ in range(n))


TENANT = wide(MAX_IDENTIFIER_CHARS)


async def test_fact_subject_at_the_limit_in_four_byte_characters(store: MemoryStore) -> None:
    subject = wide(MAX_FACT_FIELD_CHARS)
    predicate = "p" * MAX_IDENTIFIER_CHARS  # predicates are normalised to [0-9a-z_]
    march = datetime(2026, 3, 1, tzinfo=UTC)
    june = datetime(2026, 6, 1, tzinfo=UTC)
    for obj, since in (("Paris", march), ("London", june), ("London", june)):
        await store.add_fact(
            Fact(
                user_id=TENANT,
                subject=subject,
                predicate=predicate,
                object=obj,
                valid_from=since,
                single_valued=True,
            )
        )
    history = await store.fact_history(user_id=TENANT, subject=subject)
    assert {(f.object, f.valid_from) for f in history} >= {("Paris", march), ("London", june)}
    assert all(f.subject == subject and f.predicate == predicate for f in history)
    now = await store.recall_facts("", user_id=TENANT, limit=10)
    assert [f.object for f in now] == ["London"]
    # Cyrillic, as reported: 1,400 characters.
    cyrillic = "".join(chr(_RANDOM.randrange(0x430, 0x450)) for _ in range(1_400))
    await store.add_fact(Fact(user_id="u", subject=cyrillic, predicate="likes", object="tea"))
    assert (await store.fact_history(user_id="u", subject=cyrillic))[0].subject == cyrillic


async def test_working_memory_key_at_the_byte_limit(store: MemoryStore) -> None:
    project = wide(MAX_IDENTIFIER_CHARS)
    # Tenant + scope use the whole budget but the 36 bytes kept for keys / checkpoint ids.
    agent_bytes = MAX_INDEX_KEY_BYTES - 36 - 2 * 4 * MAX_IDENTIFIER_CHARS
    agent = wide(agent_bytes // 4)
    assert len(agent.encode()) == agent_bytes
    wm = store.working_memory(user_id=TENANT, project_id=project, agent_id=agent)
    key = wide(9)  # 36 bytes: exactly at the limit
    await wm.set(key, {"v": 1})
    assert await wm.get(key) == {"v": 1}
    checkpoint = await wm.create_checkpoint("at the limit")
    await wm.restore_checkpoint(checkpoint)
    await wm.append_scratchpad("note")
    with pytest.raises(LimitExceeded, match="bytes"):
        await wm.set(key + "x", 1)
    assert await wm.get(key + "x") is None
    with pytest.raises(LimitExceeded, match="bytes"):
        store.working_memory(user_id=TENANT, project_id=project, agent_id=agent + "x")


async def test_four_cjk_ids_of_255_characters(store: MemoryStore) -> None:
    long_id = cjk(MAX_IDENTIFIER_CHARS)
    wm = store.working_memory(
        user_id="u", project_id=long_id, agent_id=cjk(255), session_id=cjk(255)
    )
    await wm.set("short", 1)
    assert await wm.get("short") == 1
    with pytest.raises(LimitExceeded, match="2560"):
        await wm.set(cjk(255), 2)
    assert await wm.list_keys() == ["short"]
