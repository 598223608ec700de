"""How much of each question's evidence ``store.context`` carries, per token budget.

For every LoCoMo dev question of categories 1-4 with evidence (one episode per
dialogue turn, as ``scripts/eval_locomo.py`` stores them), and each budget B:

- **context**: the share of the question's evidence turns among the episodes of
  ``store.context(user_id=tenant, query=question, max_tokens=B)``;
- **recall prefix**: the share among ``store.recall_scored(question)``'s ranking
  taken in order while it fits in B, each episode costed as ``context`` costs it
  (the same item text and id, the memory header, the same ``ApproxTokenCounter``),
  i.e. the longest prefix of the ranking that ``pack`` keeps whole.

Reported: the mean share over questions, and the mean number of episodes each
carries. ``context`` is called as an application calls it, so the episodes it
packs count as accesses and lift them slightly in later contexts (``--muted``
switches that off).

    python scripts/measure_context_budget.py                    # temp SQLite, MiniLM
    python scripts/measure_context_budget.py --url postgresql+asyncpg://…
    python scripts/measure_context_budget.py --budgets 500 1000 2000 --conversations conv-30
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import eval_locomo  # noqa: E402

from memstore import MemoryStore  # noqa: E402
from memstore.schema.migrate import upgrade  # noqa: E402
from memstore.services.agent.builder import episode_item  # noqa: E402
from memstore.services.agent.context import pack  # noqa: E402

BUDGETS = (500, 1000, 2000)
# Deep enough that no budget above is ever short of ranked episodes.
RANKED = 200


def ranking_prefix(episodes: Sequence[Any], budget: int) -> list[Any]:
    """The longest prefix of ``episodes`` (ranked) that ``pack`` keeps whole in ``budget``."""
    items = [episode_item(e) for e in episodes]

    def whole(k: int) -> bool:
        packed = pack(items[:k], budget)
        return len(packed.items) == k and not any(i.truncated for i in packed.items)

    lo, hi = 0, len(items)  # whole(lo) holds; find the largest such k
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if whole(mid):
            lo = mid
        else:
            hi = mid - 1
    return list(episodes[:lo])


async def measure(
    store: MemoryStore, data: Sequence[dict[str, Any]], budgets: Sequence[int], muted: bool
) -> dict[str, dict[int, list[tuple[float, int]]]]:
    """(evidence share, episodes carried) per question, per way and budget."""
    out: dict[str, dict[int, list[tuple[float, int]]]] = {
        "context": {b: [] for b in budgets},
        "recall prefix": {b: [] for b in budgets},
    }
    for index, sample in enumerate(data):
        tenant = eval_locomo.tenant_of(sample, index)
        dia = {
            e.id: e.metadata["dia_id"]
            for e in eval_locomo.episodes_of(sample["conversation"], tenant)
        }
        for qa in sample["qa"]:
            evidence = {e for e in map(eval_locomo.norm_id, qa.get("evidence") or []) if e}
            if not evidence or str(qa.get("category")) not in eval_locomo.MAIN:
                continue
            question = qa["question"]
            with store.reads_unrecorded():
                ranked = [
                    m.episode
                    for m in await store.recall_scored(question, user_id=tenant, limit=RANKED)
                ]
            for budget in budgets:
                guard = store.access_tracker.muted() if muted else contextlib.nullcontext()
                with guard:
                    ctx = await store.context(user_id=tenant, query=question, max_tokens=budget)
                carried = {dia[i.id.removeprefix("episode:")] for i in ctx.episodes}
                out["context"][budget].append(
                    (len(evidence & carried) / len(evidence), len(carried))
                )
                prefix = ranking_prefix(ranked, budget)
                found = {dia[e.id] for e in prefix}
                out["recall prefix"][budget].append(
                    (len(evidence & found) / len(evidence), len(prefix))
                )
    return out


async def run(args: argparse.Namespace) -> None:
    data = eval_locomo.load(args.data, args.conversations)
    url = args.url or f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/context.db"
    await upgrade(url)
    embedder = eval_locomo.make_embedder(args.embedder, args.model)
    started = time.perf_counter()
    async with MemoryStore.open(url, embedder=embedder) as store:
        backend = store.engine.dialect.name
        await eval_locomo.ingest(store, data)
        results = await measure(store, data, args.budgets, args.muted)
    elapsed = time.perf_counter() - started
    questions = len(results["context"][args.budgets[0]])
    print(
        f"backend: {backend}   embedder: {args.embedder}   questions (categories 1-4): "
        f"{questions}   accesses: {'muted' if args.muted else 'recorded'}   time: {elapsed:.0f}s"
    )
    print("evidence share in the budget (mean over questions), episodes carried (mean)")
    header = f"{'budget':>8}" + "".join(f"{way:>26}" for way in results)
    print(header)
    print("-" * len(header))
    for budget in args.budgets:
        cells = ""
        for rows in results.values():
            share = sum(s for s, _ in rows[budget]) / len(rows[budget])
            carried = sum(n for _, n in rows[budget]) / len(rows[budget])
            cells += f"{share:>16.3f} {carried:>6.1f} ep"
        print(f"{budget:>8}{cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("data", nargs="?", default=eval_locomo.DEFAULT_DATA, help="LoCoMo JSON")
    parser.add_argument("--url", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument("--model", help="sentence-transformers model path or name")
    parser.add_argument("--conversations", nargs="+", metavar="ID", help="sample ids to use")
    parser.add_argument("--budgets", nargs="+", type=int, default=list(BUDGETS))
    parser.add_argument("--muted", action="store_true", help="do not record context accesses")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
