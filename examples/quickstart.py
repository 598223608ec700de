"""Quickstart: remember a few agent turns, then recall them by meaning and keywords.

Runs on the embedded SQLite default (./memstore.db, or $MEMSTORE_URL if set):
    python examples/quickstart.py
"""

import asyncio

from memstore import Episode, MemoryStore


async def main() -> None:
    # auto_migrate creates (or upgrades) the schema: convenient for an embedded file.
    async with MemoryStore.open(auto_migrate=True) as store:
        # One handle per tenant: every call through it reads and writes that tenant only.
        alice, bob = store.tenant("alice"), store.tenant("bob")
        await alice.forget()  # start clean, so the example can be re-run
        await alice.remember_many(
            [
                Episode(
                    session_id="s1",
                    input="I adopted a cat named Miso.",
                    output="Miso is a lovely name!",
                ),
                Episode(
                    session_id="s1",
                    input="My favourite food is ramen.",
                    output="Noted: ramen.",
                ),
                Episode(
                    session_id="s2",
                    input="I'm training for a marathon.",
                    output="Good luck with the training!",
                ),
            ]
        )
        await bob.remember(
            Episode(session_id="b1", input="My cat is called Tiger.", output="Hi Tiger!")
        )

        for query in ("what is the cat called", "marathon training"):
            hits = await alice.recall(query, limit=1)
            print(f"recall({query!r}) -> {hits[0].input}")

        # Every call is scoped to one tenant: bob never sees alice's turns.
        print("bob sees:", [e.input for e in await bob.recall("cat")])

        # score: how relevant the row is to the query, 0 to 1 (min_score= is on this scale).
        scored = await alice.recall_scored("ramen", limit=1)
        print(f"best match for 'ramen': {scored[0].episode.input} (score {scored[0].score:.2f})")
        # The store's own methods take the tenant as user_id; a call without one is refused.
        await store.forget(user_id="bob")


if __name__ == "__main__":
    asyncio.run(main())
