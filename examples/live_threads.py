"""Live threads: one process hands work to another through a thread, nobody polls.

The planner (this process) appends tasks to the thread "jobs" and waits on the thread
"results" with ``threads.wait``; a worker process follows "jobs" with
``threads.follow`` and answers each task on "results". Each side sleeps until the
other's append commits (Postgres: LISTEN/NOTIFY; SQLite: its change counter).
    python examples/live_threads.py
"""

import asyncio
import multiprocessing
import time

from memstore import MemoryStore

TEAM = "team"
TASKS = ["summarise the report", "draft the reply", "book the meeting"]


async def work() -> None:
    async with MemoryStore.open() as store:
        # after=-1: from the first slot, so a task appended before we got here is not missed.
        async for slot in store.threads.follow("jobs", after=-1, user_id=TEAM):
            if slot.payload == "stop":
                return
            answer = {"task": slot.index, "done": slot.payload["do"].upper()}
            await store.threads.append(
                "results", answer, from_id="worker", to_id="planner", user_id=TEAM
            )


def worker() -> None:
    asyncio.run(work())


async def main() -> None:
    async with MemoryStore.open(auto_migrate=True) as store:
        await store.forget(user_id=TEAM)  # start clean, so the example can be re-run

        # A separate interpreter with its own connection to the same database.
        process = multiprocessing.get_context("spawn").Process(target=worker)
        process.start()

        last = -1
        for task in TASKS:
            sent = time.monotonic()
            await store.threads.append(
                "jobs", {"do": task}, from_id="planner", to_id="worker", user_id=TEAM
            )
            # Sleeps until the worker's answer commits (or 60 s pass: then []).
            answers = await store.threads.wait("results", after=last, timeout=60, user_id=TEAM)
            assert answers, "the worker did not answer within 60 s"
            last = answers[-1].index
            took = (time.monotonic() - sent) * 1000
            print(f"handed over {task!r}: {answers[0].payload['done']} ({took:.0f} ms)")

        await store.threads.append("jobs", "stop", from_id="planner", to_id="worker", user_id=TEAM)
        process.join(60)
        assert process.exitcode == 0, f"worker failed with exit code {process.exitcode}"
        results = await store.threads.get_thread("results", user_id=TEAM)
        print("results:", [s.payload["task"] for s in results])


if __name__ == "__main__":
    asyncio.run(main())
