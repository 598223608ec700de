"""Bi-temporal facts: correct a fact, then ask what was true when, as believed when.

Valid time says when a fact is true in the world; transaction time says when the
store believed it. A correction never overwrites: both stay queryable.
    python examples/bitemporal_facts.py
"""

import asyncio
from datetime import UTC, datetime

from memstore import Fact, MemoryStore

MARCH = datetime(2025, 3, 1, tzinfo=UTC)
JUNE = datetime(2025, 6, 1, tzinfo=UTC)
APRIL = datetime(2025, 4, 15, tzinfo=UTC)


async def main() -> None:
    async with MemoryStore.open(auto_migrate=True) as store:
        await store.forget(user_id="alice")  # start clean, so the example can be re-run
        await store.add_fact(
            Fact(
                user_id="alice",
                subject="alice",
                predicate="lives_in",
                object="Paris",
                valid_from=MARCH,
            )
        )
        before_move = store.now()  # what the store knew at this instant is kept forever

        # lives_in is single-valued: London supersedes Paris from June on.
        await store.add_fact(
            Fact(
                user_id="alice",
                subject="alice",
                predicate="lives_in",
                object="London",
                valid_from=JUNE,
            )
        )

        now = await store.recall_facts("lives", user_id="alice")
        print("now:", [f.object for f in now])
        april = await store.recall_facts("lives", user_id="alice", valid_at=APRIL)
        print("in April:", [f.object for f in april])
        believed = await store.recall_facts("lives", user_id="alice", known_at=before_move)
        print("as believed before the move was recorded:", [f.object for f in believed])

        print("history:")
        for f in await store.fact_history(user_id="alice", subject="alice", predicate="lives_in"):
            until = f"{f.valid_to:%Y-%m-%d}" if f.valid_to else "..."
            state = "current" if f.superseded_at is None else "superseded"
            print(f"  {f.object:<7} valid {f.valid_from:%Y-%m-%d} -> {until:<10} {state}")


if __name__ == "__main__":
    asyncio.run(main())
