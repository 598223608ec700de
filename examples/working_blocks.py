"""Working blocks: small pinned texts (persona, goals) every turn sees, with full history.

Writes are optimistic: pass expected_version and a concurrent edit raises Conflict
instead of being silently overwritten.
    python examples/working_blocks.py
"""

import asyncio

from memstore import Conflict, MemoryStore


async def main() -> None:
    async with MemoryStore.open(auto_migrate=True) as store:
        await store.forget(user_id="alice")  # start clean, so the example can be re-run
        await store.update_block("persona", "Friendly assistant.", user_id="alice")
        await store.append_block("persona", " Answers briefly.", user_id="alice")
        await store.update_block("goals", "Help Alice plan her trip to Japan.", user_id="alice")

        for block in await store.working(user_id="alice"):  # in pinned order
            print(f"{block.name} v{block.version}: {block.content}")

        # Two editors read version 2; the first write wins, the second is refused.
        await store.update_block(
            "persona", "Formal assistant.", user_id="alice", expected_version=2
        )
        try:
            await store.update_block(
                "persona", "Pirate assistant.", user_id="alice", expected_version=2
            )
        except Conflict as error:
            print("second editor:", type(error).__name__, "-", error)

        print("persona history:")
        for version in await store.block_history("persona", user_id="alice"):
            print(f"  v{version.version}: {version.content}")


if __name__ == "__main__":
    asyncio.run(main())
