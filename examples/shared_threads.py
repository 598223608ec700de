"""Threads shared by processes: two worker processes append to one thread at once.

The database numbers the slots atomically (no gaps, no duplicates) and every process
on the same URL sees the same thread: no Manager, no Redis.
    python examples/shared_threads.py
"""

import asyncio
import multiprocessing

from memstore import MemoryStore

THREAD = "research-42"
PER_WORKER = 5


async def append_notes(worker: str) -> None:
    async with MemoryStore.open() as store:
        for n in range(PER_WORKER):
            await store.threads.append(
                THREAD,
                {"note": f"{worker} finding {n}"},
                from_id=worker,
                to_id="planner",
                user_id="team",
            )


def worker(name: str) -> None:
    asyncio.run(append_notes(name))


async def main() -> None:
    async with MemoryStore.open(auto_migrate=True) as store:
        await store.forget(user_id="team")  # start clean, so the example can be re-run

    # Separate processes ("spawn": fresh interpreters, as on any OS), each with its
    # own connection to the same database.
    spawn = multiprocessing.get_context("spawn")
    processes = [spawn.Process(target=worker, args=(name,)) for name in ("scout", "analyst")]
    for p in processes:
        p.start()
    for p in processes:
        p.join()
        assert p.exitcode == 0, f"worker failed with exit code {p.exitcode}"

    async with MemoryStore.open() as store:
        slots = await store.threads.get_thread(THREAD, user_id="team")
        print(f"{len(slots)} slots, indices {[s.index for s in slots]}")
        for sender in ("analyst", "scout"):  # each worker's slots, in its own order
            mine = await store.threads.get_from(THREAD, sender, user_id="team")
            print(f"from {sender}:", [s.payload["note"][-9:] for s in mine])
        newest = await store.threads.get_slice(THREAD, -1, user_id="team")
        print("newest slot index:", newest[0].index)
        print("stats:", await store.threads.stats(user_id="team"))


if __name__ == "__main__":
    asyncio.run(main())
