"""How a relevance floor (``recall(..., min_score=...)``) trades kept evidence for silence.

Loads LoCoMo-format conversations as ``scripts/eval_locomo.py`` does (one tenant per
conversation, one episode per turn), then for several floors reports:

- evidence kept: of the evidence turns ``store.recall_scored(question, limit=10)``
  ranks in its top 10 without a floor, the fraction whose ``relevance`` reaches the
  floor (categories 1-4; a row is returned with a floor exactly when it is in the
  unfloored top 10 and reaches the floor, so this is what the floor keeps);
- questions answered: the fraction of questions with at least one evidence turn in
  the top 10 that still return at least one of them;
- off-topic rows: the mean and maximum number of rows returned per off-topic query
  (``OFF_TOPIC``, asked of every conversation), and the fraction of such queries that
  return anything.

    python scripts/measure_floor.py --embedder hashing
    python scripts/measure_floor.py --embedder minilm
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from eval_locomo import (  # noqa: E402
    DEFAULT_DATA,
    episodes_of,
    make_embedder,
    norm_id,
    resolve_data,
)

from memstore import MemoryStore  # noqa: E402
from memstore.schema.migrate import upgrade  # noqa: E402

RECOMMENDED = 0.35
FLOORS = (0.0, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6)
TOP = 10
# Written before looking at any score: everyday requests a chat assistant gets that
# the LoCoMo conversations (two friends talking about family, hobbies, events) do
# not discuss, plus keyboard noise. None names a speaker.
OFF_TOPIC = (
    "zzz",
    "asdf qwerty",
    "What is the capital of Australia?",
    "How do I configure a Kubernetes ingress controller?",
    "Explain the proof of Fermat's last theorem",
    "What is the boiling point of mercury in kelvin?",
    "How many moons does Jupiter have?",
    "Convert 250 grams of flour to cups",
    "What is the time complexity of quicksort?",
    "Who won the 1998 FIFA World Cup final?",
    "How do I reset my router's admin password?",
    "What is the half-life of carbon-14?",
    "Translate 'good morning' into Japanese",
    "Which SQL isolation level prevents phantom reads?",
    "What causes inflation in a central bank's monetary policy?",
)


async def run(args: argparse.Namespace) -> None:
    data = json.loads(resolve_data(args.data).read_text())
    url = args.url or f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/floor.db"
    await upgrade(url)
    embedder = make_embedder(args.embedder, args.model)
    evidence_rel: list[float] = []  # relevance of each evidence turn found in the top 10
    question_best: list[float] = []  # per question: best relevance among its found evidence
    off_topic: list[list[float]] = []  # per (query, tenant): relevance of the top-10 rows
    per_query: dict[str, int] = dict.fromkeys(OFF_TOPIC, 0)  # rows at RECOMMENDED, all tenants
    started = time.perf_counter()
    async with MemoryStore.open(url, embedder=embedder) as store:
        backend = store.backend
        for index, sample in enumerate(data):
            tenant = str(sample.get("sample_id") or f"conv-{index}")
            await store.forget(user_id=tenant)
            episodes = episodes_of(sample["conversation"], tenant)
            for start in range(0, len(episodes), 500):
                await store.remember_many(episodes[start : start + 500])
            for qa in sample["qa"]:
                evidence = {e for e in map(norm_id, qa.get("evidence") or []) if e}
                if not evidence or str(qa.get("category")) not in {"1", "2", "3", "4"}:
                    continue
                hits = await store.recall_scored(qa["question"], user_id=tenant, limit=TOP)
                found = [
                    h.parts["relevance"]
                    for h in hits
                    if h.episode.metadata.get("dia_id") in evidence
                ]
                evidence_rel += found
                if found:
                    question_best.append(max(found))
            for query in OFF_TOPIC:
                hits = await store.recall_scored(query, user_id=tenant, limit=TOP)
                off_topic.append([h.parts["relevance"] for h in hits])
                floored = await store.recall(
                    query, user_id=tenant, limit=TOP, min_score=RECOMMENDED
                )
                per_query[query] += len(floored)
    elapsed = time.perf_counter() - started
    print(f"backend: {backend}   embedder: {embedder!r}   data: {args.data}   time: {elapsed:.0f}s")
    print(
        f"evidence turns in top {TOP}: {len(evidence_rel)} "
        f"(questions with one: {len(question_best)});   "
        f"off-topic queries: {len(OFF_TOPIC)} x {len(data)} tenants"
    )
    header = (
        f"{'floor':>6}{'evidence kept':>15}{'questions kept':>16}"
        f"{'off-topic rows/q':>18}{'max':>5}{'off-topic q with rows':>23}"
    )
    print(header)
    print("-" * len(header))
    for floor in FLOORS:
        kept = sum(r >= floor for r in evidence_rel) / max(len(evidence_rel), 1)
        answered = sum(r >= floor for r in question_best) / max(len(question_best), 1)
        rows = [sum(r >= floor for r in q) for q in off_topic]
        print(
            f"{floor:>6.2f}{kept:>15.3f}{answered:>16.3f}"
            f"{sum(rows) / len(rows):>18.2f}{max(rows):>5}"
            f"{sum(n > 0 for n in rows) / len(rows):>23.3f}"
        )
    print(f"rows returned by recall(min_score={RECOMMENDED}, limit={TOP}), all tenants:")
    for query, n in per_query.items():
        print(f"  {n:>3}  {query}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=DEFAULT_DATA, help="LoCoMo-format JSON")
    parser.add_argument("--url", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="hashing")
    parser.add_argument("--model", help="sentence-transformers model path or name")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
