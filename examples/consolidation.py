"""Consolidation: the offline rule extractor turns remembered turns into facts.

In production this is `memstore consolidate` from cron; each episode is consolidated
exactly once, even with several workers. Here it runs in-process.
    python examples/consolidation.py
"""

import asyncio
from datetime import UTC, datetime, timedelta

from memstore import Episode, MemoryStore

START = datetime(2025, 3, 2, 9, 0, tzinfo=UTC)
TURNS = [
    "Hi, I'm Alice. I live in Paris and I work at Acme.",
    "I love bakeries. I'm allergic to peanuts.",
    "Do you think I should move to London?",  # a question: no fact
    "Big news: I moved to London!",  # supersedes lives_in Paris
]


async def main() -> None:
    async with MemoryStore.open(auto_migrate=True) as store:
        await store.forget(user_id="alice")  # start clean, so the example can be re-run
        await store.remember_many(
            [
                Episode(
                    user_id="alice",
                    session_id="s1",
                    input=text,
                    output="Noted.",
                    occurred_at=START + timedelta(days=30 * n),
                )
                for n, text in enumerate(TURNS)
            ]
        )

        result = await store.consolidate(user_id="alice")  # RuleExtractor by default
        print(
            f"processed {result.processed} turns: {result.added} facts added, "
            f"{result.superseded} superseded"
        )

        print("facts true now:")
        for fact in sorted(
            await store.recall_facts("", user_id="alice", limit=20), key=lambda f: f.predicate
        ):
            print(
                f"  {fact.subject} {fact.predicate} {fact.object} "
                f"(valid since {fact.valid_from:%Y-%m-%d})"
            )

        again = await store.consolidate(user_id="alice")
        print("second run processed:", again.processed)  # exactly once


if __name__ == "__main__":
    asyncio.run(main())
