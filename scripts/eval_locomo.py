"""Recall quality on LoCoMo-format data, through the public ``MemoryStore.recall`` API.

Each conversation is one tenant; each dialogue turn is one episode (``dia_id`` kept in
metadata, the session's date as ``occurred_at``). Every QA item with evidence is asked
through ``store.recall``; recall@k is the fraction of its evidence turns in the top k.
Categories 1-4 are reported per category and overall; category 5 separately.

    python scripts/eval_locomo.py                        # temp SQLite; MiniLM if installed
    python scripts/eval_locomo.py --url postgresql+asyncpg://…  # or Postgres
    python scripts/eval_locomo.py path/to/locomo.json --embedder hashing
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memstore import Episode, MemoryStore  # noqa: E402
from memstore.embeddings import HashingEmbedder  # noqa: E402
from memstore.migrate import upgrade  # noqa: E402

DEFAULT_DATA = "../shared/data/locomo-dev.json"
KS = (1, 5, 10, 20)
EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


def norm_id(raw: str) -> str | None:
    match = EVIDENCE.search(raw)
    return f"D{int(match.group(1))}:{int(match.group(2))}" if match else None


def session_date(raw: str) -> datetime:
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def episodes_of(conversation: dict[str, Any], tenant: str) -> list[Episode]:
    episodes = []
    n = 1
    while f"session_{n}" in conversation:
        when = session_date(conversation[f"session_{n}_date_time"])
        for turn in conversation[f"session_{n}"]:
            dia_id = norm_id(turn["dia_id"]) or turn["dia_id"]
            episodes.append(
                Episode(
                    session_id=f"session_{n}",
                    user_id=tenant,
                    input=turn_text(turn),
                    metadata={"dia_id": dia_id, "speaker": turn["speaker"]},
                    occurred_at=when,
                )
            )
        n += 1
    return episodes


def make_embedder(name: str, model: str | None) -> Any:
    if name == "hashing":
        return HashingEmbedder()
    from memstore.embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(model)


def resolve_data(path: str) -> Path:
    candidate = Path(path)
    if not candidate.exists() and not candidate.is_absolute():
        candidate = REPO / path
    return candidate


async def run(args: argparse.Namespace) -> None:
    data = json.loads(resolve_data(args.data).read_text())
    url = args.url or f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/locomo.db"
    await upgrade(url)
    embedder = make_embedder(args.embedder, args.model)
    results: dict[str, list[dict[int, float]]] = defaultdict(list)
    started = time.perf_counter()
    async with MemoryStore.open(url, embedder=embedder) as store:
        backend = store.engine.dialect.name
        plans: set[str] = set()
        for index, sample in enumerate(data):
            tenant = str(sample.get("sample_id") or f"conv-{index}")
            await store.forget(user_id=tenant)
            episodes = episodes_of(sample["conversation"], tenant)
            for start in range(0, len(episodes), 500):
                await store.remember_many(episodes[start : start + 500])
            for qa in sample["qa"]:
                evidence = {e for e in map(norm_id, qa.get("evidence") or []) if e}
                if not evidence:
                    continue
                found = await store.recall(qa["question"], user_id=tenant, limit=max(KS))
                plans.add(getattr(store.search, "last_plan", "") or "exact (numpy)")
                ranked = [e.metadata.get("dia_id") for e in found]
                category = str(qa.get("category"))
                results[category].append(
                    {k: len(evidence & set(ranked[:k])) / len(evidence) for k in KS}
                )
    elapsed = time.perf_counter() - started
    print(
        f"backend: {backend}   embedder: {embedder!r}   mode: hybrid recall "
        f"(dense + BM25, z-fusion, neighbour/session context) via store.recall"
    )
    print(
        f"dense plan(s) used: {', '.join(sorted(plans))}   data: {args.data}   time: {elapsed:.0f}s"
    )
    header = f"{'category':<12}{'n':>5}" + "".join(f"{'R@' + str(k):>8}" for k in KS)
    print(header)
    print("-" * len(header))

    def row(label: str, items: list[dict[int, float]]) -> None:
        if not items:
            return
        cells = "".join(f"{sum(i[k] for i in items) / len(items):>8.3f}" for k in KS)
        print(f"{label:<12}{len(items):>5}{cells}")

    main = [c for c in sorted(results) if c in {"1", "2", "3", "4"}]
    for category in main:
        row(category, results[category])
    row("1-4 overall", [i for c in main for i in results[c]])
    for category in sorted(set(results) - set(main)):
        row(f"{category} (sep.)", results[category])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=DEFAULT_DATA, help="LoCoMo-format JSON")
    parser.add_argument("--url", help="database URL (default: a temporary SQLite file)")
    parser.add_argument(
        "--embedder",
        choices=("minilm", "hashing"),
        default=None,
        help="default: minilm when memstore[embeddings] is installed",
    )
    parser.add_argument("--model", help="sentence-transformers model path or name")
    args = parser.parse_args()
    if args.embedder is None:
        try:
            import sentence_transformers  # noqa: F401

            args.embedder = "minilm"
        except ImportError:
            args.embedder = "hashing"
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
