"""Could consolidated facts lead recall to evidence it misses? (facts as a second route)

Loads LoCoMo-format conversations as ``scripts/eval_locomo.py`` does, runs
``store.consolidate`` (the built-in rule extractor) on every tenant, then for each
question of categories 1-4 asks ``store.recall_facts(question, limit=5)`` and maps
the facts' ``sources`` back to dialogue turns. Reports how many facts there are, how
many questions' top facts cite an evidence turn, and how many evidence turns they cite
that ``store.recall(question, limit=10)`` does not already return: the most a fact
route could add to recall@10.

    python scripts/measure_fact_route.py            # MiniLM if installed
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from eval_locomo import (  # noqa: E402
    DEFAULT_DATA,
    MAIN,
    episodes_of,
    ingest,
    load,
    make_embedder,
    norm_id,
    tenant_of,
)

from memstore import MemoryStore  # noqa: E402
from memstore.schema.migrate import upgrade  # noqa: E402


async def run(args: argparse.Namespace) -> None:
    url = f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/facts.db"
    await upgrade(url)
    data = load(args.data)
    facts_total = questions = cited = evidence_total = new_turns = 0
    async with MemoryStore.open(url, embedder=make_embedder(args.embedder, None)) as store:
        await ingest(store, data)
        for index, sample in enumerate(data):
            tenant = tenant_of(sample, index)
            await store.consolidate(user_id=tenant)
            facts_total += len(await store.facts(user_id=tenant, limit=10_000))
            turn_of = {
                e.id: e.metadata["dia_id"] for e in episodes_of(sample["conversation"], tenant)
            }
            for qa in sample["qa"]:
                evidence = {e for e in map(norm_id, qa.get("evidence") or []) if e}
                if str(qa.get("category")) not in MAIN or not evidence:
                    continue
                questions += 1
                evidence_total += len(evidence)
                facts = await store.recall_facts(qa["question"], user_id=tenant, limit=5)
                via_facts = {turn_of.get(s) for f in facts for s in f.sources} & evidence
                cited += bool(via_facts)
                top = await store.recall(qa["question"], user_id=tenant, limit=10)
                new_turns += len(via_facts - {e.metadata.get("dia_id") for e in top})
    print(f"facts extracted: {facts_total} from {len(data)} conversations")
    print(f"questions whose top-5 facts cite an evidence turn: {cited} / {questions}")
    print(f"evidence turns cited there but not in recall's top 10: {new_turns} / {evidence_total}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("data", nargs="?", default=DEFAULT_DATA)
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
