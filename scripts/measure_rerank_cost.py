"""What the reranking stage costs per query, against recall without it, in the same run.

A MiniLM-sized cross-encoder: the bundled all-MiniLM-L6-v2 encoder (6 layers, 384
wide, the architecture of cross-encoder/ms-marco-MiniLM-L6-v2) with a fresh one-score
head, saved to a private temp dir and loaded through ``CrossEncoderReranker``. No
trained cross-encoder installs offline here, so this measures cost, not quality.
LoCoMo's questions are asked through ``store.recall`` alternately without and with
the stage (so load on the machine falls on both alike)::

    python scripts/measure_rerank_cost.py --conversations conv-26 --candidates 20 50
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from eval_locomo import DEFAULT_DATA, HALVES, ingest, load, tenant_of

from memstore import MemoryStore
from memstore.embeddings import SentenceTransformerEmbedder, bundled_minilm_path
from memstore.rerankers import CrossEncoderReranker
from memstore.schema.migrate import upgrade


def minilm_cross_encoder(directory: Path) -> Path:
    from transformers import AutoTokenizer, BertForSequenceClassification

    source = bundled_minilm_path()
    model = BertForSequenceClassification.from_pretrained(str(source), num_labels=1)
    model.save_pretrained(str(directory))
    AutoTokenizer.from_pretrained(str(source)).save_pretrained(str(directory))
    return directory


async def run(args: argparse.Namespace) -> None:
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    work = Path(tempfile.mkdtemp())
    try:
        await _measure(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def _measure(args: argparse.Namespace, work: Path) -> None:
    data = load(args.data, args.conversations)
    url = f"sqlite+aiosqlite:///{work}/rerank.db"
    await upgrade(url)
    embedder = SentenceTransformerEmbedder()
    reranker = CrossEncoderReranker(minilm_cross_encoder(work / "ce"), max_length=256)
    async with MemoryStore.open(url, embedder=embedder) as store:
        await ingest(store, data)
    questions = [
        (tenant_of(s, i), qa["question"])
        for i, s in enumerate(data)
        for qa in s["qa"]
        if qa.get("evidence")
    ][: args.questions]
    print(
        f"{len(questions)} questions, limit 10, model {reranker!r} (fresh head), "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    for n in args.candidates:
        async with MemoryStore.open(
            url, embedder=embedder, reranker=reranker, rerank_candidates=n
        ) as store:
            await store.recall("warm up", user_id=questions[0][0], limit=10)
            off: list[float] = []
            on: list[float] = []
            for tenant, question in questions:
                for rerank, times in ((False, off), (None, on)):
                    started = time.perf_counter()
                    await store.recall(question, user_id=tenant, limit=10, rerank=rerank)
                    times.append(time.perf_counter() - started)
        m_off, m_on = statistics.median(off), statistics.median(on)
        print(
            f"N={n:4d}  median per query: without {m_off * 1000:7.1f} ms   with "
            f"{m_on * 1000:7.1f} ms   stage {(m_on - m_off) * 1000:7.1f} ms   "
            f"ratio {m_on / m_off:5.2f}x   (means {statistics.mean(off) * 1000:.1f} / "
            f"{statistics.mean(on) * 1000:.1f} ms), load average {os.getloadavg()[0]:.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("data", nargs="?", default=DEFAULT_DATA)
    parser.add_argument("--conversations", nargs="+", default=list(HALVES["tune"][:1]))
    parser.add_argument("--candidates", nargs="+", type=int, default=[50])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument(
        "--threads", type=int, help="torch threads (on a loaded machine 1 is faster than 2)"
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
