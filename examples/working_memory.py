"""Working memory: scoped keys with a TTL, task progress, a scratchpad and checkpoints.

Scope is project > agent instance > session; keys of one scope are invisible to
another. A key past its TTL is gone for every reader at once (checked in SQL).
    python examples/working_memory.py
"""

import asyncio

from memstore import MemoryStore, TaskState


async def main() -> None:
    async with MemoryStore.open(auto_migrate=True) as store:
        await store.forget(user_id="alice")  # start clean, so the example can be re-run
        wm = store.working_memory(
            project_id="trip", agent_id="planner-1", session_id="s1", user_id="alice"
        )
        await wm.set("plan", {"steps": ["flights", "hotel", "rail pass"]})
        await wm.set("otp", "493021", ttl_seconds=1)  # a short-lived secret
        print("keys:", sorted(await wm.list_keys()))
        await asyncio.sleep(1.2)
        print("otp after its TTL:", await wm.get("otp", default="<expired>"))

        await wm.set_task_state(TaskState(task_id="book-trip", total_steps=3))
        await wm.update_task_progress(current_step=1)
        await wm.append_scratchpad("flights: cheapest on Tuesday")
        checkpoint = await wm.create_checkpoint("before hotel search")

        # A bad step: the plan gets overwritten, then we roll back.
        await wm.set("plan", {"steps": ["give up"]})
        await wm.restore_checkpoint(checkpoint)
        print("plan after restore:", (await wm.get("plan"))["steps"])
        state = await wm.get_task_state()
        assert state is not None
        print(f"task {state.task_id}: step {state.current_step} of {state.total_steps}")
        print("scratchpad:", await wm.get_scratchpad())

        other = store.working_memory(
            project_id="trip", agent_id="planner-2", session_id="s1", user_id="alice"
        )
        print("another agent instance sees:", await other.get_all())
        print("checkpoints:", [c["description"] for c in await wm.list_checkpoints()])


if __name__ == "__main__":
    asyncio.run(main())
